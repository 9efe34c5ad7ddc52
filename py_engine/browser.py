"""Helpers for the browser: turning what the page's canvas gives into tensors."""

import numpy as np

from . import dtypes
from .engine import ENGINE
from .errors import DTypeError, ShapeError


def from_pixels(data, height, width, channels=3):
    """RGBA uint8 pixels (bytes-like, length height*width*4, as from getImageData) as an int32 tensor
    [height, width, channels]; channels=3 drops alpha on the host so the upload happens once."""
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
    rgba = np.frombuffer(view, np.uint8).reshape(height, width, 4)
    return ENGINE.from_numpy(rgba[..., :channels].astype(np.int32), dtypes.int32)


__all__ = ["from_pixels"]
