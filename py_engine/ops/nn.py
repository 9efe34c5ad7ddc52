"""Convolutions, pooling, normalisation and dropout (NHWC images, HWIO filters, as TensorFlow.js).

conv2d, depthwise_conv2d and the pools run one kernel each, with padding resolved here to explicit
((top, bottom), (left, right)); their gradients have kernels of their own. conv2d_transpose runs conv2d's input
gradient kernel forwards. global_avg_pool, batch_norm, layer_norm and dropout are built from other ops, so their
gradients come for free, as do the 3-D ops the 3-D layers run (conv3d, conv3d_transpose, max_pool3d, avg_pool3d:
the 2-D op once per tap of the window along depth); those and conv2d_transpose are the layers', not in pe's
namespace.
"""

__all__ = [
    "avg_pool",
    "batch_norm",
    "conv1d",
    "conv2d",
    "depthwise_conv2d",
    "dilation2d",
    "dropout",
    "global_avg_pool",
    "layer_norm",
    "local_response_normalization",
    "max_pool",
    "max_pool_with_argmax",
]

import numbers
import operator

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..window_output_size import conv_output_length, same_padding, window_output_hw
from .check import axes as normalize_axes
from .check import int_tuple, rank_is
from .creation import random_uniform, zeros
from .linalg import matmul
from .math import cast, greater_equal, maximum, pow, rsqrt
from .operands import as_temporary, release
from .operands import tensor as host_tensor
from .reduce import argmax, moments
from .reduce import max as reduce_max
from .reduce import mean as reduce_mean
from .shape import concat, expand_dims, reshape, stack
from .shape import pad as pad_tensor

F32 = dtypes.float32


def float_input(op, x, temps, name="x"):
    """x as a float32 tensor: other values are converted (and added to temps), other dtypes refused."""
    if not isinstance(x, Tensor):
        return as_temporary(x, op, temps, F32)
    if x.dtype != F32:
        raise DTypeError(
            f"{op}: {name} has dtype {x.dtype}, expected float32; cast it first with {name}.cast('float32')"
        )
    return x


def batched(x, run):
    """run(x) on a batch: a single image (rank 3) runs as a batch of one and comes back as rank 3."""
    if x.rank == 4:
        return run(x)
    batch = expand_dims(x, 0)
    try:
        out = run(batch)
    finally:
        batch.dispose()
    single = reshape(out, out.shape[1:])
    out.dispose()
    return single


def _padding(op, padding, in_hw, extent, strides):
    """((top, bottom), (left, right)) for "same", "valid", an int, or explicit pairs."""
    if isinstance(padding, str) and padding.lower() in ("same", "valid"):
        if padding.lower() == "valid":
            return ((0, 0), (0, 0))
        return tuple(same_padding(n, k, s) for n, k, s in zip(in_hw, extent, strides))
    if _count(padding):
        return ((int(padding),) * 2,) * 2
    try:
        pairs = [tuple(p) for p in padding]
    except TypeError:
        pairs = []
    if len(pairs) == 4 and pairs[0] == pairs[3] == (0, 0):  # TensorFlow's NHWC form [[0, 0], [t, b], [l, r], [0, 0]]
        pairs = pairs[1:3]
    if isinstance(padding, str) or len(pairs) != 2 or not all(len(p) == 2 and all(map(_count, p)) for p in pairs):
        raise ValueError(
            f"{op}: padding must be 'same', 'valid', a non-negative int or [[top, bottom], [left, right]] of "
            f"non-negative ints, got {padding!r}"
        )
    return tuple(tuple(int(v) for v in p) for p in pairs)


