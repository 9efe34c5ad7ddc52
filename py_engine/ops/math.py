"""Elementwise ops (unary, binary with NumPy broadcasting, where, cast, clip) and their gradients."""

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "add_n",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "cast",
    "ceil",
    "clip_by_value",
    "cos",
    "cosh",
    "div",
    "div_no_nan",
    "elu",
    "equal",
    "erf",
    "exp",
    "expm1",
    "floor",
    "floor_div",
    "greater",
    "greater_equal",
    "is_finite",
    "is_inf",
    "is_nan",
    "leaky_relu",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "maximum",
    "minimum",
    "mod",
    "mul",
    "neg",
    "not_equal",
    "pow",
    "prelu",
    "reciprocal",
    "relu",
    "relu6",
    "round",
    "rsqrt",
    "selu",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softplus",
    "sqrt",
    "square",
    "squared_difference",
    "sub",
    "tan",
    "tanh",
    "where",
]

import math
import numbers

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError
from ..tensor import Tensor
from .check import broadcast_shapes, dtype_in
from .indexing import argwhere
from .operands import as_temporary, binary_operands, host_array, release, run
from .operands import cast as _cast_tensor

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_
NUMERIC = (F32, I32)


def _unary_input(op, x, allowed, to_float):
    """(x, temps): x as a tensor of an allowed dtype; float-only math casts int/bool to float32."""
    temps = []
    if type(x) is not Tensor:
        x = as_temporary(x, op, temps)
    if to_float and x.dtype != F32:
        x = as_temporary(x, op, temps, F32)
    try:
        dtype_in(op, x, allowed)
    except DTypeError:
        release(temps)
        raise
    return x, temps


def _unary(op, kernel, allowed=NUMERIC, to_float=False, doc=""):
    def fn(x) -> Tensor:
        x, temps = _unary_input(op, x, allowed, to_float)
        return run(kernel, (x,), None, temps)

    fn.__name__, fn.__doc__ = op, doc
    return fn


neg = _unary("neg", "Neg", doc="-x")
abs = _unary("abs", "Abs", doc="|x|")
square = _unary("square", "Square", doc="x * x")
relu = _unary("relu", "Relu", doc="max(x, 0)")
relu6 = _unary("relu6", "Relu6", doc="min(max(x, 0), 6)")
sign = _unary("sign", "Sign", doc="-1, 0 or 1 by the sign of x")
exp = _unary("exp", "Exp", to_float=True)
log = _unary("log", "Log", to_float=True)
log1p = _unary("log1p", "Log1p", to_float=True, doc="log(1 + x), accurate for small x")
sqrt = _unary("sqrt", "Sqrt", to_float=True)
rsqrt = _unary("rsqrt", "Rsqrt", to_float=True, doc="1 / sqrt(x)")
reciprocal = _unary("reciprocal", "Reciprocal", to_float=True, doc="1 / x")
elu = _unary("elu", "Elu", to_float=True, doc="x if x > 0 else exp(x) - 1")
sigmoid = _unary("sigmoid", "Sigmoid", to_float=True)
tanh = _unary("tanh", "Tanh", to_float=True)
softplus = _unary("softplus", "Softplus", to_float=True, doc="log(1 + exp(x))")
erf = _unary("erf", "Erf", to_float=True, doc="the error function, 2 / sqrt(pi) * integral of exp(-t^2) from 0 to x")
sin = _unary("sin", "Sin", to_float=True)
cos = _unary("cos", "Cos", to_float=True)
floor = _unary("floor", "Floor", to_float=True)
ceil = _unary("ceil", "Ceil", to_float=True)
round = _unary("round", "Round", to_float=True, doc="round half to even, as TensorFlow")
tan = _unary("tan", "Tan", to_float=True)
asin = _unary("asin", "Asin", to_float=True, doc="arcsine; NaN outside [-1, 1]")
acos = _unary("acos", "Acos", to_float=True, doc="arccosine; NaN outside [-1, 1]")
atan = _unary("atan", "Atan", to_float=True, doc="arctangent")
sinh = _unary("sinh", "Sinh", to_float=True)
cosh = _unary("cosh", "Cosh", to_float=True)
asinh = _unary("asinh", "Asinh", to_float=True, doc="inverse hyperbolic sine")
acosh = _unary("acosh", "Acosh", to_float=True, doc="inverse hyperbolic cosine; NaN below 1")
atanh = _unary("atanh", "Atanh", to_float=True, doc="inverse hyperbolic tangent; +-inf at +-1, NaN outside [-1, 1]")
expm1 = _unary("expm1", "Expm1", to_float=True, doc="exp(x) - 1, accurate for small x")
selu = _unary(
    "selu", "Selu", to_float=True, doc="scale * x if x > 0 else scale * alpha * (exp(x) - 1), TF.js's constants"
)
logical_not = _unary("logical_not", "LogicalNot", allowed=(BOOL,))
is_nan = _unary("is_nan", "IsNan", allowed=(F32, I32, BOOL))
is_inf = _unary("is_inf", "IsInf", allowed=(F32, I32, BOOL), doc="True where x is +inf or -inf")
is_finite = _unary("is_finite", "IsFinite", allowed=(F32, I32, BOOL), doc="True where x is neither NaN nor infinite")


