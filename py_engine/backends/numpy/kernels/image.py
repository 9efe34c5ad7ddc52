"""Image kernels on numpy: resizing, matching TensorFlow's ResizeBilinear and ResizeNearestNeighbor; CropAndResize and
Transform (projective) and non-max suppression, matching TF.js's (their positions in float64, as its JavaScript
computes them).

Resizing: coordinates are computed in float32, as TensorFlow does, so that floor/round fall the same way. Both
resizes are separable: the forward pass gathers source pixels (no dense interpolation matrices), the
backward pass sums dy back along one axis at a time.

Non-max suppression is TF.js's greedy algorithm in float64, as its JavaScript computes: the highest-scoring candidate
is taken unless its IoU with a box already taken reaches iou_threshold; with soft_nms_sigma > 0 each overlap scales
its score by exp(-0.5 / sigma * iou^2) instead, and it goes back among the candidates. Its output's length depends on
the values, so the GPU backend runs these kernels on the host (backends/webgpu/host_kernel.py).
"""

import heapq
import math

import numpy as np

from ....kernel_registry import register_kernel


def _scale(n_in, n_out, align_corners):
    if align_corners and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def _bilinear_axis(n_in, n_out, align_corners, half_pixel_centers):
    """(lower, upper, lerp) for each output index along one axis."""
    scale = _scale(n_in, n_out, align_corners)
    dst = np.arange(n_out, dtype=np.float32)
    src = (dst + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else dst * scale
    floor = np.floor(src)
    lower = np.clip(floor, 0, n_in - 1).astype(np.intp)  # TF clamps only below; the cap guards float rounding
    upper = np.minimum(np.ceil(src), n_in - 1).astype(np.intp)
    return lower, upper, src - floor


def _nearest_axis(n_in, n_out, align_corners, half_pixel_centers):
    scale = _scale(n_in, n_out, align_corners)
    dst = np.arange(n_out, dtype=np.float32)
    src = (dst + np.float32(0.5)) * scale if half_pixel_centers else dst * scale
    index = np.floor(src)
    if align_corners:
        index += src - index >= 0.5  # roundf: halves go up (src >= 0), unlike numpy's half-to-even
    return np.minimum(index, n_in - 1).astype(np.intp)


def _scatter(size, axis, *parts):
    """Sum (index, values) pairs into `size` slots along `axis`: out[.., index[k], ..] += values[.., k, ..].

    Resize indices never decrease, so equal ones are neighbours and np.add.reduceat sums each run.
    """
    shape = list(parts[0][1].shape)
    shape[axis] = size
    out = np.zeros(shape, np.float32)
    for index, values in parts:
        slots, starts = np.unique(index, return_index=True)
        out[(slice(None),) * axis + (slots,)] += np.add.reduceat(values, starts, axis=axis)
    return out


def _resize_bilinear(images, size, align_corners, half_pixel_centers):
    _, h, w, _ = images.shape
    y0, y1, y_lerp = _bilinear_axis(h, size[0], align_corners, half_pixel_centers)
    x0, x1, x_lerp = _bilinear_axis(w, size[1], align_corners, half_pixel_centers)

    if h > 2 * size[0]:  # a strong downscale: interpolate along x only in the rows the output reads
        rows = np.union1d(y0, y1)
        images, y0, y1 = images[:, rows], np.searchsorted(rows, y0), np.searchsorted(rows, y1)
    # along x in every row, then along y between the rows: the same arithmetic as lerping the four corners per
    # output pixel, with the x pass done once per input row rather than twice per output row
    left = images[:, :, x0].astype(np.float32, copy=False)  # int images are cast after the gather
    across = left + (images[:, :, x1].astype(np.float32, copy=False) - left) * x_lerp[:, None]
    top = across[:, y0]
    return top + (across[:, y1] - top) * y_lerp[:, None, None]


def _resize_bilinear_grad(dy, size, align_corners, half_pixel_centers, input_shape):
    _, h, w, _ = input_shape
    y0, y1, y_lerp = _bilinear_axis(h, size[0], align_corners, half_pixel_centers)
    x0, x1, x_lerp = _bilinear_axis(w, size[1], align_corners, half_pixel_centers)
    x_lerp, y_lerp = x_lerp[:, None], y_lerp[:, None, None]
    rows = _scatter(w, 2, (x0, dy * (1 - x_lerp)), (x1, dy * x_lerp))  # [N, OH, W, C]
    return _scatter(h, 1, (y0, rows * (1 - y_lerp)), (y1, rows * y_lerp))


def _resize_nearest(images, size, align_corners, half_pixel_centers):
    _, h, w, _ = images.shape
    ys = _nearest_axis(h, size[0], align_corners, half_pixel_centers)
    xs = _nearest_axis(w, size[1], align_corners, half_pixel_centers)
    return images[:, ys[:, None], xs].astype(np.float32, copy=False)


def _resize_nearest_grad(dy, size, align_corners, half_pixel_centers, input_shape):
    _, h, w, _ = input_shape
    ys = _nearest_axis(h, size[0], align_corners, half_pixel_centers)
    xs = _nearest_axis(w, size[1], align_corners, half_pixel_centers)
    return _scatter(h, 1, (ys, _scatter(w, 2, (xs, dy))))


def _unpack_rgba(packed, channels):
    """int32 words of RGBA bytes, R in the lowest byte -> int32 [..., channels]."""
    rgba = np.ascontiguousarray(packed, "<i4").view(np.uint8).reshape(*packed.shape, 4)
    return rgba[..., :channels].astype(np.int32)


def _crop_axis(low, high, n_in, n_out):
    """TF.js's sampling positions along one axis for every box (float64, as its JavaScript): [boxes, n_out]."""
    if n_out > 1:
        scale = (high - low) * (n_in - 1) / (n_out - 1)
        return low[:, None] * (n_in - 1) + np.arange(n_out) * scale[:, None]
    return np.repeat((0.5 * (low + high) * (n_in - 1))[:, None], n_out, 1)


def _crop_and_resize(image, boxes, box_ind, crop_size, method, extrapolation_value):
    """Each box [y1, x1, y2, x2] (normalized to 0..1) of image[box_ind] sampled at crop_size points, as TF.js's
    CropAndResize: positions outside the image get extrapolation_value, a box_ind outside the batch gives zeros."""
    batch, h, w = image.shape[:3]
    if batch == 0:  # every box_ind is outside the batch
        return np.zeros((boxes.shape[0], *crop_size, image.shape[3]), np.float32)
    b = boxes.astype(np.float64)
    ys, xs = _crop_axis(b[:, 0], b[:, 2], h, crop_size[0]), _crop_axis(b[:, 1], b[:, 3], w, crop_size[1])
    inside = ((ys >= 0) & (ys <= h - 1))[:, :, None] & ((xs >= 0) & (xs <= w - 1))[:, None, :]
    rows = np.clip(box_ind, 0, batch - 1)[:, None, None]

    def at(y, x):  # [boxes, crop_h, crop_w, c] pixels at integer positions, clipped into the image
        y, x = np.clip(y, 0, h - 1).astype(np.intp), np.clip(x, 0, w - 1).astype(np.intp)
        return image[rows, y[:, :, None], x[:, None, :]].astype(np.float64)

    if method == "bilinear":
        top_y, left_x = np.floor(ys), np.floor(xs)
        y_lerp, x_lerp = (ys - top_y)[:, :, None, None], (xs - left_x)[:, None, :, None]
        top_left, top_right = at(top_y, left_x), at(top_y, np.ceil(xs))
        bottom_left, bottom_right = at(np.ceil(ys), left_x), at(np.ceil(ys), np.ceil(xs))
        top = top_left + (top_right - top_left) * x_lerp
        bottom = bottom_left + (bottom_right - bottom_left) * x_lerp
        out = top + (bottom - top) * y_lerp
    else:  # JavaScript's Math.round: halves up
        out = at(np.floor(ys + 0.5), np.floor(xs + 0.5))
    out = np.where(inside[..., None], out, extrapolation_value)
    out[(box_ind < 0) | (box_ind >= batch)] = 0
    return out.astype(np.float32)


def _map_coordinate(p, n, fill_mode):
    """A source coordinate past the image's edge mapped back in (reflect, wrap, nearest) or left (constant), as
    TF.js's Transform does it in JavaScript (float64)."""
    if fill_mode == "constant":
        return p
    if fill_mode == "nearest" or n <= 1:
        return np.clip(p, 0, n - 1) if fill_mode == "nearest" else np.where((p < 0) | (p > n - 1), 0.0, p)
    if fill_mode == "reflect":
        span = 2 * n
        low = np.where(p < span, span * np.trunc(-p / span) + p, p)
        low = np.where(low < -n, low + span, -low - 1)
        high = p - span * np.trunc(p / span)
        high = np.where(high >= n, span - high - 1, high)
        p = np.where(p < 0, low, np.where(p > n - 1, high, p))
    else:  # wrap
        last = n - 1
        p = np.where(p < 0, p + n * (np.trunc(-p / last) + 1), np.where(p > last, p - n * np.trunc(p / last), p))
    return np.clip(p, 0, n - 1)


def _transform(image, transforms, interpolation, fill_mode, fill_value, output_shape):
    """Each output pixel (x, y) of image b reads the input at ((a0 x + a1 y + a2) / k, (a3 x + a4 y + a5) / k),
    k = a6 x + a7 y + 1, for transforms[b] (or transforms[0] for all) = a0..a7, as TF.js's Transform (which, on its
    CPU backend, transforms only the first image)."""
    batch, h, w, _ = image.shape
    out = np.full((batch, *output_shape, image.shape[3]), fill_value, np.float64)
    ys, xs = np.mgrid[0 : output_shape[0], 0 : output_shape[1]].astype(np.float64)
    for b in range(batch):
        a = transforms[0 if transforms.shape[0] == 1 else b].astype(np.float64)
        k = a[6] * xs + a[7] * ys + 1
        x = _map_coordinate((a[0] * xs + a[1] * ys + a[2]) / k, w, fill_mode)
        y = _map_coordinate((a[3] * xs + a[4] * ys + a[5]) / k, h, fill_mode)

        def read(yi, xi, b=b):  # fill_value outside the image
            inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
            yi, xi = np.where(inside, yi, 0).astype(np.intp), np.where(inside, xi, 0).astype(np.intp)
            return np.where(inside[..., None], image[b, yi, xi].astype(np.float64), fill_value)

        if interpolation == "nearest":  # JavaScript's Math.round: halves up
            value = read(np.floor(y + 0.5), np.floor(x + 0.5))
        else:
            y0, x0 = np.floor(y), np.floor(x)
            y1, x1 = y0 + 1, x0 + 1
            top = (x1 - x)[..., None] * read(y0, x0) + (x - x0)[..., None] * read(y0, x1)
            bottom = (x1 - x)[..., None] * read(y1, x0) + (x - x0)[..., None] * read(y1, x1)
            value = (y1 - y)[..., None] * top + (y - y0)[..., None] * bottom
        out[b] = np.where((k != 0)[..., None], value, fill_value)
    return out.astype(image.dtype)


def _non_max_suppression(boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma):
    """(selected box indices, their scores) as Python lists; boxes are [y1, x1, y2, x2] with the corners either way
    round."""
    b = boxes.astype(np.float64)
    low, high = np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])
    area = (high[:, 0] - low[:, 0]) * (high[:, 1] - low[:, 1])
    scale = -0.5 / soft_nms_sigma if soft_nms_sigma > 0 else 0.0
    # a heap of (-score, box index, first selected box not yet compared): the best score first, ties to the lower index
    candidates = [(-s, i, 0) for i, s in enumerate(scores.astype(np.float64).tolist()) if s > score_threshold]
    heapq.heapify(candidates)
    selected, selected_scores = [], []
    while len(selected) < max_output_size and candidates:
        negative, i, begin = heapq.heappop(candidates)
        original = score = -negative
        if original < score_threshold:
            break
        ignored = False
        for iou in _ious(low, high, area, i, selected[begin:][::-1]):  # the latest selections first
            if iou >= iou_threshold:
                ignored = True
                break
            score *= math.exp(scale * iou * iou) if iou <= iou_threshold else 0.0  # NaN (a NaN box) zeroes it
            if score <= score_threshold:
                break
        if ignored:
            continue
        if score == original:
            selected.append(i)
            selected_scores.append(score)
        elif score > score_threshold:  # softened but still in the running: compared again with the newer picks only
            heapq.heappush(candidates, (-score, i, len(selected)))
    return selected, selected_scores