def _count(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0


def _window_attrs(op, x, window, strides, padding, dilations=(1, 1), what="filter"):
    """(strides, pad) of a window sliding over x's height and width; refuses one that leaves no output."""
    strides = int_tuple(op, strides, 2, "strides")
    in_hw = x.shape[-3:-1]
    extent = tuple((k - 1) * d + 1 for k, d in zip(window, dilations))
    pad = _padding(op, padding, in_hw, extent, strides)
    out = window_output_hw(in_hw, window, strides, pad, dilations)
    if min(out) <= 0:
        dilated = f" (dilated to {extent[0]}x{extent[1]})" if tuple(dilations) != (1, 1) else ""
        raise ShapeError(
            f"{op}: a {window[0]}x{window[1]} {what}{dilated} with strides {strides} and padding {pad} leaves "
            f"no output for x of shape {x.shape} (output size {out[0]}x{out[1]})"
        )
    return strides, pad


def conv_inputs(op, layout, x, filter, strides, padding, dilations, temps):
    """(x, filter, attrs) of a convolution kernel, checked: float tensors (conversions appended to temps), x
    [N, H, W, C] or [H, W, C], a filter whose third axis matches C (layout names its axes in errors), and the
    strides, pad and dilations of a window that leaves an output."""
    x, filter = float_input(op, x, temps), float_input(op, filter, temps, "filter")
    rank_is(op, x, (3, 4))
    rank_is(op, filter, 4, "filter")
    if filter.shape[2] != x.shape[-1]:
        raise ShapeError(
            f"{op}: filter {filter.shape} ({layout}) has {filter.shape[2]} input channels but x {x.shape} "
            f"has {x.shape[-1]}"
        )
    if min(filter.shape[:2]) < 1:
        raise ShapeError(f"{op}: filter {filter.shape} ({layout}) has an empty height or width")
    dilations = int_tuple(op, dilations, 2, "dilations")
    strides, pad = _window_attrs(op, x, filter.shape[:2], strides, padding, dilations)
    return x, filter, {"strides": strides, "pad": pad, "dilations": dilations}


def _conv(op, kernel, layout, x, filter, strides, padding, dilations):
    temps = []
    try:
        x, filter, attrs = conv_inputs(op, layout, x, filter, strides, padding, dilations, temps)
        return batched(x, lambda batch: ENGINE.run_kernel(kernel, (batch, filter), attrs))
    finally:
        release(temps)


def conv2d(x, filter, strides=1, padding="valid", dilations=1) -> Tensor:
    """2-D convolution (cross-correlation) of x [N, H, W, C] (or one image [H, W, C]) with filter [h, w, C, out].

    padding: "same", "valid", an int, or [[top, bottom], [left, right]]; strides, dilations: int or pair.
    """
    return _conv("conv2d", "Conv2D", "h, w, in, out", x, filter, strides, padding, dilations)


def conv1d(x, filter, stride=1, padding="valid", data_format="NWC", dilation=1) -> Tensor:
    """1-D convolution of x [N, W, C] (or [W, C]) with filter [w, C, out], as TF.js's conv1d: conv2d over a height of
    1. padding: "same", "valid", an int, or [left, right]; data_format: "NWC" only (as TF.js)."""
    op = "conv1d"
    if data_format != "NWC":
        raise ValueError(f"{op}: data_format must be 'NWC' (as in TF.js), got {data_format!r}")
    with ENGINE.scope(op) as scope:
        x, filter = float_input(op, x, []), float_input(op, filter, [], "filter")
        rank_is(op, x, (2, 3))
        rank_is(op, filter, 3, "filter")
        if isinstance(padding, str):
            pad = padding
        elif isinstance(padding, numbers.Integral):
            pad = [[0, 0], [int(padding), int(padding)]]
        else:
            pad = [[0, 0], list(padding)]
        rows = reshape(x, x.shape[:-2] + (1,) + x.shape[-2:])
        y = conv2d(rows, reshape(filter, (1, *filter.shape)), (1, stride), pad, (1, dilation))
        return scope.export(reshape(y, y.shape[:-3] + y.shape[-2:]))


def depthwise_conv2d(x, filter, strides=1, padding="valid", dilations=1) -> Tensor:
    """Each input channel c convolved with its own filters [h, w, C, multiplier]: output channel c * multiplier + m."""
    return _conv(
        "depthwise_conv2d", "DepthwiseConv2dNative", "h, w, in, multiplier", x, filter, strides, padding, dilations
    )


def _pool(op, kernel, x, filter_size, strides, padding):
    temps = []
    try:
        x = float_input(op, x, temps)
        rank_is(op, x, (3, 4))
        ksize = int_tuple(op, filter_size, 2, "filter_size")
        strides, pad = _window_attrs(op, x, ksize, strides, padding, what="window")
        for (before, after), k in zip(pad, ksize):
            if max(before, after) >= k:
                raise ShapeError(f"{op}: padding {pad} must be smaller than the window {ksize} on each side")
        attrs = {"ksize": ksize, "strides": strides, "pad": pad}
        return batched(x, lambda batch: ENGINE.run_kernel(kernel, (batch,), attrs))
    finally:
        release(temps)


def avg_pool(x, filter_size, strides, padding="valid") -> Tensor:
    """Mean over each window; with padding, each window is divided by its real (unpadded) pixel count."""
    return _pool("avg_pool", "AvgPool", x, filter_size, strides, padding)


def max_pool(x, filter_size, strides, padding="valid") -> Tensor:
    """Maximum over each window; padding never wins."""
    return _pool("max_pool", "MaxPool", x, filter_size, strides, padding)


def global_avg_pool(x, keepdims=False) -> Tensor:
    """Mean over height and width of x [N, H, W, C] (or [H, W, C])."""
    temps = []
    try:
        x = float_input("global_avg_pool", x, temps)
        rank_is("global_avg_pool", x, (3, 4))
        return reduce_mean(x, (x.rank - 3, x.rank - 2), keepdims=keepdims)
    finally:
        release(temps)


def _number(op, value, name):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a number, got {type(value).__name__}")
    return float(value)


def _param(op, p, x, temps, name, axes=None):
    """A float32 tensor for a normalisation parameter that broadcasts to x without changing its shape.

    With `axes`, a parameter shaped like those axes of x, e.g. (H, W), is laid out along them: (1, H, W, 1).
    """
    if p is None:
        return None
    p = float_input(op, p, temps, name)
    if axes is not None and p.shape == tuple(x.shape[a] for a in axes):
        p = reshape(p, tuple(d if i in axes else 1 for i, d in enumerate(x.shape)))
        temps.append(p)
    lead = x.rank - p.rank
    if lead < 0 or any(d not in (1, x.shape[lead + i]) for i, d in enumerate(p.shape)):
        raise ShapeError(f"{op}: {name} of shape {p.shape} does not broadcast to x's shape {x.shape}")
    return p


def batch_norm(x, mean, variance, offset=None, scale=None, variance_epsilon=1e-3) -> Tensor:
    """(x - mean) / sqrt(variance + epsilon) * scale + offset, with moving statistics (inference).

    The parameters have rank 1 (one value per entry of x's last axis) or x's rank, and broadcast to x.
    """
    op = "batch_norm"
    eps = _number(op, variance_epsilon, "variance_epsilon")
    temps = []
    try:
        x = float_input(op, x, temps)
        if x.rank == 0:
            raise ShapeError(f"{op}: x must have rank >= 1, got a scalar")
        params = {}
        for name, p in (("mean", mean), ("variance", variance), ("offset", offset), ("scale", scale)):
            params[name] = _param(op, p, x, temps, name)
            if p is not None and params[name].rank not in (1, x.rank):
                raise ShapeError(
                    f"{op}: {name} has shape {params[name].shape}; it must have rank 1 or x's rank {x.rank} ({x.shape})"
                )

        def normalize():
            factor = rsqrt(params["variance"] + eps)  # small: fold scale in before touching all of x
            if params["scale"] is not None:
                factor = factor * params["scale"]
            y = (x - params["mean"]) * factor
            return y if params["offset"] is None else y + params["offset"]

        return ENGINE.tidy(normalize)
    finally:
        release(temps)


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3) -> Tensor:
    """(x - mean) / sqrt(variance + epsilon) * gamma + beta, with mean and variance over `axis` (int or list).

    gamma and beta have the normalised axes' shape (e.g. (C,) for axis=-1) or broadcast to x.
    """
    op = "layer_norm"
    eps = _number(op, epsilon, "epsilon")
    temps = []
    try:
        x = float_input(op, x, temps)
        ax = normalize_axes(op, axis, x.rank)
        if not ax:
            raise ShapeError(f"{op}: axis {axis!r} names no axis of x {x.shape}")
        gamma, beta = (_param(op, p, x, temps, name, ax) for name, p in (("gamma", gamma), ("beta", beta)))

        def normalize():
            m, variance = moments(x, ax, keepdims=True)
            y = (x - m) * rsqrt(variance + eps)
            if gamma is not None:
                y = y * gamma
            return y if beta is None else y + beta

        return ENGINE.tidy(normalize)
    finally:
        release(temps)


