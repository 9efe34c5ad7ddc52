"""Convolutions, pooling, normalisation and dropout (NHWC images, HWIO filters, as TensorFlow.js).

conv2d, depthwise_conv2d and the pools run one kernel each, with padding resolved here to explicit
((top, bottom), (left, right)); their gradients have kernels of their own. global_avg_pool,
batch_norm, layer_norm and dropout are built from other ops, so their gradients come for free.
"""

__all__ = [
    "avg_pool",
    "batch_norm",
    "conv2d",
    "depthwise_conv2d",
    "dropout",
    "global_avg_pool",
    "layer_norm",
    "max_pool",
]

import numbers

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..window_output_size import window_output_hw
from .check import axes as normalize_axes
from .check import int_tuple, rank_is
from .convert import as_temporary, release
from .creation import random_uniform
from .math import cast, greater_equal, rsqrt
from .reduce import mean as reduce_mean
from .reduce import moments
from .shape import expand_dims, reshape

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
        pads = []
        for n, k, s in zip(in_hw, extent, strides):
            total = max((-(-n // s) - 1) * s + k - n, 0)  # TensorFlow: the extra pixel goes bottom/right
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
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


def conv2d(x, filter, strides=1, padding="valid", dilations=1):
    """2-D convolution (cross-correlation) of x [N, H, W, C] (or one image [H, W, C]) with filter [h, w, C, out].

    padding: "same", "valid", an int, or [[top, bottom], [left, right]]; strides, dilations: int or pair.
    """
    return _conv("conv2d", "Conv2D", "h, w, in, out", x, filter, strides, padding, dilations)


def depthwise_conv2d(x, filter, strides=1, padding="valid", dilations=1):
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


def avg_pool(x, filter_size, strides, padding="valid"):
    """Mean over each window; with padding, each window is divided by its real (unpadded) pixel count."""
    return _pool("avg_pool", "AvgPool", x, filter_size, strides, padding)


def max_pool(x, filter_size, strides, padding="valid"):
    """Maximum over each window; padding never wins."""
    return _pool("max_pool", "MaxPool", x, filter_size, strides, padding)


def global_avg_pool(x, keepdims=False):
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


def batch_norm(x, mean, variance, offset=None, scale=None, variance_epsilon=1e-3):
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


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
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


def dropout(x, rate, noise_shape=None, seed=None):
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
