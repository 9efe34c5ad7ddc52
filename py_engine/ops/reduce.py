"""Reductions over axes (sum, mean, max, ... with keepdims), softmax, cumsum, top_k; their gradients."""

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "cumsum",
    "log_softmax",
    "logsumexp",
    "max",
    "mean",
    "min",
    "moments",
    "prod",
    "softmax",
    "sum",
    "top_k",
]

from .. import dtypes
from ..autograd import register_gradient
from ..engine import ENGINE
from ..errors import ShapeError
from .check import axes as normalize_axes
from .check import axis_index, dtype_in
from .convert import as_temporary, release
from .math import cast, equal, exp, log, logical_and, sub, where

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _reduce(op, kernel, allowed, convert_to=None, needs_elements=False):
    def fn(x, axis=None, keepdims=False):
        temps = []
        try:
            x = as_temporary(x, op, temps)
            if convert_to and x.dtype not in allowed:
                x = as_temporary(x, op, temps, convert_to) if convert_to != BOOL else _nonzero(x, temps)
            dtype_in(op, x, allowed)
            ax = normalize_axes(op, axis, x.rank)
            if needs_elements and any(x.shape[a] == 0 for a in ax):
                raise ShapeError(f"{op}: cannot reduce a size-0 axis of shape {x.shape} (axis {axis})")
            return ENGINE.run_kernel(kernel, (x,), {"axis": ax, "keepdims": bool(keepdims)})
        finally:
            release(temps)

    fn.__name__ = op
    return fn


def _nonzero(x, temps):
    from .math import not_equal

    t = not_equal(x, 0)
    temps.append(t)
    return t


sum = _reduce("sum", "Sum", (F32, I32), convert_to=I32)
mean = _reduce("mean", "Mean", (F32,), convert_to=F32)
prod = _reduce("prod", "Prod", (F32, I32), convert_to=I32)
max = _reduce("max", "Max", (F32, I32), needs_elements=True)
min = _reduce("min", "Min", (F32, I32), needs_elements=True)
all = _reduce("all", "All", (BOOL,), convert_to=BOOL)
any = _reduce("any", "Any", (BOOL,), convert_to=BOOL)


def _arg(op, kernel):
    def fn(x, axis=0):
        temps = []
        try:
            x = as_temporary(x, op, temps)
            dtype_in(op, x, (F32, I32))
            ax = axis_index(op, axis, x.rank)
            if x.rank and x.shape[ax] == 0:
                raise ShapeError(f"{op}: axis {axis} of shape {x.shape} is empty")
            return ENGINE.run_kernel(kernel, (x,), {"axis": ax if x.rank else None})
        finally:
            release(temps)

    fn.__name__ = op
    return fn