def cast(x, dtype) -> Tensor:
    """x as `dtype` (float -> int32 truncates toward zero; nonzero -> True); a view when x has that dtype."""
    if isinstance(x, Tensor):
        return _cast_tensor(x, dtype)
    return ENGINE.from_numpy(*host_array(x, dtype, "cast"))


def leaky_relu(x, alpha=0.2) -> Tensor:
    x, temps = _unary_input("leaky_relu", x, (F32,), True)
    return run("LeakyRelu", (x,), {"alpha": float(alpha)}, temps)


def clip_by_value(x, clip_value_min, clip_value_max) -> Tensor:
    if not (isinstance(clip_value_min, numbers.Real) and isinstance(clip_value_max, numbers.Real)):
        raise TypeError(f"clip_by_value: the bounds must be numbers, got {clip_value_min!r} and {clip_value_max!r}")
    if math.isnan(clip_value_min) or math.isnan(clip_value_max):
        raise ValueError(f"clip_by_value: the bounds must not be NaN, got {clip_value_min} and {clip_value_max}")
    if clip_value_min > clip_value_max:
        raise ValueError(f"clip_by_value: min {clip_value_min} is greater than max {clip_value_max}")
    x, temps = _unary_input("clip_by_value", x, NUMERIC, False)
    if x.dtype == F32:
        lo, hi = float(clip_value_min), float(clip_value_max)
    else:  # the integers within [min, max], the bounds kept in the int32 range
        lo, hi = math.ceil(max(clip_value_min, -(2**31))), math.floor(min(clip_value_max, 2**31 - 1))
    return run("ClipByValue", (x,), {"lo": lo, "hi": hi}, temps)


# The activations whose derivative activation_grad computes from their output y, as one kernel.
GRAD_FROM_OUTPUT = ("relu", "relu6", "sigmoid", "tanh", "elu", "softplus")


def activation_grad(dy, y, activation):
    """dy through `activation`, from its float32 output y of dy's shape: one "ActivationGrad" kernel where the
    derivative written in ops (relu's dy * cast(y > 0): a compare, a cast and a multiply) takes a dispatch, an
    intermediate buffer and, in a first training step, a pipeline each. What the gradient rules (relu, sigmoid...)
    and the fused convolutions' backward pass use; not differentiable itself."""
    if activation not in GRAD_FROM_OUTPUT:
        raise ValueError(
            f"activation_grad: activation must be one of {', '.join(GRAD_FROM_OUTPUT)}; got {activation!r}"
        )
    _gradient_operands("activation_grad", dy, y, "y")
    return ENGINE.run_kernel("ActivationGrad", (dy, y), {"activation": activation})


def clip_by_value_grad(dy, x, lo, hi):
    """dy where lo <= x <= hi, else 0 (NaN x included): clip_by_value's gradient as one "ClipByValueGrad" kernel
    (written in ops it took four: two compares, a logical and and a select). x and dy float32, of one shape."""
    _gradient_operands("clip_by_value_grad", dy, x, "x")
    return ENGINE.run_kernel("ClipByValueGrad", (dy, x), {"lo": float(lo), "hi": float(hi)})


def _gradient_operands(op, dy, value, name):
    """A derivative kernel's operands: dy and the op's input or output `name`, float32 tensors of one shape."""
    if dy.dtype != F32 or value.dtype != F32 or dy.shape != value.shape:
        raise ValueError(
            f"{op}: dy and {name} must be float32 tensors of one shape, got {dy.dtype} {dy.shape} and "
            f"{value.dtype} {value.shape}"
        )


