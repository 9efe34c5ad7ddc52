"""Helpers for the browser: turning what the page's canvas gives into tensors."""

import numpy as np

from . import dtypes
from .engine import ENGINE
from .errors import DTypeError, ShapeError


def from_pixels(data, height, width, channels=3):
    """RGBA uint8 pixels (bytes-like, length height*width*4, as from getImageData) as an int32 tensor
    [height, width, channels] (channels=3 drops alpha). The pixels are uploaded once, 4 bytes each."""
    for name, value in (("height", height), ("width", width)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TypeError(f"from_pixels: {name} must be a non-negative int, got {value!r}")
    if channels not in (1, 3, 4):
        raise ValueError(f"from_pixels: channels must be 1, 3 or 4, got {channels!r}")
    if hasattr(data, "to_py"):  # a Pyodide JsProxy of a typed array or ArrayBuffer
        data = data.to_py()
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise DTypeError(f"from_pixels: data must be bytes-like (RGBA uint8), got {type(data).__name__}") from None
    expected = height * width * 4
    if view.nbytes != expected:
        raise ShapeError(
            f"from_pixels: {view.nbytes} bytes cannot be RGBA pixels of shape ({height}, {width}); "
            f"expected {height}*{width}*4 = {expected}"
        )
    # Uploaded as they are, one int32 word per pixel: a third of the bytes of int32 channels, and no pass
    # over the pixels on the CPU. The unpacking runs where the tensor lives (on the GPU for webgpu).
    packed = ENGINE.from_numpy(np.frombuffer(view, np.int32).reshape(height, width), dtypes.int32)
    try:
        return unpack_pixels(packed, channels)
    finally:
        packed.dispose()


def unpack_pixels(packed, channels=3):
    """int32 words of RGBA bytes (R in the lowest byte, as little-endian memory holds them), any shape, as an
    int32 tensor with a last axis of `channels` (1: R, 3: RGB, 4: RGBA) of values 0..255."""
    if channels not in (1, 3, 4):
        raise ValueError(f"unpack_pixels: channels must be 1, 3 or 4, got {channels!r}")
    if packed.dtype != dtypes.int32:
        raise DTypeError(f"unpack_pixels: packed pixels must be int32 words, got {packed.dtype}")
    return ENGINE.run_kernel("UnpackRGBA", (packed,), {"channels": channels})


__all__ = ["from_pixels", "unpack_pixels"]


def post(name, data=None):
    """Send `data` (JSON-like: dicts, lists, numbers, strings) to the page's main thread as event `name`, right away,
    even while Python keeps running (a long fit reports progress this way). Only in the playground's worker."""
    try:
        import js
        from pyodide.ffi import to_js
    except ImportError:
        raise RuntimeError("pe.browser.post works in the playground page only (no page to post to here)") from None
    message = to_js({"event": "python", "name": str(name), "data": data}, dict_converter=js.Object.fromEntries)
    js.postMessage(message)


def training_progress(every="epoch"):
    """A fit callback that posts each epoch's logs and pe.memory() to the page as event "training" (see post).

    In the page, `playground.events("training")` lists them, and each is also a DOM event "playground:training".
    every="batch" posts after each batch too (fit then reads the loss back every batch).
    """
    from .train.callbacks import ProgressReporter

    return ProgressReporter(lambda message: post("training", message), every=every)
