"""Image ops: resizing (NHWC, as TensorFlow) and non-max suppression (TF.js's, for object detectors)."""

__all__ = [
    "crop_and_resize",
    "non_max_suppression",
    "non_max_suppression_padded",
    "non_max_suppression_with_score",
    "resize_bilinear",
    "resize_nearest",
    "transform",
]

import math
import numbers
import operator

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .check import int_tuple, rank_is
from .nn import batched
from .operands import as_temporary, release


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


def resize_bilinear(images, size, align_corners=False, half_pixel_centers=False) -> Tensor:
    """images [N, H, W, C] (or [H, W, C]) resized to size=(new_height, new_width) by bilinear interpolation.

    Matches TensorFlow: align_corners maps corner pixels onto corner pixels; half_pixel_centers samples
    at pixel centres (what tf.image.resize does). The result is float32.
    """
    return _resize("resize_bilinear", "ResizeBilinear", images, size, align_corners, half_pixel_centers)


def resize_nearest(images, size, align_corners=False, half_pixel_centers=False) -> Tensor:
    """images resized to size=(new_height, new_width), each output pixel copying its nearest source pixel."""
    return _resize("resize_nearest", "ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers)


def crop_and_resize(image, boxes, box_ind, crop_size, method="bilinear", extrapolation_value=0.0) -> Tensor:
    """[num_boxes, crop_height, crop_width, C] float32: each box [y1, x1, y2, x2] (0..1 spans the image; y1 > y2
    flips it) of image[box_ind] [N, H, W, C] sampled at crop_size = (crop_height, crop_width) points, bilinearly or
    at the nearest pixel, as TF.js's tf.image.cropAndResize (TensorFlow's CropAndResize). Points outside the image
    get extrapolation_value; a box_ind outside 0..N-1 gives zeros. Not differentiable (as in TF.js). Positions are
    float64 on numpy (as TF.js's CPU backend) and float32 on a GPU (as TF.js's GPU backends), where a nearest pick
    exactly halfway between two pixels may go the other way."""
    op = "crop_and_resize"
    crop_size = int_tuple(op, crop_size, 2, "crop_size")
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"{op}: method must be 'bilinear' or 'nearest', got {method!r}")
    attrs = {"crop_size": crop_size, "method": method}
    attrs["extrapolation_value"] = _number(op, "extrapolation_value", extrapolation_value)
    temps = []
    try:
        image = as_temporary(image, op, temps, dtypes.float32)
        boxes = as_temporary(boxes, op, temps, dtypes.float32)
        box_ind = as_temporary(box_ind, op, temps)
        rank_is(op, image, 4, "image")
        if min(image.shape[1:3]) == 0:
            raise ShapeError(f"{op}: images of shape {image.shape} have no pixels to crop")
        if boxes.rank != 2 or boxes.shape[1] != 4:
            raise ShapeError(f"{op}: boxes must have shape [num_boxes, 4] (y1, x1, y2, x2), got {boxes.shape}")
        if box_ind.dtype != dtypes.int32 or box_ind.shape != boxes.shape[:1]:
            raise ShapeError(
                f"{op}: box_ind must be int32 of shape [num_boxes] = {boxes.shape[:1]}, got {box_ind.dtype} "
                f"{box_ind.shape}"
            )
        return ENGINE.run_kernel("CropAndResize", (image, boxes, box_ind), attrs)
    finally:
        release(temps)


def transform(
    image, transforms, interpolation="nearest", fill_mode="constant", fill_value=0, output_shape=None
) -> Tensor:
    """Projective transforms of images [N, H, W, C], as TF.js's tf.image.transform (TensorFlow's
    ImageProjectiveTransformV3): output pixel (x, y) of image b reads the input at ((a0 x + a1 y + a2) / k,
    (a3 x + a4 y + a5) / k), k = a6 x + a7 y + 1, where transforms [N, 8] (or [1, 8] for all) holds a0..a7.

    interpolation "nearest" or "bilinear"; fill_mode "constant" (fill_value), "reflect", "wrap" or "nearest" for
    points outside; output_shape (height, width), default the input's. The result has the image's dtype (an int32
    image's bilinear values are truncated). TF.js's CPU backend transforms only the first image (a bug not
    followed). Not differentiable. Positions are float64 on numpy, float32 on a GPU (as TF.js's GPU backends)."""
    op = "transform"
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"{op}: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}")
    if fill_mode not in ("constant", "reflect", "wrap", "nearest"):
        raise ValueError(f"{op}: fill_mode must be 'constant', 'reflect', 'wrap' or 'nearest', got {fill_mode!r}")
    attrs = {"interpolation": interpolation, "fill_mode": fill_mode}
    attrs["fill_value"] = _number(op, "fill_value", fill_value)
    temps = []
    try:
        image = as_temporary(image, op, temps)
        transforms = as_temporary(transforms, op, temps, dtypes.float32)
        if image.dtype not in (dtypes.float32, dtypes.int32):
            raise DTypeError(f"{op}: image has dtype {image.dtype}, expected float32 or int32")
        rank_is(op, image, 4, "image")
        if min(image.shape[1:3]) == 0:
            raise ShapeError(f"{op}: images of shape {image.shape} have no pixels to transform")
        if transforms.rank != 2 or transforms.shape[1] != 8 or transforms.shape[0] not in (1, image.shape[0]):
            raise ShapeError(f"{op}: transforms must be [1, 8] or [{image.shape[0]}, 8], got {transforms.shape}")
        attrs["output_shape"] = (
            image.shape[1:3] if output_shape is None else int_tuple(op, output_shape, 2, "output_shape")
        )
        return ENGINE.run_kernel("Transform", (image, transforms), attrs)
    finally:
        release(temps)