def dropout(x, rate, noise_shape=None, seed=None) -> Tensor:
    """Zero each element with probability `rate` and scale the rest by 1 / (1 - rate) (inverted dropout).

    noise_shape (None entries take x's size) lets one draw cover a whole axis; `seed` makes the mask repeatable.
    """
    op = "dropout"
    rate = _number(op, rate, "rate")
    if not 0 <= rate < 1:
        raise ValueError(f"{op}: rate must be in [0, 1), got {rate}")
    temps = []
    try:
        x = float_input(op, x, temps)
        if noise_shape is None:
            noise_shape = x.shape
        else:
            given = tuple(noise_shape)
            noise_shape = tuple(x.shape[i] if d is None else d for i, d in enumerate(given[: x.rank]))
            if len(given) != x.rank or any(d not in (1, n) for d, n in zip(noise_shape, x.shape)):
                raise ShapeError(
                    f"{op}: noise_shape {given} must have x's rank {x.rank} and sizes equal to x's {x.shape} or 1"
                )
        if rate == 0:
            return ENGINE.view(x, x.shape)

        def drop():
            keep = greater_equal(random_uniform(noise_shape, seed=seed), rate)
            return x * (cast(keep, F32) * (1 / (1 - rate)))

        return ENGINE.tidy(drop)
    finally:
        release(temps)


