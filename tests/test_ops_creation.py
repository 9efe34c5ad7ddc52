"""Creation ops: tensor, scalar, fill, zeros/ones(_like), arange, linspace, eye, one_hot, random ops, set_seed."""

import numpy as np
import pytest

import py_engine as pe
from py_engine import DTypeError, ShapeError


def check(t, expected, dtype):
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(expected))
    assert t.numpy().dtype == np.dtype(dtype)


# ---- tensor, scalar -----------------------------------------------------------------------------


def test_tensor_from_numbers_and_nested_lists():
    check(pe.tensor(3), 3, "int32")
    check(pe.tensor(2.5), 2.5, "float32")
    check(pe.tensor([[1, 2], [3, 4]]), [[1, 2], [3, 4]], "int32")
    check(pe.tensor([[1, 2.5]]), [[1, 2.5]], "float32")
    check(pe.tensor([[[True], [False]]]), [[[True], [False]]], "bool")
    assert pe.tensor([]).shape == (0,) and pe.tensor([]).dtype == "float32"
    assert pe.tensor([[], []]).shape == (2, 0)


def test_tensor_from_numpy_narrows_to_engine_dtypes():
    check(pe.tensor(np.array([1.5, -2], np.float64)), [1.5, -2], "float32")
    check(pe.tensor(np.array([[1, -2]], np.int64)), [[1, -2]], "int32")
    check(pe.tensor(np.array([255], np.uint8)), [255], "int32")
    check(pe.tensor(np.array([True])), [True], "bool")
    check(pe.tensor(np.float64(0.25)), 0.25, "float32")


def test_tensor_copies_its_input():
    host = np.array([1.0, 2.0], np.float32)
    t = pe.tensor(host)
    host[0] = 9
    check(t, [1, 2], "float32")


def test_tensor_dtype_argument_converts():
    check(pe.tensor([1.7, -1.7], "int32"), [1, -1], "int32")  # toward zero
    check(pe.tensor([0, 2, -1], pe.bool_), [False, True, True], "bool")
    check(pe.tensor([True, False], float), [1, 0], "float32")
    check(pe.tensor(np.array([2**40]), "float32"), [2.0**40], "float32")
    check(pe.tensor(pe.tensor([1, 2]), "float32"), [1, 2], "float32")


def test_tensor_shape_argument():
    check(pe.tensor([1, 2, 3, 4, 5, 6], shape=(2, 3)), [[1, 2, 3], [4, 5, 6]], "int32")
    check(pe.tensor([[1, 2], [3, 4]], shape=[4]), [1, 2, 3, 4], "int32")
    assert pe.tensor([], shape=(0, 3)).shape == (0, 3)
    with pytest.raises(ShapeError, match=r"tensor: 3 values cannot fill shape \(2, 2\)"):
        pe.tensor([1, 2, 3], shape=(2, 2))


def test_tensor_errors():
    with pytest.raises(ShapeError, match="tensor: the nested lists do not form a rectangular array"):
        pe.tensor([[1, 2], [3]])
    with pytest.raises(DTypeError, match="tensor: cannot make a tensor of list values"):
        pe.tensor(["a", "b"])
    with pytest.raises(DTypeError, match="tensor: cannot make a tensor of str values"):
        pe.tensor("abc")
    with pytest.raises(DTypeError, match="tensor: cannot make a tensor of NoneType values"):
        pe.tensor(None)
    with pytest.raises(DTypeError, match="complex"):
        pe.tensor([1j])
    with pytest.raises(DTypeError, match="tensor: integer values outside the int32 range; pass dtype='float32'"):
        pe.tensor([1, 2**31])
    with pytest.raises(DTypeError, match="outside the int32 range"):
        pe.tensor([-(2**31) - 1])
    with pytest.raises(DTypeError, match="outside the int32 range"):
        pe.tensor(np.array([2**40], np.int64))
    with pytest.raises(TypeError, match="tensor: unsupported dtype 'string'"):
        pe.tensor([1], "string")
    check(pe.tensor([2**31 - 1, -(2**31)]), [2**31 - 1, -(2**31)], "int32")  # the limits themselves fit


def test_scalar():
    check(pe.scalar(3), 3, "int32")
    check(pe.scalar(3, "float32"), 3, "float32")
    check(pe.scalar(True), True, "bool")
    assert pe.scalar(np.float64(1.5)).shape == ()
    with pytest.raises(ShapeError, match=r"scalar: expected a single number, got a value of shape \(1,\)"):
        pe.scalar([3.0])


# ---- fill, zeros, ones ----------------------------------------------------------------------------


