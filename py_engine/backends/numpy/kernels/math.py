"""Elementwise numpy kernels: unary, binary, select, cast, clip, and the fused rules of ops.elementwise_rules."""

import numpy as np

from ....dtypes import NUMPY
from ....kernel_registry import get_kernel, register_kernel
from ....selu_constants import SELU_SCALE, SELU_SCALE_ALPHA


def _sigmoid(x):
    e = np.exp(-np.abs(x))  # never overflows: stable for both signs
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


# Eigen's (and so TensorFlow's and XLA's) float32 erf: an odd rational function on [-4, 4], within 4 ulp of erf; past
# 4 erf is +-1 in float32. The webgpu kernel evaluates the same polynomials in the same order.
ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def _erf(x):
    x = np.clip(x, np.float32(-4), np.float32(4))
    x2 = x * x
    p, q = np.float32(ERF_ALPHA[0]), np.float32(ERF_BETA[0])
    for a in ERF_ALPHA[1:]:
        p = p * x2 + np.float32(a)
    for b in ERF_BETA[1:]:
        q = q * x2 + np.float32(b)
    return (x * p / q).astype(x.dtype)


def _selu(x):
    return np.where(x > 0, np.float32(SELU_SCALE) * x, np.float32(SELU_SCALE_ALPHA) * np.expm1(np.minimum(x, 0)))


def _pow(a, b):
    if a.dtype.kind == "i" and np.any(b < 0):  # numpy refuses negative integer powers of integers
        return np.trunc(np.power(a.astype(np.float64), b)).astype(a.dtype)
    return np.power(a, b)


UNARY = {
    "Neg": np.negative,
    "Abs": np.abs,
    "Exp": np.exp,
    "Log": np.log,
    "Log1p": np.log1p,
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1 / np.sqrt(x),
    "Square": np.square,
    "Reciprocal": lambda x: 1 / x,
    "Relu": lambda x: np.maximum(x, 0).astype(x.dtype),
    "Relu6": lambda x: np.clip(x, 0, 6).astype(x.dtype),
    "Elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "Sigmoid": _sigmoid,
    "Tanh": np.tanh,
    "Softplus": lambda x: np.logaddexp(np.float32(0), x),
    "Erf": _erf,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Asin": np.arcsin,
    "Acos": np.arccos,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Asinh": np.arcsinh,
    "Acosh": np.arccosh,
    "Atanh": np.arctanh,
    "Expm1": np.expm1,
    "Selu": _selu,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.round,  # half to even, as TensorFlow
    "Sign": np.sign,
    "LogicalNot": np.logical_not,
    "IsNan": np.isnan,
    "IsInf": np.isinf,
    "IsFinite": np.isfinite,
}

BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "RealDiv": np.true_divide,
    "FloorDiv": np.floor_divide,
    "Mod": np.mod,  # the result takes the divisor's sign, as Python's %
    "Pow": _pow,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
    "SquaredDifference": lambda a, b: np.square(a - b),
    "Prelu": lambda a, b: np.where(a < 0, a * b, a),
    "Atan2": np.arctan2,
    "DivNoNan": lambda a, b: np.where(b == 0, np.float32(0), a / b),
    "BitwiseAnd": np.bitwise_and,
    "Equal": np.equal,
    "NotEqual": np.not_equal,
    "Less": np.less,
    "LessEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and,
    "LogicalOr": np.logical_or,
}

for _name, _fn in {**UNARY, **BINARY}.items():
    register_kernel(_name, "numpy", _fn)

register_kernel("LeakyRelu", "numpy", lambda x, alpha: np.where(x > 0, x, x * np.float32(alpha)))
register_kernel("Select", "numpy", lambda cond, a, b: np.where(cond, a, b))


def cast(x, dtype):
    return x.astype(NUMPY[dtype])


register_kernel("Cast", "numpy", cast)


def clip_by_value(x, lo, hi):
    return np.clip(x, lo, hi).astype(x.dtype)


register_kernel("ClipByValue", "numpy", clip_by_value)


# ops.math.activation_grad: the derivative written in ops, step by step in float32 as those ops compute it
_ONE = np.float32(1)
ACTIVATION_GRAD = {
    "relu": lambda dy, y: dy * (y > 0).astype(np.float32),
    "relu6": lambda dy, y: dy * ((y > 0) & (y < 6)).astype(np.float32),
    "sigmoid": lambda dy, y: dy * y * (_ONE - y),
    "tanh": lambda dy, y: dy * (_ONE - y * y),
    "elu": lambda dy, y: np.where(y > 0, dy, dy * (y + _ONE)),
    "softplus": lambda dy, y: dy * (_ONE - np.exp(-y)),
}
register_kernel("ActivationGrad", "numpy", lambda dy, y, activation: ACTIVATION_GRAD[activation](dy, y))


def clip_by_value_grad(dy, x, lo, hi):
    return np.where((x >= lo) & (x <= hi), dy, np.float32(0))


register_kernel("ClipByValueGrad", "numpy", clip_by_value_grad)


def fused_elementwise(*arrays, program):
    """ops.elementwise_rules's traced rule: each step by its op's own kernel, so the values are those of the ops one at a time;
    every output has the tensors' shape (a value computed from scalars alone is broadcast to it)."""
    values = list(arrays[: program.tensors])
    if program.scalars:
        values += list(arrays[program.tensors])  # float32 numbers, as a scalar tensor's element
    for name, args in program.steps:
        values.append(get_kernel(name, "numpy")(*(values[a] for a in args)))
    shape = arrays[0].shape
    return tuple(
        values[o] if np.shape(values[o]) == shape else np.broadcast_to(values[o], shape) for o in program.outputs
    )


register_kernel("FusedElementwise", "numpy", fused_elementwise)