# ---- the layers' ops: a transposed convolution, and the 3-D ones -----------------------------------------------


def _same_or_valid(op, padding):
    """The padding Keras's layers take: "same" or "valid", in any case."""
    mode = padding.lower() if isinstance(padding, str) else padding
    if mode not in ("same", "valid"):
        raise ValueError(f"{op}: padding must be 'same' or 'valid', got {padding!r}")
    return mode


def conv2d_transpose(x, filter, output_hw, strides=1, padding="valid"):
    """The transposed 2-D convolution of x [N, H, W, in] with filter [h, w, out, in] (TF.js's conv2dTranspose):
    the gradient of conv2d(y, filter) with respect to y [N, *output_hw, out]. padding: "same" or "valid"."""
    op = "conv2d_transpose"
    temps = []
    try:
        x, filter = float_input(op, x, temps), float_input(op, filter, temps, "filter")
        if x.rank != 4 or filter.rank != 4 or filter.shape[3] != x.shape[3]:
            raise ShapeError(
                f"{op}: needs x [N, H, W, in] and filter [h, w, out, in] with the same in; got x {x.shape} and "
                f"filter {filter.shape}"
            )
        strides = int_tuple(op, strides, 2, "strides")
        padding = _same_or_valid(op, padding)
        output_shape = (x.shape[0], *output_hw, filter.shape[2])
        # the padding of the forward convolution from the output back to x, which must give x's size
        pad = _padding(op, padding, output_hw, filter.shape[:2], strides)
        expected = [conv_output_length(n, k, padding, s) for n, k, s in zip(output_hw, filter.shape[:2], strides)]
        if tuple(expected) != x.shape[1:3]:
            raise ShapeError(
                f"{op}: an output of {list(output_hw)} with strides {strides} and padding {padding!r} convolves back "
                f"to {expected}, not x's {list(x.shape[1:3])}"
            )
        attrs = {"strides": strides, "pad": pad, "dilations": (1, 1), "input_shape": output_shape}
        return ENGINE.run_kernel("Conv2DBackpropInput", (x, filter), attrs)
    finally:
        release(temps)