def _binary(op, kernel, allowed=NUMERIC, result=None, doc=""):
    """result=F32 makes integer operands float first (true division)."""

    def fn(a, b) -> Tensor:
        plain = type(a) is Tensor and type(b) is Tensor and a.dtype == b.dtype and a.shape == b.shape
        if plain and a.dtype in allowed and (result is None or a.dtype == result):  # nothing to convert or check
            return ENGINE.run_kernel(kernel, (a, b))
        a, b, temps = binary_operands(op, a, b)
        try:
            if result == F32 and a.dtype != F32:
                a, b = as_temporary(a, op, temps, F32), as_temporary(b, op, temps, F32)
            if a.dtype not in allowed:
                raise DTypeError(f"{op}: got {a.dtype} operands, expected {' or '.join(allowed)}")
            if a.shape != b.shape:
                broadcast_shapes(op, a.shape, b.shape)
            return ENGINE.run_kernel(kernel, (a, b))
        finally:
            release(temps)

    fn.__name__, fn.__doc__ = op, doc
    return fn


add = _binary("add", "Add", doc="a + b")
sub = _binary("sub", "Sub", doc="a - b")
mul = _binary("mul", "Mul", doc="a * b")
div = _binary("div", "RealDiv", result=F32, doc="a / b; integers are divided as floats, as Python's /")
floor_div = _binary("floor_div", "FloorDiv", doc="a // b")
mod = _binary("mod", "Mod", doc="a % b, with the sign of b as Python's %")
pow = _binary("pow", "Pow", doc="a ** b")
maximum = _binary("maximum", "Maximum")
minimum = _binary("minimum", "Minimum")
squared_difference = _binary("squared_difference", "SquaredDifference", doc="(a - b) ** 2")
equal = _binary("equal", "Equal", allowed=(F32, I32, BOOL))
not_equal = _binary("not_equal", "NotEqual", allowed=(F32, I32, BOOL))
less = _binary("less", "Less")
less_equal = _binary("less_equal", "LessEqual")
greater = _binary("greater", "Greater")
greater_equal = _binary("greater_equal", "GreaterEqual")
logical_and = _binary("logical_and", "LogicalAnd", allowed=(BOOL,))
bitwise_and = _binary("bitwise_and", "BitwiseAnd", allowed=(I32,), doc="a & b, bit by bit, on int32")
prelu = _binary(
    "prelu", "Prelu", doc="x where x >= 0, else alpha * x (alpha broadcasts against x); as TF.js's prelu(x, alpha)"
)
atan2 = _binary(
    "atan2", "Atan2", result=F32, doc="the angle of the point (b, a), in [-pi, pi], as numpy's arctan2(a, b)"
)
div_no_nan = _binary(
    "div_no_nan",
    "DivNoNan",
    result=F32,
    doc="a / b, but 0 where b is 0 (whatever a is); integers are divided as floats",
)
logical_or = _binary("logical_or", "LogicalOr", allowed=(BOOL,))


def add_n(tensors) -> Tensor:
    """The sum of a list of tensors of one shape and dtype, as TF.js's addN (AddN)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError(f"add_n: expected a non-empty list of tensors, got {tensors!r:.80}")
    temps = []
    try:
        tensors = [as_temporary(t, "add_n", temps) for t in tensors]
        first = tensors[0]
        for k, t in enumerate(tensors):
            if (t.shape, t.dtype) != (first.shape, first.dtype):
                raise ValueError(
                    f"add_n: every tensor must have the shape and dtype of the first, {first.dtype} {first.shape}; "
                    f"tensor {k} is {t.dtype} {t.shape}"
                )
        dtype_in("add_n", first, NUMERIC)
        if len(tensors) == 1:
            return ENGINE.view(first, first.shape)
        total = ENGINE.run_kernel("Add", (tensors[0], tensors[1]))
        for t in tensors[2:]:
            total, partial = ENGINE.run_kernel("Add", (total, t)), total
            partial.dispose()
        return total
    finally:
        release(temps)


def where(condition, a=None, b=None) -> Tensor:
    """Elements of a where condition is true, else of b; all three broadcast together. With condition alone: the
    coordinates of its true elements (argwhere), as TensorFlow's tf.where."""
    if a is None and b is None:
        return argwhere(condition)
    if a is None or b is None:
        raise TypeError("where: give both a and b (pick from them), or neither (the coordinates of the true elements)")
    a, b, temps = binary_operands("where", a, b)
    try:
        condition = as_temporary(condition, "where", temps)
        if condition.dtype != BOOL:
            raise DTypeError(f"where: condition has dtype {condition.dtype}, expected bool (compare first, e.g. x > 0)")
        broadcast_shapes("where", condition.shape, broadcast_shapes("where", a.shape, b.shape))
        return ENGINE.run_kernel("Select", (condition, a, b))
    finally:
        release(temps)
