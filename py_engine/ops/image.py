"""Image ops: resizing (NHWC, as TensorFlow) and non-max suppression (TF.js's, for object detectors)."""

__all__ = [
    "non_max_suppression",
    "non_max_suppression_padded",
    "non_max_suppression_with_score",
    "resize_bilinear",
    "resize_nearest",
]

import math
import numbers
import operator

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


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf")):
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
):
    """(selected_indices, valid_outputs): non_max_suppression's indices, padded with 0 to min(max_output_size,
    num_boxes) entries when pad_to_max_output_size, and how many of them were selected (an int32 scalar). As TF.js's
    tf.image.nonMaxSuppressionPadded (TensorFlow's NonMaxSuppressionV4); on the host after a readback on a GPU."""
    attrs = {"pad_to_max_output_size": bool(pad_to_max_output_size)}
    op = "non_max_suppression_padded"
    return _nms(op, "NonMaxSuppressionV4", boxes, scores, max_output_size, iou_threshold, score_threshold, attrs)


def non_max_suppression_with_score(
    boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), soft_nms_sigma=0.0
):
    """(selected_indices, selected_scores): with soft_nms_sigma > 0 (at most 1) this is soft-NMS, where an overlap
    below iou_threshold scales a box's score by exp(-0.5 * iou^2 / soft_nms_sigma) instead of ruling it out, and the
    box waits its turn with that score; selected_scores are the scores the boxes were selected with. As TF.js's
    tf.image.nonMaxSuppressionWithScore (TensorFlow's NonMaxSuppressionV5); on the host after a readback on a GPU."""
    op = "non_max_suppression_with_score"
    attrs = {"soft_nms_sigma": _number(op, "soft_nms_sigma", soft_nms_sigma, 0, 1)}
    return _nms(op, "NonMaxSuppressionV5", boxes, scores, max_output_size, iou_threshold, score_threshold, attrs)
