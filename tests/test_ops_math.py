"""Elementwise ops: unary, binary (with broadcasting and dtype promotion), where, cast, clip, operators, gradients."""

import numpy as np
import pytest

import py_engine as pe
from py_engine import DTypeError, GradientError, ShapeError
from tests.gradcheck import check_gradients

SPECIAL = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 7.25, np.nan, np.inf, -np.inf], np.float32)


def ref(fn, *arrays):
    """A numpy reference in float64, as float32 (as the engine stores it)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(np.asarray(a, np.float64) for a in arrays))).astype(np.float32)


def close(t, expected, dtype="float32", rtol=1e-6, atol=0.0):
    assert t.dtype == dtype, f"dtype {t.dtype}, expected {dtype}"
    got = t.numpy()
    assert got.shape == np.shape(expected), f"shape {got.shape}, expected {np.shape(expected)}"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "square": np.square,
    "reciprocal": lambda x: 1 / x,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "softplus": lambda x: np.logaddexp(0, x),
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "sign": np.sign,
}


# ---- unary --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float_values_and_special_values_match_numpy(name):
    out = getattr(pe, name)(pe.tensor(SPECIAL))
    close(out, ref(UNARY[name], SPECIAL), rtol=2e-6, atol=1e-37)
    grid = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    close(getattr(pe, name)(grid), ref(UNARY[name], grid), rtol=2e-6, atol=1e-7)
    assert getattr(pe.tensor(grid), name)().shape == (2, 3, 4)  # also a method
    assert getattr(pe, name)(pe.zeros((0, 3))).shape == (0, 3)
    assert getattr(pe, name)(pe.scalar(0.5)).shape == ()


def test_unary_signed_zero_and_infinities():
    assert np.signbit(pe.neg(pe.tensor([0.0])).numpy()[0])
    close(pe.rsqrt(pe.tensor([0.0, -0.0, np.inf])), [np.inf, -np.inf, 0])
    close(pe.reciprocal(pe.tensor([0.0, -0.0])), [np.inf, -np.inf])
    close(pe.log(pe.tensor([0.0, -1.0])), [-np.inf, np.nan])


def test_round_is_half_to_even():
    close(pe.round(pe.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 2.5001])), [0, 2, 2, -0, -2, -2, 2, 3])


def test_sigmoid_and_softplus_are_stable_at_extremes():
    x = pe.tensor([-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0, 1000.0])
    s, sp = pe.sigmoid(x).numpy(), pe.softplus(x).numpy()
    assert np.isfinite(s).all() and np.isfinite(sp).all()
    np.testing.assert_allclose(s, ref(_sigmoid, x.numpy()), rtol=1e-6, atol=1e-44)
    np.testing.assert_allclose(sp, ref(lambda v: np.logaddexp(0, v), x.numpy()), rtol=1e-6, atol=1e-44)
    assert s[1] > 0 and sp[1] > 0 and s[5] == 1 and sp[5] == 100  # exp(-100) survives as a denormal


def test_elu_and_leaky_relu():
    close(pe.elu(pe.tensor([-1000.0, -1.0, 2.0])), [-1, np.expm1(-1), 2])
    close(pe.leaky_relu(pe.tensor([-2.0, 3.0])), [-0.4, 3])
    close(pe.leaky_relu(pe.tensor([-2.0, 3.0]), alpha=0.5), [-1, 3])
    close(pe.leaky_relu(pe.tensor([-2, 3]), 0.25), [-0.5, 3])  # int input gives float


INT_KEEPING = {"neg": [3, 1, 0, -2, -7], "abs": [3, 1, 0, 2, 7], "square": [9, 1, 0, 4, 49]}
INT_KEEPING |= {"relu": [0, 0, 0, 2, 7], "relu6": [0, 0, 0, 2, 6], "sign": [-1, -1, 0, 1, 1]}


@pytest.mark.parametrize("name", sorted(INT_KEEPING))
def test_unary_on_int32_stays_int32(name):
    close(getattr(pe, name)(pe.tensor([-3, -1, 0, 2, 7])), INT_KEEPING[name], "int32")


@pytest.mark.parametrize("name", ["exp", "log1p", "sqrt", "sigmoid", "tanh", "floor", "round", "reciprocal", "elu"])
def test_float_math_on_int32_and_bool_gives_float32(name):
    x = np.array([0, 1, 3], np.int32)
    close(getattr(pe, name)(pe.tensor(x)), ref(UNARY[name], x), rtol=2e-6)
    close(getattr(pe, name)(pe.tensor([True, False])), ref(UNARY[name], [1, 0]), rtol=2e-6)


def test_unary_accepts_lists_and_numbers():
    close(pe.neg([1, 2]), [-1, -2], "int32")
    close(pe.exp(0), 1)
    close(pe.sqrt([[4.0, 9.0]]), [[2, 3]])


def test_unary_dtype_errors():
    b = pe.tensor([True, False])
    for op in (pe.neg, pe.abs, pe.square, pe.relu, pe.relu6, pe.sign):
        with pytest.raises(DTypeError, match=rf"{op.__name__}: x has dtype bool, expected float32 or int32"):
            op(b)
    with pytest.raises(DTypeError, match="logical_not: x has dtype float32, expected bool"):
        pe.logical_not(pe.tensor([1.0]))
    with pytest.raises(DTypeError, match="logical_not: x has dtype int32, expected bool"):
        pe.logical_not([1, 0])
    with pytest.raises(DTypeError, match="exp: cannot make a tensor of str values"):
        pe.exp("1")


def test_logical_not_and_is_nan():
    close(pe.logical_not(pe.tensor([True, False])), [False, True], "bool")
    close(~pe.tensor([[True], [False]]), [[False], [True]], "bool")
    close(pe.is_nan(pe.tensor(SPECIAL)), np.isnan(SPECIAL), "bool")
    close(pe.is_nan(pe.tensor([1, 2])), [False, False], "bool")
    close(pe.is_nan(pe.tensor([True])), [False], "bool")


def test_clip_by_value():
    close(pe.clip_by_value(pe.tensor([-2.0, 0.5, 3.0, np.nan, -np.inf]), -1, 1), [-1, 0.5, 1, np.nan, -1])
    close(pe.clip_by_value(pe.tensor([-5, 0, 5]), -2, 3), [-2, 0, 3], "int32")
    close(pe.clip_by_value(pe.tensor([-5, 0, 5]), -2.5, 2.5), [-2, 0, 2], "int32")  # the integers inside
    close(pe.clip_by_value(pe.tensor([-5, 2**31 - 1]), 0, np.inf), [0, 2**31 - 1], "int32")
    close(pe.clip_by_value([1.5, -1.5], 0, 1), [1, 0])
    close(pe.clip_by_value(pe.tensor([2.0]), 1, 1), [1])
    with pytest.raises(ValueError, match="clip_by_value: min 1 is greater than max -1"):
        pe.clip_by_value(pe.tensor([1.0]), 1, -1)
    with pytest.raises(TypeError, match="clip_by_value: the bounds must be numbers"):
        pe.clip_by_value(pe.tensor([1.0]), pe.tensor(0.0), 1)
    with pytest.raises(ValueError, match="clip_by_value: the bounds must not be NaN"):
        pe.clip_by_value(pe.tensor([1.0]), np.nan, 1)
    with pytest.raises(DTypeError, match="clip_by_value: x has dtype bool, expected float32 or int32"):
        pe.clip_by_value(pe.tensor([True]), 0, 1)


def test_cast():
    close(pe.cast(pe.tensor([-1.7, 1.7, 2.5, -0.2]), "int32"), [-1, 1, 2, 0], "int32")  # toward zero
    close(pe.cast(pe.tensor([-1.5, 0.0, np.nan, -0.0]), "bool"), [True, False, True, False], "bool")
    close(pe.cast(pe.tensor([-3, 0, 2]), pe.bool_), [True, False, True], "bool")
    close(pe.cast(pe.tensor([True, False]), float), [1, 0])
    close(pe.cast(pe.tensor([2**24 + 1]), "float32"), [2.0**24])  # rounds to the nearest float32
    close(pe.tensor([1.5]).cast("int32"), [1], "int32")
    close(pe.cast([1, 2], "float32"), [1, 2])
    x = pe.tensor([1, 2])
    same = pe.cast(x, "int32")
    assert same is not x and same.dtype == "int32"
    x.dispose()
    close(same, [1, 2], "int32")  # a view of its own, alive after x goes
    with pytest.raises(TypeError, match="cast: unsupported dtype 'string'"):
        pe.cast(same, "string")


# ---- binary -------------------------------------------------------------------------------------

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "floor_div": np.floor_divide,
    "mod": np.mod,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "squared_difference": lambda a, b: (a - b) ** 2,
}
COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float_values_match_numpy(name, rng):
    a = rng.uniform(-3, 3, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2, (3, 4)).astype(np.float32) * rng.choice([-1, 1], (3, 4)).astype(np.float32)
    if name == "pow":
        a = np.abs(a)
    close(getattr(pe, name)(a, b), ref(BINARY[name], a, b), rtol=3e-6, atol=1e-6)
    close(getattr(pe.tensor(a), name)(b), ref(BINARY[name], a, b), rtol=3e-6, atol=1e-6)  # method


@pytest.mark.parametrize("name", sorted(BINARY) + sorted(COMPARE))
def test_binary_special_values_match_numpy(name):
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    fn = {**BINARY, **COMPARE}[name]
    with np.errstate(all="ignore"):
        expected = fn(a, b)  # in float32, as the engine computes
    out = getattr(pe, name)(pe.tensor(a), pe.tensor(b))
    close(out, expected, "bool" if name in COMPARE else "float32", rtol=2e-6)


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_comparisons(name):
    a, b = np.array([1, 2, 3], np.int32), np.array([2, 2, 2], np.int32)
    close(getattr(pe, name)(a, b), COMPARE[name](a, b), "bool")
    close(getattr(pe, name)(a.astype(np.float32), 2), COMPARE[name](a, 2), "bool")
    close(getattr(pe, name)(pe.tensor(a), 2.5), COMPARE[name](a, 2.5), "bool")  # compared as floats


def test_equality_of_bools():
    t, f = pe.tensor([True, False]), pe.tensor([True, True])
    close(pe.equal(t, f), [True, False], "bool")
    close(pe.not_equal(t, f), [False, True], "bool")
    close(t == 1, [True, False], "bool")
    with pytest.raises(DTypeError, match="less: got bool operands, expected float32 or int32"):
        pe.less(t, f)


def test_int32_arithmetic():
    a, b = pe.tensor([7, -7, 7, -7, 0]), pe.tensor([2, 2, -2, -2, 3])
    close(a + b, [9, -5, 5, -9, 3], "int32")
    close(a - b, [5, -9, 9, -5, -3], "int32")
    close(a * b, [14, -14, -14, 14, 0], "int32")
    close(a // b, [3, -4, -4, 3, 0], "int32")  # floors, as Python
    close(a % b, [1, 1, -1, -1, 0], "int32")  # the sign of the divisor, as Python
    close(pe.maximum(a, b), [7, 2, 7, -2, 3], "int32")
    close(pe.squared_difference(a, b), [25, 81, 81, 25, 9], "int32")
    close(pe.pow(pe.tensor([2, -3, 5]), pe.tensor([10, 3, 0])), [1024, -27, 1], "int32")
    close(pe.pow(pe.tensor([2, 1, -1, 4]), pe.tensor([-1, -2, -3, -1])), [0, 1, -1, 0], "int32")  # truncated
    close(pe.tensor([2**30]) * 2, [-(2**31)], "int32")  # wraps, as int32 arithmetic does


def test_division_of_integers_gives_float32():
    close(pe.div(pe.tensor([7, -7, 1]), pe.tensor([2, 2, 0])), [3.5, -3.5, np.inf])
    close(pe.tensor([1]) / pe.tensor([4]), [0.25])
    close(pe.tensor([True]) / 2, [0.5])
    close(3 / pe.tensor([2]), [1.5])


def test_python_number_promotion():
    i, f, b = pe.tensor([1, 2]), pe.tensor([1.0, 2.0]), pe.tensor([True, False])
    close(i * 2, [2, 4], "int32")
    close(i * 2.5, [2.5, 5], "float32")
    close(2.5 * i, [2.5, 5], "float32")
    close(i + np.float64(0.5), [1.5, 2.5], "float32")
    close(i + np.int64(3), [4, 5], "int32")
    close(b + 1, [2, 1], "int32")
    close(1 + b, [2, 1], "int32")
    close(b * 1.5, [1.5, 0], "float32")
    close(f + True, [2, 3], "float32")
    close(i + True, [2, 3], "int32")
    close(f * 2, [2, 4], "float32")


def test_tensor_dtype_promotion():
    i, f, b = pe.tensor([1, 2]), pe.tensor([0.5, 0.5]), pe.tensor([True, False])
    close(i + f, [1.5, 2.5], "float32")
    close(f + i, [1.5, 2.5], "float32")
    close(b + i, [2, 2], "int32")
    close(pe.maximum(b, f), [1, 0.5], "float32")
    close(i + np.array([0.5, 1.5]), [1.5, 3.5], "float32")  # a float64 array counts as float
    close(i + [1, 2], [2, 4], "int32")
    with pytest.raises(DTypeError, match="add: got bool operands, expected float32 or int32"):
        b + b
    with pytest.raises(DTypeError, match="add: integer values outside the int32 range"):
        i + 2**40


def test_logical_and_or():
    a, b = pe.tensor([True, True, False, False]), pe.tensor([True, False, True, False])
    close(pe.logical_and(a, b), [True, False, False, False], "bool")
    close(pe.logical_or(a, b), [True, True, True, False], "bool")
    close(a & b, [True, False, False, False], "bool")
    close(a | b, [True, True, True, False], "bool")
    close(a & True, [True, True, False, False], "bool")
    close(False | a, [True, True, False, False], "bool")
    close(np.array([True, False, True, False]) & a, [True, False, False, False], "bool")
    close(
        pe.logical_and(pe.tensor([[True], [False]]), pe.tensor([True, False])), [[True, False], [False, False]], "bool"
    )
    with pytest.raises(DTypeError, match="logical_and: got int32 operands, expected bool"):
        pe.logical_and(pe.tensor([1]), pe.tensor([0]))
    with pytest.raises(DTypeError, match="logical_or: got int32 operands, expected bool"):
        a | 0
    with pytest.raises(DTypeError, match="logical_and: got float32 operands, expected bool"):
        pe.tensor([1.0]) & pe.tensor([1.0])


# ---- broadcasting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((2, 3), (3,)),
        ((3,), (2, 3)),
        ((2, 1, 3), (4, 1)),
        ((1,), ()),
        ((), (2, 2)),
        ((2, 0), (1,)),
        ((0, 3), (5, 1, 1)),
    ],
)
def test_broadcasting(sa, sb, rng):
    a, b = rng.normal(size=sa).astype(np.float32), rng.normal(size=sb).astype(np.float32)
    close(pe.add(a, b), a + b)
    close(pe.mul(b, a), b * a)
    close(pe.greater(a, b), a > b, "bool")
    close(pe.where(pe.tensor(a > 0), a, b), np.where(a > 0, a, b))


def test_broadcast_errors_name_the_op_shapes_and_dimension():
    with pytest.raises(
        ShapeError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast: dimension -1 is 3 vs 4"
    ):
        pe.add(pe.ones((2, 3)), pe.ones((4,)))
    with pytest.raises(ShapeError, match=r"mul: shapes \(0,\) and \(2,\) cannot be broadcast"):
        pe.ones((0,)) * pe.ones((2,))  # size 0 only broadcasts against 1
    with pytest.raises(ShapeError, match=r"less: shapes \(2, 3, 4\) and \(5, 4\) cannot be broadcast: dimension -2"):
        pe.ones((2, 3, 4)) < pe.ones((5, 4))  # noqa: B015


# ---- operators ----------------------------------------------------------------------------------


def test_python_operators():
    a, b = pe.tensor([[6.0, -7.0]]), pe.tensor([[4.0], [2.0]])
    an, bn = a.numpy(), b.numpy()
    close(a + b, an + bn)
    close(a - b, an - bn)
    close(a * b, an * bn)
    close(a / b, an / bn)
    close(a // b, an // bn)
    close(a % b, an % bn)
    close(b**a, bn**an)
    close(-a, -an)
    close(abs(a), np.abs(an))
    close(a < b, an < bn, "bool")
    close(a <= b, an <= bn, "bool")
    close(a > b, an > bn, "bool")
    close(a >= b, an >= bn, "bool")
    close(a == b, an == bn, "bool")
    close(a != b, an != bn, "bool")
    close(pe.tensor([[1.0, 2.0]]) @ pe.tensor([[3.0], [4.0]]), [[11]])


def test_reflected_operators_with_numbers():
    x = pe.tensor([1, 2, 4])
    close(10 + x, [11, 12, 14], "int32")
    close(10 - x, [9, 8, 6], "int32")
    close(10 * x, [10, 20, 40], "int32")
    close(10 / x, [10, 5, 2.5])
    close(10 // x, [10, 5, 2], "int32")
    close(-7 % x, [0, 1, 1], "int32")
    close(2**x, [2, 4, 16], "int32")
    close(0.5**x, [0.5, 0.25, 0.0625])
    close(x**0.5, [1, np.sqrt(2), 2], rtol=1e-6)
    close(2 < x, [False, False, True], "bool")  # noqa: SIM300 - Python turns it into x > 2
    close(2 == x, [False, True, False], "bool")  # noqa: SIM300
    close(2.5 >= x, [True, True, False], "bool")  # noqa: SIM300


def test_reflected_operators_with_numpy_arrays():
    x = pe.tensor([1.0, 2.0, 4.0])
    n = np.array([8.0, 8.0, 8.0])
    for result, expected in [
        (n + x, [9, 10, 12]),
        (n - x, [7, 6, 4]),
        (n * x, [8, 16, 32]),
        (n / x, [8, 4, 2]),
        (n // x, [8, 4, 2]),
        (n % x, [0, 0, 0]),
        (n**x, [8, 64, 4096]),
    ]:
        assert isinstance(result, pe.Tensor)
        close(result, expected)
    close(np.array([1, 3, 4]) < x, [False, False, False], "bool")
    close(np.array([1, 3, 4]) > x, [False, True, False], "bool")
    close(np.eye(2) @ pe.tensor([[1.0, 2.0], [3.0, 4.0]]), [[1, 2], [3, 4]])
    close([[0.0, 1.0], [1.0, 0.0]] @ pe.tensor([[1.0, 2.0], [3.0, 4.0]]), [[3, 4], [1, 2]])


def test_operators_reject_values_that_are_not_numbers():
    with pytest.raises(DTypeError, match="add: cannot make a tensor of str values"):
        pe.tensor([1]) + "a"
    with pytest.raises(DTypeError, match="equal: cannot make a tensor of NoneType values"):
        pe.equal(pe.tensor([1]), None)
    assert (pe.tensor([1]) == None) is False  # noqa: E711 - Python's identity fallback, as for `t in [None]`


# ---- where --------------------------------------------------------------------------------------


def test_where():
    cond = pe.tensor([[True], [False]])
    close(pe.where(cond, pe.tensor([1, 2]), pe.tensor([9, 8])), [[1, 2], [9, 8]], "int32")
    close(pe.where(pe.tensor([True, False]), pe.tensor([1, 2]), 0.5), [1, 0.5])
    close(pe.where([True, False], 1, 2), [1, 2], "int32")
    close(pe.where([True, False], pe.tensor([1, 2]), pe.tensor([3, 4])), [1, 4], "int32")
    close(pe.where(pe.tensor(True), pe.tensor([1.0, 2.0]), 0.0), [1, 2])
    close(pe.where(pe.ones((2, 3), "bool"), pe.tensor([1, 2, 3]), 0), [[1, 2, 3]] * 2, "int32")
    close(pe.where(pe.tensor([True, False]), pe.tensor([np.nan, 1.0]), np.inf), [np.nan, np.inf])
    close(pe.where(pe.tensor([True, False]), pe.tensor([True, True]), pe.tensor([False, False])), [True, False], "bool")
    assert pe.where(pe.zeros((0, 2), "bool"), 1.0, 2.0).shape == (0, 2)


def test_where_errors():
    with pytest.raises(DTypeError, match="where: condition has dtype int32, expected bool"):
        pe.where(pe.tensor([1, 0]), 1, 2)
    with pytest.raises(ShapeError, match=r"where: shapes \(3,\) and \(2,\) cannot be broadcast"):
        pe.where(pe.tensor([True, False, True]), pe.tensor([1, 2]), 0)
    with pytest.raises(ShapeError, match="where: shapes"):
        pe.where(pe.tensor([True, False]), pe.ones((3, 1)), pe.ones((3,)))


def test_ops_release_their_temporaries():
    x, cond = pe.tensor([[1.0, 2.0]]), pe.tensor([True, False])
    before = pe.memory().num_tensors
    outs = [
        pe.add(x, 1),
        pe.div(pe.tensor([1]), pe.tensor([2])),
        pe.where(cond, 1, 2.5),
        pe.exp([1, 2]),
        pe.clip_by_value([1, 2], 0, 1),
        3 - x,
        pe.leaky_relu([1, -1]),
        pe.logical_and(cond, True),
    ]
    assert pe.memory().num_tensors == before + len(outs) + 2  # the two tensors made for div's arguments


def test_failing_ops_leave_no_tensors():
    calls = [
        lambda: pe.neg([True]),
        lambda: pe.logical_not([1, 0]),
        lambda: pe.clip_by_value([True], 0, 1),
        lambda: pe.add([True], [False]),
        lambda: pe.add([1, 2], [1.5, 2, 3]),
        lambda: pe.div([1, 2], [1, 2, 3]),
        lambda: pe.where([1], 1, 2),
        lambda: pe.where([True, False], [1, 2, 3], 0.5),
    ]
    before = pe.memory().num_tensors
    for call in calls:
        with pytest.raises((DTypeError, ShapeError)):
            call()
    assert pe.memory().num_tensors == before


# ---- gradients ----------------------------------------------------------------------------------

MIXED = np.array([[-1.7, -0.6, 0.4], [0.9, 1.3, 2.2]], np.float32)  # clear of 0 and of each kink
POSITIVE = np.array([[0.3, 0.7, 1.1], [1.6, 2.4, 3.0]], np.float32)
SIX = np.array([[-1.7, -0.6, 0.4], [5.2, 6.5, 7.8]], np.float32)

GRAD_INPUTS = {"log": POSITIVE, "sqrt": POSITIVE, "rsqrt": POSITIVE, "relu6": SIX, "log1p": MIXED / 2}


@pytest.mark.parametrize(
    "name", [n for n in sorted(UNARY) if n not in ("floor", "ceil", "round", "sign")]
)  # those four: test_non_differentiable_ops
def test_unary_gradients(name):
    check_gradients(getattr(pe, name), GRAD_INPUTS.get(name, MIXED))


def test_leaky_relu_and_clip_and_cast_gradients():
    check_gradients(lambda x: pe.leaky_relu(x, 0.3), MIXED)
    check_gradients(lambda x: pe.clip_by_value(x, -1, 1), MIXED)
    check_gradients(lambda x: pe.cast(x, "float32") * x, MIXED)


BINARY_GRAD_INPUTS = {
    "div": (MIXED, POSITIVE),
    "pow": (POSITIVE, MIXED),
    "mod": (np.array([[5.3, -2.2, 0.7], [3.9, -4.6, 1.4]], np.float32), np.array([[2.0, 1.5, -0.9]] * 2, np.float32)),
}


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "squared_difference", "mod"])
def test_binary_gradients(name):
    a, b = BINARY_GRAD_INPUTS.get(name, (MIXED, POSITIVE[::-1] - 1.05))
    check_gradients(getattr(pe, name), a, b)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "squared_difference"])
def test_binary_gradients_with_broadcasting_both_ways(name):
    big = np.array([[[0.6, 1.4, 2.1], [0.9, 1.8, 0.35]]], np.float32)  # (1, 2, 3)
    small = np.array([[1.25], [0.45]], np.float32)  # (2, 1): broadcast against big's 3, and big against its 2
    check_gradients(getattr(pe, name), big, small)
    check_gradients(getattr(pe, name), small, big)
    check_gradients(getattr(pe, name), np.float32(1.1), big)  # a scalar against a tensor


def test_pow_gradient_with_a_negative_base_and_a_constant_exponent():
    check_gradients(lambda a: pe.pow(a, 3.0), MIXED)
    check_gradients(lambda a: a**2, MIXED)


def test_where_gradients_reach_both_branches():
    cond = pe.tensor([[True, False, True], [False, False, True]])
    check_gradients(lambda a, b: pe.where(cond, a, b), MIXED, POSITIVE)
    check_gradients(lambda a, b: pe.where(cond, a, b), MIXED[:1], POSITIVE[:, :1])  # broadcast branches
    check_gradients(lambda a: pe.where(cond, a, 0.0) + pe.where(cond, 1.0, a * 2), MIXED)


def test_non_differentiable_ops_give_zero_gradients():
    x = pe.tensor(MIXED)
    for op in (pe.floor, pe.ceil, pe.round, pe.sign):
        g = pe.grad(lambda x, op=op: (op(x) * x).sum())(x)  # d(op(x) * x) = op(x) when op' = 0
        close(g, op(x).numpy())
    g = pe.grads(lambda a, b: (a // b).sum() + (a * 0).sum())(x, pe.tensor(POSITIVE))
    close(g[0], np.zeros((2, 3)))
    close(g[1], np.zeros((2, 3)))


def test_comparisons_give_no_gradient():
    x = pe.tensor(MIXED)
    with pytest.raises(GradientError, match="the result does not depend on it through float operations"):
        pe.grad(lambda x: pe.cast(x > 0, "float32").sum())(x)
    with pytest.raises(GradientError, match="cannot compute the gradient"):
        pe.grad(lambda x: pe.cast(pe.logical_and(x > 0, x < 1), "float32").sum())(x)
    close(pe.grad(lambda x: pe.where(x > 0, x, 0.0).sum())(x), MIXED > 0)  # only the selected branch counts


def test_add_n_sums_a_list_and_frees_its_partial_sums():
    a, b, c = pe.tensor([1.0, 2.0]), pe.tensor([10.0, 20.0]), pe.tensor([100.0, 200.0])
    total = pe.add_n([a, b, c])
    assert total.numpy().tolist() == [111.0, 222.0] and pe.memory().num_tensors == 4
    assert pe.add_n([a]).numpy().tolist() == [1.0, 2.0]
    assert pe.add_n([[1, 2], [3, 4]]).dtype == "int32"
    with pytest.raises(
        ValueError,
        match=r"add_n: every tensor must have the shape and dtype of the first, float32 \(2,\); tensor 1 is float32 \(3,\)",
    ):
        pe.add_n([a, pe.tensor([1.0, 2.0, 3.0])])
    with pytest.raises(TypeError, match="add_n: expected a non-empty list of tensors"):
        pe.add_n(a)
    check_gradients(lambda x: pe.add_n([x, x * 2.0, x]), np.linspace(-1, 1, 6).reshape(2, 3))


def test_prelu_and_the_float_tests():
    x = pe.tensor([[-2.0, 0.0, 3.0], [-1.0, -0.5, np.nan]])
    want = np.array([[-0.2, 0, 3], [-0.1, -0.1, np.nan]], np.float32)
    np.testing.assert_array_equal(pe.prelu(x, pe.tensor([0.1, 0.2, 0.3])).numpy(), want)
    assert pe.prelu(pe.tensor([-4, 4]), 2).numpy().tolist() == [-8, 4]
    edges = pe.tensor([np.inf, -np.inf, np.nan, 0.0])
    assert pe.is_inf(edges).numpy().tolist() == [True, True, False, False]
    assert pe.is_finite(edges).numpy().tolist() == [False, False, False, True]
    assert pe.is_finite(pe.tensor([1, 2])).numpy().tolist() == [True, True]
    assert pe.div_no_nan(pe.tensor([np.nan, 1.0, 3.0]), pe.tensor([0.0, 0.0, 2.0])).numpy().tolist() == [0, 0, 1.5]
    assert pe.bitwise_and(pe.tensor([12, -1]), 10).numpy().tolist() == [8, 10]
    with pytest.raises(DTypeError, match="bitwise_and: got float32 operands, expected int32"):
        pe.bitwise_and(pe.tensor([1.0]), pe.tensor([1.0]))


def test_gradients_of_the_inverse_and_hyperbolic_functions():
    x = np.linspace(-0.9, 0.9, 12).reshape(3, 4)
    for op in (pe.tan, pe.asin, pe.acos, pe.atan, pe.sinh, pe.cosh, pe.asinh, pe.atanh, pe.expm1, pe.selu):
        check_gradients(op, x)
    check_gradients(pe.acosh, x + 2.0)
    check_gradients(lambda a: pe.prelu(a, pe.tensor([0.1, 0.2, 0.3, 0.4])), x)
    check_gradients(lambda a: pe.prelu(pe.tensor(x), a), np.array([0.1, 0.2, 0.3, 0.4]))
    check_gradients(lambda a: pe.atan2(a, pe.tensor(x[::-1] + 0.05)), x)
    check_gradients(lambda b: pe.atan2(pe.tensor(x), b), x[::-1] + 0.05)
    check_gradients(lambda a: pe.div_no_nan(a, pe.tensor([0.0, 1.0, -2.0, 0.5])), x)
