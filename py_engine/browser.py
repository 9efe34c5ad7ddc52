"""Helpers for the browser: turning what the page's canvas gives into tensors, and talking to the page.

In the playground's worker only (elsewhere they raise RuntimeError):

- post(name, data): send JSON-like data to the page as event `name` at once, even while Python keeps running;
  the page lists them in `playground.events(name)` and fires the DOM event "playground:<name>".
- training_progress(every="epoch"|"batch"): a fit callback posting "training" events; the page charts them live
  (loss and metrics per epoch, per batch with every="batch", tensors and GPU bytes per epoch).
- plot(y), plot(x, y), plot({"name": y, ...}), plot(x, {"name": y, ...}), with title= and x_label=: a line chart
  in the page's Charts panel (event "plot"). Values are lists, numpy arrays or 1-D tensors (a tensor is read back
  synchronously: pass `await t.data()` to keep the event loop free); NaN and infinities leave gaps.
- show_image(image, boxes=, points=, lines=, title=, key=): an image in the page's Output with boxes (labelled),
  points and lines drawn over it (event "image"); pe.vision's results draw as they are (boxes with label and score,
  keypoints); a later image with the same key replaces it (a live view).
- await fetch_image(url): a photo (same-origin URL, such as "samples/astronaut.png") decoded by the browser, as an
  int32 tensor [height, width, 3].
- await camera_frame(): the webcam's current frame as an int32 tensor [height, width, 3] (the page opens the camera
  at the first call and closes it when the run ends).
"""

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
    # py_engine.train loads on first use: the page's first op unpacks pixels with this module at boot
    from .train.callbacks import ProgressReporter

    return ProgressReporter(lambda message: post("training", message), every=every)


MAX_PLOT_POINTS = 100_000  # per series: the page draws every point


def _plot_values(name, values):
    if hasattr(values, "numpy") and hasattr(values, "shape"):  # a Tensor
        values = values.numpy()
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"plot: {name} must be numbers (a list, numpy array or tensor), got {type(values).__name__}"
        ) from None
    if array.ndim != 1:
        raise ShapeError(f"plot: {name} must be 1-D, got shape {array.shape}; flatten it or plot its rows as series")
    if array.size > MAX_PLOT_POINTS:
        raise ValueError(f"plot: {name} has {array.size} points, more than {MAX_PLOT_POINTS}; plot every n-th one")
    return [float(v) if np.isfinite(v) else None for v in array]


def plot_message(a, b=None, *, title="Plot", x_label="x"):
    """What plot() posts: {"title", "x_label", "x": [...], "series": {name: [...]}} (None for NaN/inf)."""
    x, ys = (None, a) if b is None else (a, b)
    if not isinstance(ys, dict):
        ys = {"y": ys}
    if not ys:
        raise ValueError("plot: no series to plot (an empty dict)")
    series = {str(name): _plot_values(f"series {name!r}", values) for name, values in ys.items()}
    lengths = {name: len(values) for name, values in series.items()}
    n = max(lengths.values())
    x = list(range(n)) if x is None else _plot_values("x", x)
    if any(length != len(x) for length in lengths.values()):
        raise ShapeError(f"plot: every series needs one value per x ({len(x)} x values), got lengths {lengths}")
    return {"title": str(title), "x_label": str(x_label), "x": x, "series": series}


def plot(a, b=None, *, title="Plot", x_label="x"):
    """Draw a line chart in the page's Charts panel: plot(y), plot(x, y), plot({"loss": ys, ...}) or
    plot(x, {"loss": ys, ...}). The page keeps every plot in `playground.charts().plots`."""
    post("plot", plot_message(a, b, title=title, x_label=x_label))


MAX_IMAGE_PIXELS = 4096 * 4096  # what show_image sends the page: 64 MB of RGBA at most


def _xy(point, what):
    if hasattr(point, "x") and hasattr(point, "y"):  # a pe.vision Keypoint
        return [float(point.x), float(point.y)]
    try:
        x, y = point[:2] if isinstance(point, (list, tuple, np.ndarray)) else (point["x"], point["y"])
        return [float(x), float(y)]
    except (TypeError, KeyError, ValueError, IndexError):
        raise TypeError(f"show_image: {what} must be (x, y) or have x and y, got {point!r}") from None


def _box(item):
    """[x_min, y_min, x_max, y_max] or {x_min, ...} (with "label"), or a pe.vision result (its box, label and score)."""
    if hasattr(item, "to_dict"):
        item = item.to_dict()
    if isinstance(item, dict) and "box" in item:
        name = item.get("label") or ("face" if "landmarks" in item else None)
        score = item.get("score")
        label = " ".join(p for p in (name, None if score is None else f"{score:.0%}") if p)
        item = {**item["box"], "label": label or None}
    if isinstance(item, dict):
        try:
            corners = [float(item[k]) for k in ("x_min", "y_min", "x_max", "y_max")]
        except (KeyError, TypeError, ValueError):
            raise TypeError(f"show_image: a box needs numbers x_min, y_min, x_max, y_max, got {item!r}") from None
        label = item.get("label")
    else:
        try:
            corners, label = [float(v) for v in item], None
        except (TypeError, ValueError):
            raise TypeError(f"show_image: a box is [x_min, y_min, x_max, y_max], got {item!r}") from None
        if len(corners) != 4:
            raise ShapeError(f"show_image: a box is [x_min, y_min, x_max, y_max], got {len(corners)} numbers")
    return {**dict(zip(("x_min", "y_min", "x_max", "y_max"), corners)), "label": None if label is None else str(label)}