def _number(op, name, value, low=-math.inf, high=math.inf):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or math.isnan(value):
        raise TypeError(f"{op}: {name} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{op}: {name} must be in [{low}, {high}], got {value}")
    return float(value)


def _nms(op, kernel, boxes, scores, max_output_size, iou_threshold, score_threshold, attrs):
    """Check non-max suppression's arguments as TF.js does, then run `kernel` on float32 boxes and scores."""
    try:
        max_output_size = operator.index(max_output_size)
    except TypeError:
        raise TypeError(f"{op}: max_output_size must be an int, got {max_output_size!r}") from None
    if max_output_size < 0:
        raise ValueError(f"{op}: max_output_size must be >= 0, got {max_output_size}")
    attrs["iou_threshold"] = _number(op, "iou_threshold", iou_threshold, 0, 1)
    attrs["score_threshold"] = _number(op, "score_threshold", score_threshold)
    temps = []
    try:
        boxes = as_temporary(boxes, op, temps, dtypes.float32)
        scores = as_temporary(scores, op, temps, dtypes.float32)
        if boxes.rank != 2 or boxes.shape[1] != 4:
            raise ShapeError(f"{op}: boxes must have shape [num_boxes, 4] (y1, x1, y2, x2), got {boxes.shape}")
        if scores.shape != boxes.shape[:1]:
            raise ShapeError(f"{op}: scores must have shape [num_boxes] = {boxes.shape[:1]}, got {scores.shape}")
        attrs["max_output_size"] = min(max_output_size, boxes.shape[0])  # as TF.js, which pads to that length
        return ENGINE.run_kernel(kernel, (boxes, scores), attrs)
    finally:
        release(temps)


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf")) -> Tensor:
    """The indices (int32, best first) of at most max_output_size boxes, chosen greedily by score, each overlapping
    every box chosen before it by an IoU below iou_threshold; boxes scoring score_threshold or less are never chosen.

    boxes: [num_boxes, 4] as [y1, x1, y2, x2], either corner first; scores: [num_boxes]. As TF.js's
    tf.image.nonMaxSuppression (TensorFlow's NonMaxSuppressionV3), result for result. The result's length depends on
    the values, so a GPU backend reads boxes and scores back and selects on the host (two readbacks), as TF.js does.
    """
    op = "non_max_suppression"
    return _nms(op, "NonMaxSuppressionV3", boxes, scores, max_output_size, iou_threshold, score_threshold, {})


def non_max_suppression_padded(
    boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), pad_to_max_output_size=False
) -> tuple[Tensor, Tensor]:
    """(selected_indices, valid_outputs): non_max_suppression's indices, padded with 0 to min(max_output_size,
    num_boxes) entries when pad_to_max_output_size, and how many of them were selected (an int32 scalar). As TF.js's
    tf.image.nonMaxSuppressionPadded (TensorFlow's NonMaxSuppressionV4); on the host after a readback on a GPU."""
    attrs = {"pad_to_max_output_size": bool(pad_to_max_output_size)}
    op = "non_max_suppression_padded"
    return _nms(op, "NonMaxSuppressionV4", boxes, scores, max_output_size, iou_threshold, score_threshold, attrs)


def non_max_suppression_with_score(
    boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), soft_nms_sigma=0.0
) -> tuple[Tensor, Tensor]:
    """(selected_indices, selected_scores): with soft_nms_sigma > 0 (at most 1) this is soft-NMS, where an overlap
    below iou_threshold scales a box's score by exp(-0.5 * iou^2 / soft_nms_sigma) instead of ruling it out, and the
    box waits its turn with that score; selected_scores are the scores the boxes were selected with. As TF.js's
    tf.image.nonMaxSuppressionWithScore (TensorFlow's NonMaxSuppressionV5); on the host after a readback on a GPU."""
    op = "non_max_suppression_with_score"
    attrs = {"soft_nms_sigma": _number(op, "soft_nms_sigma", soft_nms_sigma, 0, 1)}
    return _nms(op, "NonMaxSuppressionV5", boxes, scores, max_output_size, iou_threshold, score_threshold, attrs)