def test_fill_takes_the_value_dtype_unless_given():
    check(pe.fill((2, 3), 7), np.full((2, 3), 7), "int32")
    check(pe.fill([2], 2.5), [2.5, 2.5], "float32")
    check(pe.fill(3, True), [True] * 3, "bool")
    check(pe.fill((2,), 2.9, "int32"), [2, 2], "int32")
    check(pe.fill((2,), 1, "float32"), [1, 1], "float32")
    check(pe.fill((), np.float32(4)), 4, "float32")
    assert pe.fill((0, 4), 1.0).shape == (0, 4)


def test_fill_errors():
    with pytest.raises(ShapeError, match=r"fill: value must be a single number, got a value of shape \(2,\)"):
        pe.fill((2,), [1, 2])
    with pytest.raises(ShapeError, match=r"fill: shape \(2, -1\) has a negative dimension"):
        pe.fill((2, -1), 0)
    with pytest.raises(TypeError, match="fill: shape must be a sequence of ints"):
        pe.fill(None, 0)
    with pytest.raises(DTypeError, match="fill: cannot make a tensor of str values"):
        pe.fill((2,), "x")
    with pytest.raises(TypeError, match="unsupported dtype"):
        pe.fill((2,), 1, "complex64")


def test_zeros_ones_and_likes():
    check(pe.zeros((2, 1)), [[0], [0]], "float32")
    check(pe.ones(3, "int32"), [1, 1, 1], "int32")
    check(pe.ones((1,), "bool"), [True], "bool")
    assert pe.zeros((3, 0, 2)).shape == (3, 0, 2)
    x = pe.tensor([[1, 2, 3]])
    check(pe.zeros_like(x), [[0, 0, 0]], "int32")
    check(pe.ones_like(x), [[1, 1, 1]], "int32")
    check(pe.ones_like(x, "float32"), [[1, 1, 1]], "float32")
    check(pe.zeros_like(pe.tensor([True])), [False], "bool")
    assert pe.ones_like(pe.zeros((0, 2))).shape == (0, 2)
    with pytest.raises(TypeError, match="zeros_like: expected a Tensor, got list"):
        pe.zeros_like([1, 2])
    with pytest.raises(TypeError, match="ones_like: expected a Tensor, got ndarray"):
        pe.ones_like(np.zeros(2))


# ---- ranges -------------------------------------------------------------------------------------


def test_arange():
    check(pe.arange(5), [0, 1, 2, 3, 4], "int32")
    check(pe.arange(2, 8, 3), [2, 5], "int32")
    check(pe.arange(5, 0, -2), [5, 3, 1], "int32")
    check(pe.arange(0, 1, 0.25), [0, 0.25, 0.5, 0.75], "float32")
    check(pe.arange(1.5), [0, 1], "float32")
    check(pe.arange(3, dtype="float32"), [0, 1, 2], "float32")
    assert pe.arange(3, 3).shape == (0,)
    assert pe.arange(3, 0).shape == (0,)
    with pytest.raises(ValueError, match="arange: step must not be 0"):
        pe.arange(0, 3, 0)


def test_linspace():
    check(pe.linspace(0, 1, 5), [0, 0.25, 0.5, 0.75, 1], "float32")
    check(pe.linspace(2, -2, 3), [2, 0, -2], "float32")
    check(pe.linspace(3, 7, 1), [3], "float32")
    assert pe.linspace(0, 1, 0).shape == (0,)
    with pytest.raises(ValueError, match="linspace: num must be >= 0, got -1"):
        pe.linspace(0, 1, -1)


def test_eye():
    check(pe.eye(3), np.eye(3), "float32")
    check(pe.eye(2, 3), [[1, 0, 0], [0, 1, 0]], "float32")
    check(pe.eye(3, 1, "int32"), [[1], [0], [0]], "int32")
    check(pe.eye(2, dtype="bool"), [[True, False], [False, True]], "bool")
    assert pe.eye(0).shape == (0, 0)
    with pytest.raises(ShapeError, match="eye: sizes must be >= 0, got -1 x None"):
        pe.eye(-1)


# ---- one_hot ------------------------------------------------------------------------------------


def test_one_hot_values_and_out_of_range_indices():
    out = pe.one_hot(pe.tensor([0, 2, 3, -1, 1]), 3)
    check(out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 1, 0]], "float32")
    check(pe.one_hot([[1], [0]], 2), [[[0, 1]], [[1, 0]]], "float32")
    check(pe.one_hot(1, 3), [0, 1, 0], "float32")
    check(pe.one_hot([0, 5], 2, on_value=5, off_value=-1, dtype="int32"), [[5, -1], [-1, -1]], "int32")
    check(pe.one_hot([1], 2, on_value=0.5, off_value=-0.25), [[-0.25, 0.5]], "float32")
    check(pe.one_hot([1], 2, dtype="bool"), [[False, True]], "bool")
    assert pe.one_hot(pe.zeros((0,), "int32"), 4).shape == (0, 4)
    assert pe.one_hot([1, 2], 0).shape == (2, 0)


