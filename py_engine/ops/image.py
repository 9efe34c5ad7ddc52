"""Image resizing (NHWC, as TensorFlow), and its gradients with respect to the images."""

__all__ = ["resize_bilinear", "resize_nearest"]

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from .check import int_tuple, rank_is
from .convert import as_temporary, release
from .nn import batched


def _resize(op, kernel, images, size, align_corners, half_pixel_centers):
    if align_corners and half_pixel_centers:
        raise ValueError(f"{op}: align_corners and half_pixel_centers cannot both be True (as in TensorFlow)")
    size = int_tuple(op, size, 2, "size")
    temps = []
    try:
        images = as_temporary(images, op, temps)
        if images.dtype not in (dtypes.float32, dtypes.int32):
            raise DTypeError(f"{op}: images have dtype {images.dtype}, expected float32 or int32")
        rank_is(op, images, (3, 4), "images")
        if min(images.shape[-3:-1]) == 0:
            raise ShapeError(f"{op}: images of shape {images.shape} have no pixels to resize")
        # int images go in as they are: the kernel casts only the pixels it gathers; the result is float32
        attrs = {"size": size, "align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
        return batched(images, lambda batch: ENGINE.run_kernel(kernel, (batch,), attrs))
    finally:
        release(temps)


def resize_bilinear(images, size, align_corners=False, half_pixel_centers=False):
    """images [N, H, W, C] (or [H, W, C]) resized to size=(new_height, new_width) by bilinear interpolation.

    Matches TensorFlow: align_corners maps corner pixels onto corner pixels; half_pixel_centers samples
    at pixel centres (what tf.image.resize does). The result is float32.
    """
    return _resize("resize_bilinear", "ResizeBilinear", images, size, align_corners, half_pixel_centers)


def resize_nearest(images, size, align_corners=False, half_pixel_centers=False):
    """images resized to size=(new_height, new_width), each output pixel copying its nearest source pixel."""
    return _resize("resize_nearest", "ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers)
