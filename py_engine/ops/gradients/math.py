"""Gradients of the ops in py_engine/ops/math.py."""

import math

from ...kernel_registry import register_gradient
from ...selu_constants import SELU_SCALE, SELU_SCALE_ALPHA
from ..creation import zeros_like
from ..math import (
    activation_grad,
    clip_by_value_grad,
    cos,
    cosh,
    div_no_nan,
    exp,
    floor,
    log,
    neg,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    square,
    where,
)
from ..math import pow as power
from ..reduce import sum as reduce_sum
from ..shape import reshape


def unbroadcast(g, shape):
    """Sum a broadcast gradient back down to `shape`."""
    if g.shape == shape:
        return g
    lead = g.rank - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape) if d == 1 and g.shape[i + lead] != 1)
    return reshape(reduce_sum(g, axes), shape)


def _zeros(dy, inputs, outputs, attrs):
    return tuple(zeros_like(x) for x in inputs)


for _name in ("Floor", "Ceil", "Round", "Sign", "FloorDiv"):
    register_gradient(_name, _zeros)

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_G = {
    "Neg": lambda dy, x, y: neg(dy),
    "Abs": lambda dy, x, y: dy * sign(x),
    "Exp": lambda dy, x, y: dy * y,
    "Log": lambda dy, x, y: dy / x,
    "Log1p": lambda dy, x, y: dy / (x + 1.0),
    "Sqrt": lambda dy, x, y: dy / (y * 2.0),
    "Rsqrt": lambda dy, x, y: dy * y / x * -0.5,
    "Square": lambda dy, x, y: dy * x * 2.0,
    "Reciprocal": lambda dy, x, y: -dy * y * y,
    # from the output y, as one kernel: y > 0 where x > 0, 0 < y < 6 where 0 < x < 6
    "Relu": lambda dy, x, y: activation_grad(dy, y, "relu"),
    "Relu6": lambda dy, x, y: activation_grad(dy, y, "relu6"),
    "Elu": lambda dy, x, y: activation_grad(dy, y, "elu"),
    "Sigmoid": lambda dy, x, y: activation_grad(dy, y, "sigmoid"),
    "Tanh": lambda dy, x, y: activation_grad(dy, y, "tanh"),
    "Softplus": lambda dy, x, y: dy * sigmoid(x),
    "Erf": lambda dy, x, y: dy * exp(neg(square(x))) * _TWO_OVER_SQRT_PI,
    "Sin": lambda dy, x, y: dy * cos(x),
    "Cos": lambda dy, x, y: -dy * sin(x),
    "Tan": lambda dy, x, y: dy * (y * y + 1.0),
    "Asin": lambda dy, x, y: dy * rsqrt(1.0 - x * x),
    "Acos": lambda dy, x, y: -dy * rsqrt(1.0 - x * x),
    "Atan": lambda dy, x, y: dy / (x * x + 1.0),
    "Sinh": lambda dy, x, y: dy * cosh(x),
    "Cosh": lambda dy, x, y: dy * sinh(x),
    "Asinh": lambda dy, x, y: dy * rsqrt(x * x + 1.0),
    "Acosh": lambda dy, x, y: dy * rsqrt(x * x - 1.0),
    "Atanh": lambda dy, x, y: dy / (1.0 - x * x),
    "Expm1": lambda dy, x, y: dy * (y + 1.0),
    "Selu": lambda dy, x, y: where(x > 0, dy * SELU_SCALE, dy * (y + SELU_SCALE_ALPHA)),
}
for _name, _g in _G.items():
    register_gradient(_name, lambda dy, ins, outs, attrs, _g=_g: _g(dy, ins[0], outs[0]))

register_gradient("LeakyRelu", lambda dy, ins, outs, attrs: where(ins[0] > 0, dy, dy * attrs["alpha"]))
register_gradient("Cast", lambda dy, ins, outs, attrs: dy)
register_gradient("ClipByValue", lambda dy, ins, outs, attrs: clip_by_value_grad(dy, ins[0], attrs["lo"], attrs["hi"]))


def _binary_gradient(kernel):
    def register(rule):
        def fn(dy, ins, outs, attrs):
            a, b = ins
            ga, gb = rule(dy, a, b, outs[0])
            return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)

        register_gradient(kernel, fn)
        return rule

    return register


@_binary_gradient("Add")
def _add_grad(dy, a, b, y):
    return dy, dy


@_binary_gradient("Sub")
def _sub_grad(dy, a, b, y):
    return dy, -dy


@_binary_gradient("Mul")
def _mul_grad(dy, a, b, y):
    return dy * b, dy * a


@_binary_gradient("RealDiv")
def _real_div_grad(dy, a, b, y):
    return dy / b, -dy * a / (b * b)


@_binary_gradient("Mod")
def _mod_grad(dy, a, b, y):
    return dy, -dy * floor(a / b)


@_binary_gradient("Pow")
def _pow_grad(dy, a, b, y):
    safe_log = where(a > 0, log(where(a > 0, a, 1.0)), 0.0)  # d/db a**b = a**b log a, taken as 0 for a <= 0
    return dy * b * power(a, b - 1.0), dy * y * safe_log


@_binary_gradient("Maximum")
def _maximum_grad(dy, a, b, y):
    mask = a >= b
    return where(mask, dy, 0.0), where(mask, 0.0, dy)


@_binary_gradient("Minimum")
def _minimum_grad(dy, a, b, y):
    mask = a <= b
    return where(mask, dy, 0.0), where(mask, 0.0, dy)


@_binary_gradient("SquaredDifference")
def _squared_difference_grad(dy, a, b, y):
    g = dy * (a - b) * 2.0
    return g, -g


@_binary_gradient("Prelu")
def _prelu_grad(dy, a, b, y):
    negative = a < 0
    return where(negative, dy * b, dy), where(negative, dy * a, 0.0)


@_binary_gradient("Atan2")
def _atan2_grad(dy, a, b, y):
    g = dy / (a * a + b * b)
    return g * b, -g * a


@_binary_gradient("DivNoNan")
def _div_no_nan_grad(dy, a, b, y):
    return div_no_nan(dy, b), where(b == 0, 0.0, -dy * a / (b * b))


def _select_gradient(dy, ins, outs, attrs):
    cond, a, b = ins
    return None, unbroadcast(where(cond, dy, 0.0), a.shape), unbroadcast(where(cond, 0.0, dy), b.shape)


register_gradient("Select", _select_gradient)