def test_one_hot_errors():
    with pytest.raises(DTypeError, match="one_hot: indices must be int32, got float32"):
        pe.one_hot(pe.tensor([0.0, 1.0]), 2)
    with pytest.raises(ValueError, match="one_hot: depth must be >= 0, got -2"):
        pe.one_hot([0], -2)
    with pytest.raises(ShapeError, match="one_hot: on_value must be a single number"):
        pe.one_hot([0], 2, on_value=[1, 2])


def test_failing_one_hot_leaves_no_tensors():
    before = pe.memory().num_tensors
    with pytest.raises(DTypeError):
        pe.one_hot([1.5], 2)
    with pytest.raises(ValueError):
        pe.one_hot([1], -1)
    assert pe.memory().num_tensors == before


# ---- random -------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [pe.random_normal, pe.random_uniform, pe.truncated_normal])
def test_random_seeds_shapes_and_dtype(op):
    a, b, c = op((3, 4), seed=7), op((3, 4), seed=7), op((3, 4), seed=8)
    assert a.shape == (3, 4) and a.dtype == "float32"
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    assert op(5).shape == (5,)
    assert op((2, 0)).shape == (2, 0)
    with pytest.raises(ShapeError, match="negative dimension"):
        op((2, -3))


@pytest.mark.parametrize("op", [pe.random_normal, pe.random_uniform, pe.truncated_normal])
def test_set_seed_makes_unseeded_draws_repeat(op):
    pe.set_seed(123)
    first = [op((4,)).numpy() for _ in range(2)]
    pe.set_seed(123)
    again = [op((4,)).numpy() for _ in range(2)]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])  # the generator moves on between draws


def test_random_normal_statistics():
    x = pe.random_normal((20000,), mean=3.0, stddev=2.0, seed=1).numpy()
    assert abs(x.mean() - 3) < 0.1 and abs(x.std() - 2) < 0.1
    assert np.abs(x - 3).max() > 5  # not truncated


def test_truncated_normal_stays_within_two_stddev():
    x = pe.truncated_normal((20000,), mean=1.0, stddev=2.0, seed=1).numpy()
    assert x.min() >= 1 - 4 and x.max() <= 1 + 4
    assert x.min() < -2.5 and x.max() > 4.5  # and reaches near both bounds
    assert abs(x.mean() - 1) < 0.1
    assert 0.75 * 2 < x.std() < 0.95 * 2  # narrower than the full normal (0.88 sigma)


def test_random_uniform_range_and_statistics():
    x = pe.random_uniform((20000,), -2.0, 6.0, seed=2).numpy()
    assert x.min() >= -2 and x.max() < 6
    assert abs(x.mean() - 2) < 0.1
    assert np.histogram(x, bins=4, range=(-2, 6))[0].min() > 4500  # flat
    near = pe.random_uniform((1000,), 1.0, 1.0 + 1e-7, seed=0).numpy()  # float32 rounding must not reach maxval
    assert (near.astype(np.float64) < 1.0 + 1e-7).all()


def test_random_uniform_int32():
    x = pe.random_uniform((5000,), 0, 10, dtype="int32", seed=3)
    assert x.dtype == "int32"
    values = x.numpy()
    assert values.min() == 0 and values.max() == 9
    assert set(np.unique(values)) == set(range(10))


def test_random_errors():
    with pytest.raises(ValueError, match="random_uniform: maxval 1 must be greater than minval 1"):
        pe.random_uniform((2,), 1, 1)
    with pytest.raises(DTypeError, match="random_normal: dtype int32 is not supported, expected float32"):
        pe.random_normal((2,), dtype="int32")
    with pytest.raises(DTypeError, match="truncated_normal: dtype bool is not supported"):
        pe.truncated_normal((2,), dtype="bool")
    with pytest.raises(DTypeError, match="random_uniform: dtype bool is not supported, expected float32 or int32"):
        pe.random_uniform((2,), dtype="bool")


def test_creation_ops_leave_no_temporaries():
    before = pe.memory().num_tensors
    made = [pe.one_hot([0, 1], 2), pe.fill((2,), 1), pe.eye(2), pe.arange(3), pe.random_normal(2)]
    assert pe.memory().num_tensors == before + len(made)


def test_tensor_shape_accepts_an_int_and_infers_minus_one():
    assert pe.tensor([1, 2], shape=2).shape == (2,)
    assert pe.tensor([1, 2, 3, 4], shape=(-1, 2)).shape == (2, 2)
    with pytest.raises(pe.ShapeError, match=r"4 values cannot fill shape \(3,\)"):
        pe.tensor([1, 2, 3, 4], shape=3)


def test_nan_cannot_become_int32():
    with pytest.raises(pe.DTypeError, match="NaN or infinity cannot be stored as int32"):
        pe.tensor([np.nan], "int32")
