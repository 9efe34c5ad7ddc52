"""Convolution and pooling kernels on numpy: NHWC images, HWIO filters, explicit (already resolved) padding.

Every kernel gets `pad` as ((top, bottom), (left, right)); the op has turned "same"/"valid" into numbers.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ....kernel_registry import register_kernel
from ....window_output_size import window_output_hw
from .linalg import matmul

_BLOCK = 1 << 22  # im2col elements per matmul: bounds the extra memory a big convolution needs


def _pad(x, pad, value=0.0):
    (top, bottom), (left, right) = pad
    if not (top or bottom or left or right):
        return x
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)


def _crop(padded, pad, height, width):
    (top, _), (left, _) = pad
    return padded[:, top : top + height, left : left + width]


def _out_hw(padded_shape, window, strides, dilations=(1, 1)):
    """The output (height, width) over an input already padded."""
    return window_output_hw(padded_shape[1:3], window, strides, ((0, 0), (0, 0)), dilations)


def _taps(window, strides, dilations, out_hw):
    """(i, j, index) per window position: index picks, from the padded input, every pixel that tap (i, j) meets."""
    (sh, sw), (dh, dw), (oh, ow) = strides, dilations, out_hw
    for i in range(window[0]):
        rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
        for j in range(window[1]):
            yield i, j, (slice(None), rows, slice(j * dw, j * dw + (ow - 1) * sw + 1, sw))


# ---- conv2d ------------------------------------------------------------------------------------


def _conv2d(x, weights, strides, pad, dilations):
    kh, kw, c, o = weights.shape
    (sh, sw), (dh, dw) = strides, dilations
    extent = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    windows = sliding_window_view(_pad(x, pad), extent, axis=(1, 2))[:, ::sh, ::sw, :, ::dh, ::dw]
    windows = windows.transpose(0, 1, 2, 4, 5, 3)  # [N, OH, OW, kh, kw, C]: the filter's HWI order
    n, oh, ow = windows.shape[:3]
    k = kh * kw * c
    matrix = weights.reshape(k, o)
    out = np.empty((n, oh, ow, o), np.float32)
    per_image = oh * ow * k
    if n * per_image <= _BLOCK:
        blocks = [np.s_[:]]
    elif per_image <= _BLOCK:
        step = _BLOCK // per_image
        blocks = [np.s_[b : b + step] for b in range(0, n, step)]
    else:
        step = max(1, _BLOCK // max(1, ow * k))
        blocks = [np.s_[b, h : h + step] for b in range(n) for h in range(0, oh, step)]
    for block in blocks:
        cols = windows[block]
        rows = int(np.prod(cols.shape[:-3]))
        out[block] = matmul(cols.reshape(rows, k), matrix).reshape(cols.shape[:-3] + (o,))
    return out


def conv2d_backprop_input(dy, weights, strides, pad, dilations, input_shape):
    n, h, w, c = input_shape
    (top, bottom), (left, right) = pad
    dx = np.zeros((n, h + top + bottom, w + left + right, c), np.float32)
    dy_rows = dy.reshape(-1, dy.shape[3])
    for i, j, index in _taps(weights.shape[:2], strides, dilations, dy.shape[1:3]):
        dx[index] += (dy_rows @ weights[i, j].T).reshape(dy.shape[:3] + (c,))
    return _crop(dx, pad, h, w)


def conv2d_backprop_filter(x, dy, strides, pad, dilations, filter_shape):
    padded = _pad(x, pad)
    c, o = filter_shape[2:]
    dy_rows = dy.reshape(-1, o)
    df = np.empty(filter_shape, np.float32)
    for i, j, index in _taps(filter_shape[:2], strides, dilations, dy.shape[1:3]):
        df[i, j] = matmul(padded[index].reshape(dy_rows.shape[0], c).T, dy_rows)  # -1 cannot be inferred when c == 0
    return df


# ---- depthwise conv2d: output channel c * multiplier + m comes from input channel c -------------


def _depthwise(x, weights, strides, pad, dilations):
    kh, kw, c, m = weights.shape
    padded = _pad(x, pad)
    oh, ow = _out_hw(padded.shape, (kh, kw), strides, dilations)
    out = np.zeros((x.shape[0], oh, ow, c * m), np.float32)
    acc = out.reshape(x.shape[0], oh, ow, c, m)  # a view of out
    for i, j, index in _taps((kh, kw), strides, dilations, (oh, ow)):
        acc += padded[index][..., None] * weights[i, j]
    return out


def depthwise_backprop_input(dy, weights, strides, pad, dilations, input_shape):
    n, h, w, c = input_shape
    (top, bottom), (left, right) = pad
    dx = np.zeros((n, h + top + bottom, w + left + right, c), np.float32)
    dy5 = dy.reshape(dy.shape[:3] + weights.shape[2:])
    for i, j, index in _taps(weights.shape[:2], strides, dilations, dy.shape[1:3]):
        dx[index] += np.einsum("nhwcm,cm->nhwc", dy5, weights[i, j])
    return _crop(dx, pad, h, w)


def depthwise_backprop_filter(x, dy, strides, pad, dilations, filter_shape):
    padded = _pad(x, pad)
    dy5 = dy.reshape(dy.shape[:3] + tuple(filter_shape[2:]))
    df = np.empty(filter_shape, np.float32)
    for i, j, index in _taps(filter_shape[:2], strides, dilations, dy.shape[1:3]):
        df[i, j] = np.einsum("nhwc,nhwcm->cm", padded[index], dy5)
    return df


# ---- pooling: padding never takes part (max ignores it, average divides by the real pixels) -----


def max_pool(x, ksize, strides, pad):
    padded = _pad(x, pad, -np.inf)
    out = None
    for _, _, index in _taps(ksize, strides, (1, 1), _out_hw(padded.shape, ksize, strides)):
        out = padded[index].copy() if out is None else np.maximum(out, padded[index], out=out)
    return out


def max_pool_grad(dy, x, y, ksize, strides, pad):
    """Each window's gradient goes to its first maximum in row-major order, as TensorFlow."""
    padded = _pad(x, pad, -np.inf)
    dx = np.zeros(padded.shape, np.float32)
    taken = np.zeros(dy.shape, bool)
    for _, _, index in _taps(ksize, strides, (1, 1), dy.shape[1:3]):
        hit = (padded[index] == y) & ~taken
        dx[index] += np.where(hit, dy, np.float32(0))
        taken |= hit
    return _crop(dx, pad, x.shape[1], x.shape[2])