def _points(points):
    """(x, y) pairs, Keypoints, or pe.vision results whose keypoints / landmarks are drawn."""
    flat = []
    for p in points:
        marks = getattr(p, "keypoints", None) or getattr(p, "landmarks", None)
        if marks is not None:
            # keypoints the model is unsure of are left out; those without a score (face landmarks) are drawn
            flat.extend(_xy(m, "a keypoint") for m in marks if getattr(m, "score", None) is None or m.score >= 0.3)
        else:
            flat.append(_xy(p, "a point"))
    return flat


def image_message(image, boxes=(), points=(), lines=(), title="Image", key=None):
    """What show_image() posts: {"title", "key", "width", "height", "rgba": bytes, "boxes", "points", "lines"}."""
    if hasattr(image, "numpy") and hasattr(image, "shape"):  # a Tensor
        image = image.numpy()
    array = np.asarray(image)
    if array.ndim == 2:
        array = array[..., None]
    if array.ndim != 3 or array.shape[-1] not in (1, 3, 4):
        raise ShapeError(f"show_image: the image must be [height, width, 1, 3 or 4 channels], got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        raise DTypeError(f"show_image: the image must hold numbers, got dtype {array.dtype}")
    height, width = array.shape[:2]
    if height * width > MAX_IMAGE_PIXELS:
        raise ValueError(f"show_image: {width}x{height} pixels is more than {MAX_IMAGE_PIXELS}; resize it first")
    if array.dtype.kind == "f" and array.size and float(np.nanmax(array)) <= 1.0:
        array = array * 255.0  # floats in 0..1
    pixels = np.clip(np.nan_to_num(array.astype(np.float64)), 0, 255).astype(np.uint8)
    if pixels.shape[-1] == 1:
        pixels = np.repeat(pixels, 3, axis=-1)
    if pixels.shape[-1] == 3:
        pixels = np.concatenate([pixels, np.full((height, width, 1), 255, np.uint8)], axis=-1)
    return {
        "title": str(title),
        "key": None if key is None else str(key),
        "width": int(width),
        "height": int(height),
        "rgba": pixels.tobytes(),
        "boxes": [_box(b) for b in boxes],
        "points": _points(points),
        "lines": [[_xy(a, "a line's end"), _xy(b, "a line's end")] for a, b in lines],
    }


def show_image(image, boxes=(), points=(), lines=(), title="Image", key=None):
    """Show `image` (a tensor or numpy array [height, width, channels] of 0..255, or floats in 0..1) in the page's
    Output, with boxes (labelled), points and lines drawn over it in its pixel coordinates; pe.vision's results can
    be passed as they are: boxes=objects (or faces), points=poses (their keypoints). An image with the `key` of one
    shown before in the same run takes its place. A tensor is read back synchronously (on webgpu, pass
    `await t.data()` reshaped instead). Only in the playground's worker."""
    post("image", image_message(image, boxes, points, lines, title=title, key=key))


async def fetch_image(url):
    """The image at `url` (the page's own files, such as "samples/astronaut.png", or a data: URL), decoded by the
    browser, as an int32 tensor [height, width, 3] of 0..255. Only in the playground's worker."""
    try:
        import js
        from pyodide.ffi import JsException
    except ImportError:
        raise RuntimeError("pe.browser.fetch_image works in the playground page only") from None
    try:
        response = await js.fetch(str(url))
        if not response.ok:
            raise RuntimeError(f"fetch_image: {url}: HTTP {response.status}; check the address")
        bitmap = await js.createImageBitmap(await response.blob())
    except JsException as e:
        raise RuntimeError(f"fetch_image: {url} is not an image the browser can decode ({e.message})") from None
    width, height = int(bitmap.width), int(bitmap.height)
    context = js.OffscreenCanvas.new(width, height).getContext("2d")
    context.drawImage(bitmap, 0, 0)
    pixels = context.getImageData(0, 0, width, height).data
    bitmap.close()
    return from_pixels(pixels, height, width)


async def camera_frame(max_side=640):
    """The webcam's current frame as an int32 tensor [height, width, 3], shrunk until its long side is at most
    `max_side`. The page opens the camera at the first call (the browser asks the user once) and closes it when the
    run ends. Only in the playground's worker."""
    try:
        import js
        from pyodide.ffi import JsException, to_js
    except ImportError:
        raise RuntimeError("pe.browser.camera_frame works in the playground page only (no camera here)") from None
    try:
        frame = await js.peAsk("camera-frame", to_js({"max_side": int(max_side)}, dict_converter=js.Object.fromEntries))
    except JsException as e:
        raise RuntimeError(f"camera_frame: {e.message}") from None
    return from_pixels(frame.pixels, int(frame.height), int(frame.width))