def depth_padding(size, extent, stride, padding):
    """(front, back) along depth: none for "valid"; TensorFlow's "same" (the odd slice at the back)."""
    return (0, 0) if padding == "valid" else same_padding(size, extent, stride)


def _pad_depth(x, front, back, value=0.0):
    if not (front or back):
        return x
    return pad_tensor(x, [(0, 0), (front, back), (0, 0), (0, 0), (0, 0)], value)


def _depth_taps(x, window, stride, dilation, padding, value=0.0):
    """(out depth, [frames per tap]): each tap's depth slices as [batch * out depth, height, width, channels]."""
    batch, depth, height, width, channels = x.shape
    extent = (window - 1) * dilation + 1
    front, back = depth_padding(depth, extent, stride, padding)
    padded = _pad_depth(x, front, back, value)
    out_depth = (depth + front + back - extent) // stride + 1
    if out_depth <= 0:
        raise ShapeError(f"a window of {window} along depth leaves no output for inputs of shape {x.shape}")
    frames = []
    for i in range(window):
        start = i * dilation
        slices = padded[:, start : start + (out_depth - 1) * stride + 1 : stride]
        frames.append(reshape(slices, (batch * out_depth, height, width, channels)))
    return out_depth, frames


def _check_rank5(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor (pe.tensor(...)), got {type(x).__name__}")
    if x.rank != 5:
        raise ShapeError(f"{op}: x must be [batch, depth, height, width, channels], got shape {x.shape}")


def conv3d(x, filter, strides=1, padding="valid", dilations=1):
    """3-D convolution of x [N, D, H, W, C] with filter [d, h, w, C, out]; padding "same" or "valid"."""
    _check_rank5("conv3d", x)
    strides, dilations = int_tuple("conv3d", strides, 3, "strides"), int_tuple("conv3d", dilations, 3, "dilations")
    if filter.rank != 5 or filter.shape[3] != x.shape[4]:
        raise ShapeError(f"conv3d: filter must be [d, h, w, {x.shape[4]}, out] for x {x.shape}, got {filter.shape}")
    out_depth, frames = _depth_taps(x, filter.shape[0], strides[0], dilations[0], padding)
    total = None
    for i, frame in enumerate(frames):
        y = conv2d(frame, filter[i], strides[1:], padding, dilations[1:])
        total = y if total is None else total + y
    return reshape(total, (x.shape[0], out_depth, *total.shape[1:]))


def conv3d_transpose(x, filter, output_dhw, strides=1, padding="valid"):
    """The transposed 3-D convolution of x [N, D, H, W, in] with filter [d, h, w, out, in] (TF.js's
    conv3dTranspose): the gradient of conv3d(y, filter) with respect to y [N, *output_dhw, out]."""
    _check_rank5("conv3d_transpose", x)
    strides = int_tuple("conv3d_transpose", strides, 3, "strides")
    batch, depth, height, width, channels = x.shape
    window, stride, out_depth = filter.shape[0], strides[0], output_dhw[0]
    if conv_output_length(out_depth, window, padding, stride) != depth:
        raise ShapeError(
            f"conv3d_transpose: an output depth of {out_depth} with stride {stride} and padding {padding!r} convolves "
            f"back to {conv_output_length(out_depth, window, padding, stride)}, not x's {depth}"
        )
    front = depth_padding(out_depth, window, stride, padding)[0]
    length = max((depth - 1) * stride + window, front + out_depth)
    frames = reshape(x, (batch * depth, height, width, channels))
    total = None
    for i in range(window):
        z = conv2d_transpose(frames, filter[i], output_dhw[1:], strides[1:], padding)
        z = reshape(z, (batch, depth, 1, *z.shape[1:]))
        if stride > 1:  # frame d lands on depth d * stride + i: zeros in between
            z = concat([z, zeros((batch, depth, stride - 1, *z.shape[3:]))], axis=2)
        z = reshape(z, (batch, depth * stride, *z.shape[3:]))
        z = _pad_depth(z, i, max(length - i - depth * stride, 0))[:, :length]
        total = z if total is None else total + z
    return total[:, front : front + out_depth]


def max_pool3d(x, pool_size, strides, padding="valid"):
    """The maximum of each window of x [N, D, H, W, C]; padding "same" or "valid" never takes part."""
    _check_rank5("max_pool3d", x)
    pool_size, strides = (
        int_tuple("max_pool3d", pool_size, 3, "pool_size"),
        int_tuple("max_pool3d", strides, 3, "strides"),
    )
    out_depth, frames = _depth_taps(x, pool_size[0], strides[0], 1, padding, float("-inf"))
    total = None
    for frame in frames:  # ties go to the earlier tap (maximum's gradient), as TensorFlow's first maximum
        y = max_pool(frame, pool_size[1:], strides[1:], padding)
        total = y if total is None else maximum(total, y)
    return reshape(total, (x.shape[0], out_depth, *total.shape[1:]))


def avg_pool3d(x, pool_size, strides, padding="valid"):
    """The mean of each window of x [N, D, H, W, C] over its real (unpadded) values."""
    _check_rank5("avg_pool3d", x)
    pool_size, strides = (
        int_tuple("avg_pool3d", pool_size, 3, "pool_size"),
        int_tuple("avg_pool3d", strides, 3, "strides"),
    )
    depth = x.shape[1]
    out_depth, frames = _depth_taps(x, pool_size[0], strides[0], 1, padding)
    total = None
    for frame in frames:
        y = avg_pool(frame, pool_size[1:], strides[1:], padding)
        total = y if total is None else total + y
    front = depth_padding(depth, pool_size[0], strides[0], padding)[0]
    starts = np.arange(out_depth) * strides[0] - front
    counts = np.minimum(starts + pool_size[0], depth) - np.maximum(starts, 0)  # real slices in each window
    total = reshape(total, (x.shape[0], out_depth, *total.shape[1:]))
    return total / counts.reshape(1, out_depth, 1, 1, 1).astype(np.float32)


def local_response_normalization(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5) -> Tensor:
    """x / (bias + alpha * s) ** beta, s the sum of squares over the channels within depth_radius of each channel (the
    last axis), as TF.js's localResponseNormalization (TensorFlow's LRN). The window sum is one matmul with a band of
    ones."""
    op = "local_response_normalization"
    r = operator.index(depth_radius)
    if r < 0:
        raise ValueError(f"{op}: depth_radius must be >= 0, got {depth_radius}")
    with ENGINE.scope(op) as scope:
        x = as_temporary(x, op, [], dtypes.float32)
        rank_is(op, x, 4)
        c = x.shape[-1]
        band = host_tensor([[float(abs(i - j) <= r) for j in range(c)] for i in range(c)], dtypes.float32)
        squares = matmul(reshape(x * x, (-1, c)), band)
        return scope.export(x * pow(reshape(squares, x.shape) * float(alpha) + float(bias), -float(beta)))


# what TF.js's Dilation2D and MaxPoolWithArgmax start from, so a window of padding alone gives it (as float32)
_BELOW_EVERYTHING = -9007199254740991.0  # JavaScript's Number.MIN_SAFE_INTEGER


def _window_taps(x, window, strides, pad, dilations):
    """([N, out_h, out_w, C] for each tap of the window, row-major), x [N, H, W, C] padded with _BELOW_EVERYTHING:
    a strided slice per tap."""
    padded = pad_tensor(x, ((0, 0), *pad, (0, 0)), _BELOW_EVERYTHING)
    out_h, out_w = window_output_hw(x.shape[1:3], window, strides, pad, dilations)
    taps = []
    for i in range(window[0]):
        for j in range(window[1]):
            y0, x0 = i * dilations[0], j * dilations[1]
            rows = slice(y0, y0 + (out_h - 1) * strides[0] + 1, strides[0])
            taps.append(padded[:, rows, x0 : x0 + (out_w - 1) * strides[1] + 1 : strides[1], :])
    return taps


def dilation2d(x, filter, strides=1, padding="valid", dilations=1, data_format="NHWC") -> Tensor:
    """Grayscale morphological dilation, as TF.js's dilation2d: out = max over the window of x + filter, x [N, H, W,
    C] (or [H, W, C]), filter [h, w, C]; padding "same" or "valid" never wins. Written as a strided slice per tap and
    a max, so its gradient comes with it."""
    op = "dilation2d"
    if data_format != "NHWC":
        raise ValueError(f"{op}: data_format must be 'NHWC' (as in TF.js), got {data_format!r}")
    with ENGINE.scope(op) as scope:
        x, filter = float_input(op, x, []), float_input(op, filter, [], "filter")
        rank_is(op, x, (3, 4))
        if filter.rank != 3 or filter.shape[2] != x.shape[-1]:
            raise ShapeError(f"{op}: filter must be [h, w, {x.shape[-1]}] (x's channels), got {filter.shape}")
        dilations = int_tuple(op, dilations, 2, "dilations")
        batch = x if x.rank == 4 else reshape(x, (1, *x.shape))
        strides, pad = _window_attrs(op, batch, filter.shape[:2], strides, padding, dilations)
        taps = _window_taps(batch, filter.shape[:2], strides, pad, dilations)
        w = filter.shape[1]
        out = reduce_max(stack([t + filter[k // w, k % w] for k, t in enumerate(taps)], 0), 0)
        return scope.export(out if x.rank == 4 else reshape(out, out.shape[1:]))


def max_pool_with_argmax(
    x, filter_size, strides, padding="valid", include_batch_in_index=False
) -> tuple[Tensor, Tensor]:
    """(result, indexes): max_pool's result and, for each, the flat index of the element it took (the first of
    equals, in window order), ((b * H + y) * W + x) * C + c with include_batch_in_index, else (y * W + x) * C + c,
    as TF.js's maxPoolWithArgmax. x [N, H, W, C]; padding "same" or "valid"."""
    op = "max_pool_with_argmax"
    with ENGINE.scope(op) as scope:
        x = float_input(op, x, [])
        rank_is(op, x, 4)
        window = int_tuple(op, filter_size, 2, "filter_size")
        strides, pad = _window_attrs(op, x, window, strides, padding, what="window")
        taps = stack(_window_taps(x, window, strides, pad, (1, 1)), 0)
        n, h, w, c = x.shape
        out_h, out_w = taps.shape[2:4]
        tap = argmax(taps, 0)  # [N, out_h, out_w, C]: the first of equals
        rows = host_tensor([[[oy * strides[0] - pad[0][0]]] for oy in range(out_h)], dtypes.int32)
        cols = host_tensor([[ox * strides[1] - pad[1][0]] for ox in range(out_w)], dtypes.int32)
        y, x_at = rows + tap // window[1], cols + tap % window[1]
        index = (y * w + x_at) * c + host_tensor(list(range(c)), dtypes.int32)
        if include_batch_in_index:
            index = index + reshape(host_tensor([b * h * w * c for b in range(n)], dtypes.int32), (n, 1, 1, 1))
        return scope.export((reduce_max(taps, 0), index))
