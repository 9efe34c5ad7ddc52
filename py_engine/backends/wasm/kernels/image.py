"""Bilinear resizing and crops on the module (kernels/image.c): ResizeBilinear (float32 or int32 images, every
align_corners / half_pixel_centers variant) and CropAndResize (bilinear and nearest), numpy's results bit for bit.

The rest of the family (the resizes' gradients, ResizeNearestNeighbor, Transform, non-max suppression, UnpackRGBA)
runs the numpy backend's kernels: they are not where a vision task's time goes.
"""

import numpy as np

from ....kernel_registry import register_kernel
from .. import native
from ..native import F32, I32, address


def _resize_bilinear(images, size, align_corners, half_pixel_centers):
    n, h, w, c = images.shape
    oh, ow = size
    is_int = images.dtype == I32
    images = np.ascontiguousarray(images) if is_int else native.f32(images)
    out = native.out((n, oh, ow, c))
    scratch = native.out(3 * ow + 2 * ow * c)  # x's pixels and weights, two rows interpolated along x
    native.exports.resize_bilinear(
        address(images, images.size, I32 if is_int else F32), int(is_int), n, h, w, c, oh, ow,
        int(align_corners), int(half_pixel_centers), address(scratch, scratch.size), address(out, out.size),
    )  # fmt: skip
    return out


def _crop_and_resize(image, boxes, box_ind, crop_size, method, extrapolation_value):
    n, h, w, c = image.shape
    image, boxes, box_ind = native.f32(image), native.f32(boxes), np.ascontiguousarray(box_ind, I32)
    count = boxes.shape[0]
    out = native.out((count, *crop_size, c))
    native.exports.crop_and_resize(
        address(image, image.size), n, h, w, c, address(boxes, 4 * count), address(box_ind, count, I32), count,
        *crop_size, int(method == "nearest"), float(extrapolation_value), address(out, out.size),
    )  # fmt: skip
    return out


register_kernel("ResizeBilinear", "wasm", _resize_bilinear)
register_kernel("CropAndResize", "wasm", _crop_and_resize)