def _window_sizes(size, k, stride, before, n_out):
    """How many real (unpadded) pixels each window covers along one axis."""
    start = np.arange(n_out) * stride - before
    return (np.minimum(start + k, size) - np.maximum(start, 0)).astype(np.float32)


def _pixel_counts(input_hw, ksize, strides, pad, out_hw):
    rows, cols = (_window_sizes(*args) for args in zip(input_hw, ksize, strides, (pad[0][0], pad[1][0]), out_hw))
    return rows[:, None, None] * cols[None, :, None]  # [OH, OW, 1]


def avg_pool(x, ksize, strides, pad):
    padded = _pad(x, pad)
    out_hw = _out_hw(padded.shape, ksize, strides)
    total = np.zeros((x.shape[0], *out_hw, x.shape[3]), np.float32)
    for _, _, index in _taps(ksize, strides, (1, 1), out_hw):
        total += padded[index]
    return total / _pixel_counts(x.shape[1:3], ksize, strides, pad, out_hw)


def _avg_pool_grad(dy, ksize, strides, pad, input_shape):
    n, h, w, c = input_shape
    (top, bottom), (left, right) = pad
    share = dy / _pixel_counts((h, w), ksize, strides, pad, dy.shape[1:3])
    dx = np.zeros((n, h + top + bottom, w + left + right, c), np.float32)
    for _, _, index in _taps(ksize, strides, (1, 1), dy.shape[1:3]):
        dx[index] += share
    return _crop(dx, pad, h, w)


register_kernel("Conv2D", "numpy", _conv2d)
register_kernel("Conv2DBackpropInput", "numpy", conv2d_backprop_input)
register_kernel("Conv2DBackpropFilter", "numpy", conv2d_backprop_filter)
register_kernel("DepthwiseConv2dNative", "numpy", _depthwise)
register_kernel("DepthwiseConv2dNativeBackpropInput", "numpy", depthwise_backprop_input)
register_kernel("DepthwiseConv2dNativeBackpropFilter", "numpy", depthwise_backprop_filter)
register_kernel("MaxPool", "numpy", max_pool)
register_kernel("MaxPoolGrad", "numpy", max_pool_grad)
register_kernel("AvgPool", "numpy", avg_pool)
register_kernel("AvgPoolGrad", "numpy", _avg_pool_grad)
