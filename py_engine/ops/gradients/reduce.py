"""Gradients of the ops in py_engine/ops/reduce.py."""

from ... import dtypes
from ...kernel_registry import register_gradient
from ..creation import one_hot
from ..math import cast, equal, logical_and, where
from ..reduce import _kept_shape, cumsum, prod
from ..reduce import sum as reduce_sum
from ..shape import broadcast_to, expand_dims, reshape

F32 = dtypes.float32


def _spread(dy, x, attrs):
    """dy of a reduction, broadcast back to x's shape."""
    return broadcast_to(reshape(dy, _kept_shape(x.shape, attrs["axis"])), x.shape)


register_gradient("Sum", lambda dy, ins, outs, attrs: _spread(dy, ins[0], attrs))


def _mean_grad(dy, ins, outs, attrs):
    x = ins[0]
    count = 1
    for a in attrs["axis"]:
        count *= x.shape[a]
    return _spread(dy / float(count or 1), x, attrs)


def _extreme_grad(dy, ins, outs, attrs):
    x, y = ins[0], outs[0]
    hit = equal(x, reshape(y, _kept_shape(x.shape, attrs["axis"])))
    return where(hit, _spread(dy, x, attrs), 0.0)


def _prod_grad(dy, ins, outs, attrs):
    """d prod / dx_i = product of the others, also right when some x are zero."""
    x = ins[0]
    kept = _kept_shape(x.shape, attrs["axis"])
    is_zero = equal(x, 0.0)
    zeros = reshape(reduce_sum(cast(is_zero, F32), attrs["axis"], keepdims=True), kept)
    prod_nonzero = prod(where(is_zero, 1.0, x), attrs["axis"], keepdims=True)
    no_zero = where(equal(zeros, 0.0), prod_nonzero / where(is_zero, 1.0, x), 0.0)
    one_zero = where(logical_and(equal(zeros, 1.0), is_zero), prod_nonzero, 0.0)
    return _spread(dy, x, attrs) * (no_zero + one_zero)


def _softmax_grad(dy, ins, outs, attrs):
    y = outs[0]
    return y * (dy - reduce_sum(dy * y, attrs["axis"], keepdims=True))


def _cumsum_grad(dy, ins, outs, attrs):
    return cumsum(dy, attrs["axis"], attrs["exclusive"], not attrs["reverse"])


def _cumprod_grad(dy, ins, outs, attrs):
    """TensorFlow's rule: each x[i] scales the products after it, so its gradient is the reversed running sum of
    y * dy, divided by x[i] (not finite where x is 0, as in TensorFlow)."""
    return cumsum(outs[0] * dy, attrs["axis"], attrs["exclusive"], not attrs["reverse"]) / ins[0]


def _top_k_grad(dys, ins, outs, attrs):
    dvalues, _ = dys
    n = ins[0].shape[-1]
    return (reduce_sum(one_hot(outs[1], n) * expand_dims(dvalues, -1), -2),)


register_gradient("Mean", _mean_grad)
register_gradient("Max", _extreme_grad)
register_gradient("Min", _extreme_grad)
register_gradient("Prod", _prod_grad)
register_gradient("Softmax", _softmax_grad)
register_gradient("Cumsum", _cumsum_grad)
register_gradient("Cumprod", _cumprod_grad)
register_gradient("TopK", _top_k_grad)