argmax = _arg("argmax", "ArgMax")
argmin = _arg("argmin", "ArgMin")


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) computed without overflow."""
    from .shape import reshape

    x = _float(x, "logsumexp")
    ax = normalize_axes("logsumexp", axis, x.rank)
    m = max(x, ax, keepdims=True)
    out = log(sum(exp(x - m), ax, keepdims=True)) + m
    return out if keepdims else reshape(out, tuple(d for i, d in enumerate(x.shape) if i not in ax))


def moments(x, axis=None, keepdims=False):
    """(mean, variance) over the axes."""
    from .math import squared_difference
    from .shape import reshape

    x = _float(x, "moments")
    ax = normalize_axes("moments", axis, x.rank)
    m = mean(x, ax, keepdims=True)
    variance = mean(squared_difference(x, m), ax, keepdims=keepdims)
    return (m if keepdims else reshape(m, variance.shape)), variance


def softmax(logits, axis=-1):
    x = _float(logits, "softmax")
    return ENGINE.run_kernel("Softmax", (x,), {"axis": axis_index("softmax", axis, x.rank)})


def log_softmax(logits, axis=-1):
    x = _float(logits, "log_softmax")
    return sub(x, logsumexp(x, axis_index("log_softmax", axis, x.rank), keepdims=True))


def cumsum(x, axis=0, exclusive=False, reverse=False):
    temps = []
    try:
        x = as_temporary(x, "cumsum", temps)
        if x.dtype == BOOL:
            x = as_temporary(x, "cumsum", temps, I32)
        attrs = {"axis": axis_index("cumsum", axis, x.rank), "exclusive": bool(exclusive), "reverse": bool(reverse)}
        return ENGINE.run_kernel("Cumsum", (x,), attrs)
    finally:
        release(temps)


def top_k(x, k=1, sorted=True):
    """(values, indices) of the k largest entries along the last axis, largest first."""
    temps = []
    try:
        x = as_temporary(x, "top_k", temps)
        dtype_in("top_k", x, (F32, I32))
        if x.rank == 0:
            raise ShapeError("top_k: x must have rank >= 1, got a scalar")
        if not 0 <= k <= x.shape[-1]:
            raise ShapeError(f"top_k: k={k} must be between 0 and the last dimension {x.shape[-1]} of shape {x.shape}")
        return ENGINE.run_kernel("TopK", (x,), {"k": int(k)})
    finally:
        release(temps)


def _float(x, op):
    from ..tensor import Tensor

    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.dtype != F32:
        raise TypeError(f"{op}: expected float32, got {x.dtype}; cast it with x.cast('float32')")
    return x


# ---- gradients ------------------------------------------------------------------------------


def _spread(dy, x, attrs):
    """dy of a reduction, broadcast back to x's shape."""
    from .shape import broadcast_to, reshape

    return broadcast_to(reshape(dy, _kept_shape(x.shape, attrs["axis"])), x.shape)


register_gradient("Sum", lambda dy, ins, outs, attrs: _spread(dy, ins[0], attrs))


def _mean_grad(dy, ins, outs, attrs):
    x = ins[0]
    count = 1
    for a in attrs["axis"]:
        count *= x.shape[a]
    return _spread(dy / float(count or 1), x, attrs)


def _extreme_grad(dy, ins, outs, attrs):
    from .shape import reshape

    x, y = ins[0], outs[0]
    hit = equal(x, reshape(y, _kept_shape(x.shape, attrs["axis"])))
    return where(hit, _spread(dy, x, attrs), 0.0)


def _prod_grad(dy, ins, outs, attrs):
    """d prod / dx_i = product of the others, also right when some x are zero."""
    from .shape import reshape

    x = ins[0]
    kept = _kept_shape(x.shape, attrs["axis"])
    is_zero = equal(x, 0.0)
    zeros = reshape(sum(cast(is_zero, F32), attrs["axis"], keepdims=True), kept)
    prod_nonzero = prod(where(is_zero, 1.0, x), attrs["axis"], keepdims=True)
    no_zero = where(equal(zeros, 0.0), prod_nonzero / where(is_zero, 1.0, x), 0.0)
    one_zero = where(logical_and(equal(zeros, 1.0), is_zero), prod_nonzero, 0.0)
    return _spread(dy, x, attrs) * (no_zero + one_zero)


def _softmax_grad(dy, ins, outs, attrs):
    y = outs[0]
    return y * (dy - sum(dy * y, attrs["axis"], keepdims=True))


def _cumsum_grad(dy, ins, outs, attrs):
    return cumsum(dy, attrs["axis"], attrs["exclusive"], not attrs["reverse"])


def _top_k_grad(dys, ins, outs, attrs):
    from .creation import one_hot
    from .shape import expand_dims

    dvalues, _ = dys
    n = ins[0].shape[-1]
    return (sum(one_hot(outs[1], n) * expand_dims(dvalues, -1), -2),)


register_gradient("Mean", _mean_grad)
register_gradient("Max", _extreme_grad)
register_gradient("Min", _extreme_grad)
register_gradient("Prod", _prod_grad)
register_gradient("Softmax", _softmax_grad)
register_gradient("Cumsum", _cumsum_grad)
register_gradient("TopK", _top_k_grad)
