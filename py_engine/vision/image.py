"""What every task does to the given image before its model: check it, make it a float32 batch of one, and fit it
into the model's square input; and the way back from the model's normalized coordinates to the image's pixels."""

from dataclasses import dataclass

import numpy as np

from ..errors import DTypeError, ShapeError
from ..ops.image import crop_and_resize, resize_bilinear
from ..ops.operands import tensor
from ..ops.shape import pad
from ..tensor import Tensor

_DTYPES = ("uint8", "int32", "float32")


def image_batch(image, task, int_pixels=False):
    """image (an [H, W, 3] tensor or numpy array, uint8, int32 or float32 in 0..255) as a float32 [1, H, W, 3]
    tensor of the current scope; with int_pixels an int32 tensor stays int32 (for the resizes, which take it as it
    is: one pass over the image fewer)."""
    dtype = str(image.dtype) if isinstance(image, Tensor | np.ndarray) else None
    if dtype not in _DTYPES:
        raise DTypeError(
            f"{task}: image must be a tensor or numpy array of dtype {', '.join(_DTYPES)} (pixels 0..255), "
            f"got {type(image).__name__}{'' if dtype is None else ' of dtype ' + dtype}"
        )
    if len(image.shape) != 3 or image.shape[2] != 3 or min(image.shape[:2]) == 0:
        raise ShapeError(
            f"{task}: image must have shape [height, width, 3] (RGB pixels), got {tuple(image.shape)}: drop an alpha "
            "channel with image[..., :3], stack a grey image three times"
        )
    if isinstance(image, np.ndarray):
        return tensor(np.asarray(image, np.float32)[None])
    return image.expand_dims(0) if int_pixels and image.dtype == "int32" else image.cast("float32").expand_dims(0)


@dataclass(frozen=True)
class Region:
    """The rectangle of the image, in pixels, that a model's input spans: the model's normalized coordinate (u, v)
    in 0..1 is pixel (x + u * width, y + v * height)."""

    x: float
    y: float
    width: float
    height: float

    def to_pixels(self, u, v):
        """Normalized coordinates (numbers or tensors) as pixels of the image."""
        return self.x + u * self.width, self.y + v * self.height


def square_around(x_min, y_min, x_max, y_max, scale):
    """The square Region centred on a box, its side the box's longer side times scale (the crops the second-stage
    models of faces and hands take, with room around the face or hand)."""
    side = max(x_max - x_min, y_max - y_min) * scale
    return Region((x_min + x_max - side) / 2, (y_min + y_max - side) / 2, side, side)


def crop_regions(images, regions, size, owners=None, flip=()):
    """[len(regions), size, size, 3]: each Region of images [N, H, W, 3] (of images[owners[k]], default the first)
    resized to size x size, bilinearly, black beyond the image; the regions whose places are in `flip` mirrored."""
    height, width = images.shape[1:3]
    boxes = []
    for k, r in enumerate(regions):
        left, right = r.x / width, (r.x + r.width) / width
        if k in flip:
            left, right = right, left  # crop_and_resize mirrors a box whose x1 > x2
        boxes.append([r.y / height, left, (r.y + r.height) / height, right])
    owners = [0] * len(regions) if owners is None else owners
    return crop_and_resize(images, tensor(boxes, "float32"), tensor(owners, "int32"), (size, size))


def letterbox(batch, size):
    """batch [1, H, W, 3] padded with black to a centred square and resized to size x size (bilinear, pixel
    centres kept): the model's input, and the Region of the image it spans (beyond the image where padded)."""
    height, width = batch.shape[1:3]
    side = max(height, width)
    top, left = (side - height) // 2, (side - width) // 2
    square = pad(batch, [(0, 0), (top, side - height - top), (left, side - width - left), (0, 0)])
    return resize_bilinear(square, (size, size), half_pixel_centers=True), Region(-left, -top, side, side)