def _ious(low, high, area, i, others):
    """IoU of box i with each box in `others` (a list of indices), as TF.js computes it: 0 where an area is <= 0."""
    if not others:
        return []
    j = np.array(others)
    extent = np.maximum(np.minimum(high[i], high[j]) - np.maximum(low[i], low[j]), 0.0)
    inter = extent[:, 0] * extent[:, 1]
    iou = inter / (area[i] + area[j] - inter)
    return np.where((area[i] <= 0) | (area[j] <= 0), 0.0, iou).tolist()


def _nms_v3(boxes, scores, max_output_size, iou_threshold, score_threshold):
    selected, _ = _non_max_suppression(boxes, scores, max_output_size, iou_threshold, score_threshold, 0.0)
    return np.array(selected, np.int32)


def _nms_v4(boxes, scores, max_output_size, iou_threshold, score_threshold, pad_to_max_output_size):
    """(indices, how many are valid): padded with 0 to max_output_size when asked."""
    selected, _ = _non_max_suppression(boxes, scores, max_output_size, iou_threshold, score_threshold, 0.0)
    valid = len(selected)
    if pad_to_max_output_size:
        selected += [0] * (max_output_size - valid)
    return np.array(selected, np.int32), np.array(valid, np.int32)


def _nms_v5(boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma):
    """(indices, their scores, softened where soft_nms_sigma > 0)."""
    selected, kept = _non_max_suppression(
        boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma
    )
    return np.array(selected, np.int32), np.array(kept, np.float32)


register_kernel("UnpackRGBA", "numpy", _unpack_rgba)
register_kernel("ResizeBilinear", "numpy", _resize_bilinear)
register_kernel("ResizeBilinearGrad", "numpy", _resize_bilinear_grad)
register_kernel("ResizeNearestNeighbor", "numpy", _resize_nearest)
register_kernel("ResizeNearestNeighborGrad", "numpy", _resize_nearest_grad)
register_kernel("CropAndResize", "numpy", _crop_and_resize)
register_kernel("Transform", "numpy", _transform)
register_kernel("NonMaxSuppressionV3", "numpy", _nms_v3)
register_kernel("NonMaxSuppressionV4", "numpy", _nms_v4)
register_kernel("NonMaxSuppressionV5", "numpy", _nms_v5)
