"""Reductions (sum ... any, logsumexp, moments), softmax/log_softmax, cumsum, top_k: values, axes, dtypes, gradients."""

import numpy as np
import pytest

import py_engine as pe
from py_engine import DTypeError, ShapeError
from tests.gradcheck import check_gradients

X = np.array(
    [
        [[0.5, -1.25, 2.0, 3.5], [1.5, 0.25, -2.75, 1.0], [2.25, -0.5, 0.75, -1.5]],
        [[3.0, 1.75, -0.25, 0.5], [-3.25, 2.5, 1.25, -1.0], [0.1, 2.75, -2.0, 1.2]],
    ],
    np.float32,
)  # (2, 3, 4), no ties anywhere
AXES = [None, 0, 1, -1, [0, 2], (-1, 0), (), [0, 1, 2]]


def close(t, expected, dtype="float32", rtol=1e-6, atol=1e-6):
    assert t.dtype == dtype, f"dtype {t.dtype}, expected {dtype}"
    got = t.numpy()
    assert got.shape == np.shape(expected), f"shape {got.shape}, expected {np.shape(expected)}"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def np_logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x, np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis if axis is not None else tuple(range(x.ndim)))


REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
    "prod": np.prod,
    "logsumexp": np_logsumexp,
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("keepdims", [False, True])
def test_float_reductions_match_numpy(name, keepdims):
    for axis in AXES:
        expected = REDUCTIONS[name](X.astype(np.float64), axis=np_axis(axis), keepdims=keepdims)
        close(getattr(pe, name)(X, axis, keepdims=keepdims), expected, rtol=2e-6)
    close(getattr(pe.tensor(X), name)(axis=1), REDUCTIONS[name](X.astype(np.float64), axis=1), rtol=2e-6)  # method


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_int32_reductions_stay_int32(name):
    x = np.array([[1, -2, 3, 1], [2, 2, -1, 3], [1, 4, 2, -2]], np.int32)
    fn = REDUCTIONS[name]
    close(getattr(pe, name)(x), fn(x).astype(np.int32), "int32")
    close(getattr(pe, name)(x, 0, keepdims=True), fn(x, axis=0, keepdims=True).astype(np.int32), "int32")


def test_reduction_dtypes():
    i, b = pe.tensor([[1, 2], [3, 6]]), pe.tensor([[True, True], [False, True]])
    close(pe.mean(i), 3, "float32")
    close(pe.mean(i, 0), [2, 4], "float32")
    close(pe.sum(b), 3, "int32")
    close(pe.sum(b, 1), [2, 1], "int32")
    close(pe.prod(b, 0), [0, 1], "int32")
    close(pe.mean(b), 0.75, "float32")
    close(pe.all(b, 1), [True, False], "bool")
    close(pe.any(b, 0), [True, True], "bool")
    close(pe.all(pe.tensor([2, 0, 1]), keepdims=True), [False], "bool")  # numbers: nonzero is true
    close(pe.any(pe.tensor([[0.0, np.nan]]), 1), [True], "bool")
    close(pe.logsumexp(pe.tensor([0, 0])), np.log(2), "float32")  # ints become floats
    close(pe.sum([1.5, 2.5]), 4, "float32")
    for op in (pe.max, pe.min, pe.argmax, pe.argmin, pe.top_k):
        with pytest.raises(DTypeError, match=rf"{op.__name__}: x has dtype bool, expected float32 or int32"):
            op(b)


def test_all_any_values():
    x = np.array([[True, False, True], [True, True, True]])
    for axis in [None, 0, 1, -1, [0, 1]]:
        for keepdims in (False, True):
            close(pe.all(x, axis, keepdims), np.all(x, axis=np_axis(axis), keepdims=keepdims), "bool")
            close(pe.any(x, axis, keepdims), np.any(x, axis=np_axis(axis), keepdims=keepdims), "bool")


def test_reductions_of_scalars():
    s = pe.scalar(2.5)
    for op in (pe.sum, pe.mean, pe.max, pe.min, pe.prod, pe.logsumexp):
        close(op(s), 2.5)
        close(op(s, []), 2.5)
    close(pe.argmax(s), 0, "int32")
    with pytest.raises(ShapeError, match=r"sum: axis 0 is out of range for a scalar \(rank 0\); use axis=None"):
        pe.sum(s, 0)
    with pytest.raises(ShapeError, match="max: axis -1 is out of range for a scalar"):
        pe.max(s, -1)


def test_axis_errors():
    x = pe.tensor(X)
    with pytest.raises(ShapeError, match=r"sum: axis 3 is out of range for a tensor of rank 3 \(valid: -3..2\)"):
        pe.sum(x, 3)
    with pytest.raises(ShapeError, match=r"mean: axis -4 is out of range"):
        pe.mean(x, [0, -4])
    with pytest.raises(ShapeError, match=r"max: axis \[1, -2\] names the same axis twice"):
        pe.max(x, [1, -2])
    with pytest.raises(TypeError, match="prod: axis must be an int, got float"):
        pe.prod(x, 1.0)
    with pytest.raises(ShapeError, match="logsumexp: axis 5 is out of range"):
        pe.logsumexp(x, 5)


def test_size_zero_reductions():
    e = np.zeros((2, 0), np.float32)
    close(pe.sum(e), 0)
    close(pe.sum(e, 1), [0, 0])
    close(pe.sum(e, 0), np.zeros(0))
    close(pe.sum(pe.zeros((0,), "int32")), 0, "int32")
    close(pe.prod(e, 1), [1, 1])
    close(pe.mean(e, 1), [np.nan, np.nan])  # 0 / 0, as TensorFlow
    close(pe.all(pe.zeros((0,), "bool")), True, "bool")
    close(pe.any(pe.zeros((0,), "bool")), False, "bool")
    close(pe.logsumexp(e, 1), [-np.inf, -np.inf])  # log(0)
    close(pe.max(e, 0), np.zeros(0))  # reducing a non-empty axis of an empty tensor is fine
    close(pe.argmax(e, 0), np.zeros(0, np.int32), "int32")
    mean, variance = pe.moments(e, 0)
    assert mean.shape == variance.shape == (0,)


@pytest.mark.parametrize("op", [pe.max, pe.min])
def test_max_min_of_an_empty_axis_is_an_error(op):
    name = op.__name__
    with pytest.raises(ShapeError, match=rf"{name}: cannot reduce a size-0 axis of shape \(2, 0\) \(axis 1\)"):
        op(pe.zeros((2, 0)), 1)
    with pytest.raises(ShapeError, match=rf"{name}: cannot reduce a size-0 axis of shape \(0,\) \(axis None\)"):
        op(pe.zeros((0,)))


def test_special_values():
    close(pe.max(pe.tensor([1.0, np.nan, 3.0])), np.nan)
    close(pe.min(pe.tensor([[1.0, -np.inf]]), 1), [-np.inf])
    close(pe.sum(pe.tensor([np.inf, -np.inf])), np.nan)
    close(pe.logsumexp(pe.tensor([1000.0, 1000.0])), 1000 + np.log(2), rtol=1e-7)
    close(pe.logsumexp(pe.tensor([-1000.0, -1000.0])), -1000 + np.log(2), rtol=1e-7)
    close(pe.logsumexp(pe.tensor([-np.inf, -np.inf])), -np.inf)
    close(pe.logsumexp(pe.tensor([np.inf, 1.0])), np.inf)
    close(pe.logsumexp(pe.tensor([np.nan, 1.0])), np.nan)
    close(pe.logsumexp(pe.tensor([[-np.inf, 0.0], [-np.inf, -np.inf]]), 1), [0, -np.inf])


# ---- argmax / argmin ----------------------------------------------------------------------------


def test_argmax_argmin():
    x = np.array([[1, 5, 5], [7, 2, 7]], np.int32)
    close(pe.argmax(x), [1, 0, 1], "int32")  # default axis 0
    close(pe.argmax(pe.tensor([[1, 3, 3, 0]]), 1), [1], "int32")  # ties: the first
    close(pe.argmax(x, 1), [1, 0], "int32")
    close(pe.argmax(x, -1), [1, 0], "int32")
    close(pe.argmin(x, 0), [0, 1, 0], "int32")
    close(pe.argmin(x, 1), [0, 1], "int32")
    close(pe.argmax(x, None), 3, "int32")  # into the flattened tensor
    close(pe.argmin(X, None), np.argmin(X), "int32")
    for axis in (0, 1, 2, -1):
        close(pe.argmax(X, axis), np.argmax(X, axis), "int32")
        close(pe.argmin(X, axis), np.argmin(X, axis), "int32")
    close(pe.argmax(pe.tensor([1.0, np.nan, 3.0])), 1, "int32")  # NaN wins, as numpy
    assert pe.tensor(X).argmax(2).shape == (2, 3)


def test_argmax_errors():
    with pytest.raises(ShapeError, match=r"argmax: axis 1 of shape \(2, 0\) is empty"):
        pe.argmax(pe.zeros((2, 0)), 1)
    with pytest.raises(ShapeError, match=r"argmin: axis None of shape \(0,\) is empty"):
        pe.argmin(pe.zeros((0,)), None)
    with pytest.raises(ShapeError, match="argmax: axis 2 is out of range for a tensor of rank 2"):
        pe.argmax(pe.zeros((2, 2)), 2)
    with pytest.raises(TypeError, match="argmin: axis must be an int, got list"):
        pe.argmin(pe.zeros((2, 2)), [0])


# ---- moments, softmax, log_softmax --------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, -1, [0, 2]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_moments(axis, keepdims):
    mean, variance = pe.moments(X, axis, keepdims)
    close(mean, np.mean(X.astype(np.float64), axis=np_axis(axis), keepdims=keepdims))
    close(variance, np.var(X.astype(np.float64), axis=np_axis(axis), keepdims=keepdims), rtol=1e-5)


def test_moments_of_ints_and_lists():
    mean, variance = pe.moments([[1, 2], [3, 5]], 0)
    close(mean, [2, 3.5])
    close(variance, [1, 2.25])


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -3])
def test_softmax_and_log_softmax(axis):
    x = X.astype(np.float64)
    close(pe.softmax(X, axis), np_softmax(x, axis))
    close(pe.log_softmax(X, axis), np.log(np_softmax(x, axis)), rtol=1e-5)
    close(pe.sum(pe.softmax(X, axis), axis), np.ones(np.delete(X.shape, axis)), rtol=1e-6)


def test_softmax_stability_and_special_values():
    close(pe.softmax(pe.tensor([1000.0, 1000.0, -np.inf])), [0.5, 0.5, 0])
    close(pe.softmax(pe.tensor([[-1000.0, 0.0]])), [[0, 1]])
    close(pe.log_softmax(pe.tensor([1000.0, 0.0])), [0, -1000])
    close(pe.log_softmax(pe.tensor([-1000.0, -1000.0])), [-np.log(2)] * 2)
    close(pe.softmax(pe.tensor([1, 2])), np_softmax(np.array([1.0, 2.0]), 0))  # ints become floats
    assert pe.softmax(pe.zeros((2, 0))).shape == (2, 0)
    assert pe.log_softmax(pe.zeros((0, 3))).shape == (0, 3)


def test_softmax_errors():
    for op in (pe.softmax, pe.log_softmax):
        with pytest.raises(ShapeError, match=rf"{op.__name__}: x must have rank >= 1, got a scalar"):
            op(pe.scalar(1.0))
        with pytest.raises(ShapeError, match=rf"{op.__name__}: axis 2 is out of range for a tensor of rank 2"):
            op(pe.zeros((2, 2)), 2)
    with pytest.raises(DTypeError, match="softmax: cannot make a tensor of str values"):
        pe.softmax("x")


# ---- cumsum -------------------------------------------------------------------------------------


def np_cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis)
    if exclusive:
        out = out - x
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(exclusive, reverse):
    for axis in (0, 1, 2, -1):
        close(pe.cumsum(X, axis, exclusive, reverse), np_cumsum(X.astype(np.float64), axis, exclusive, reverse))
    close(
        pe.cumsum(pe.tensor([1, 2, 3]), 0, exclusive, reverse),
        np_cumsum(np.array([1, 2, 3]), 0, exclusive, reverse),
        "int32",
    )


def test_cumsum_values_dtypes_and_sizes():
    close(pe.cumsum(pe.tensor([1, 2, 3]), exclusive=True, reverse=True), [5, 3, 0], "int32")
    close(pe.cumsum(pe.tensor([True, True, False])), [1, 2, 2], "int32")
    close(pe.cumsum(pe.tensor([[1, 2], [3, 4]]), 1, exclusive=True), [[0, 1], [0, 3]], "int32")
    close(pe.cumsum(pe.tensor([[1, 2]]), 0, exclusive=True), [[0, 0]], "int32")
    close(pe.cumsum([1.5, np.inf, 1.0]), [1.5, np.inf, np.inf])
    assert pe.cumsum(pe.zeros((0, 3)), 0, exclusive=True).shape == (0, 3)
    assert pe.cumsum(pe.zeros((3, 0)), 1, reverse=True).shape == (3, 0)
    with pytest.raises(ShapeError, match="cumsum: x must have rank >= 1, got a scalar"):
        pe.cumsum(pe.scalar(3.0))
    with pytest.raises(ShapeError, match="cumsum: axis 2 is out of range for a tensor of rank 2"):
        pe.cumsum(pe.zeros((2, 2)), 2)


# ---- top_k --------------------------------------------------------------------------------------


def test_top_k_values_indices_and_ties():
    values, indices = pe.top_k(pe.tensor([1, 3, 3, 2, 3]), 3)
    close(values, [3, 3, 3], "int32")
    close(indices, [1, 2, 4], "int32")  # ties: the lower index first
    values, indices = pe.top_k(pe.tensor([[1.0, 3, 3, 2], [5, 5, 1, 1], [-1, -2, -3, 4]]), 2)
    close(values, [[3, 3], [5, 5], [4, -1]])
    close(indices, [[1, 2], [0, 1], [3, 0]], "int32")
    values, indices = pe.top_k(pe.tensor([-(2**31), 2**31 - 1, 0]), 3)
    close(values, [2**31 - 1, 0, -(2**31)], "int32")
    close(indices, [1, 2, 0], "int32")


def test_top_k_matches_a_full_sort(rng):
    x = rng.normal(size=(3, 2, 7)).astype(np.float32)
    values, indices = pe.top_k(x, 7)
    order = np.argsort(-x, axis=-1, kind="stable")
    close(indices, order.astype(np.int32), "int32")
    close(values, np.take_along_axis(x, order, -1))
    close(pe.top_k(x)[0], x.max(-1, keepdims=True))  # default k=1


def test_top_k_of_a_long_row_keeps_the_full_sorts_order(rng):
    # a detector's long score row takes the partial sort: ties across the k-th value and NaNs (sorted last)
    # must come out as the full stable sort's
    x = np.round(rng.normal(size=(1, 4000)), 1).astype(np.float32)
    x[0, rng.integers(0, 4000, 300)] = np.nan
    nan_mostly = np.full((1, 4000), np.nan, np.float32)
    nan_mostly[0, [7, 3000, 11]] = [1.0, 2.0, 1.0]
    for row in (x, nan_mostly, np.round(rng.normal(size=4000)).astype(np.int32)):
        values, indices = pe.top_k(row, 100)
        order = np.argsort(-row.astype(np.float64), axis=-1, kind="stable")[..., :100]
        close(indices, order.astype(np.int32), "int32")
        np.testing.assert_array_equal(values.numpy(), np.take_along_axis(row, order, -1))


def test_top_k_sizes():
    values, indices = pe.top_k(pe.tensor([1.0, 3.0]), 0)
    assert values.shape == indices.shape == (0,) and values.dtype == "float32" and indices.dtype == "int32"
    values, indices = pe.top_k(pe.zeros((0, 3)), 2)
    assert values.shape == indices.shape == (0, 2)
    values, indices = pe.top_k(pe.zeros((2, 0)), 0)
    assert values.shape == (2, 0)


def test_top_k_errors():
    x = pe.tensor([1.0, 3.0, 2.0])
    with pytest.raises(ShapeError, match=r"top_k: k=4 must be between 0 and the last dimension 3 of shape \(3,\)"):
        pe.top_k(x, 4)
    with pytest.raises(ShapeError, match="top_k: k=-1 must be between 0 and the last dimension 3"):
        pe.top_k(x, -1)
    with pytest.raises(ShapeError, match="top_k: x must have rank >= 1, got a scalar"):
        pe.top_k(pe.scalar(1.0), 1)
    with pytest.raises(TypeError, match="top_k: k must be an int, got float"):
        pe.top_k(x, 1.5)


def test_composite_reductions_leave_no_intermediates():
    x = pe.tensor(X)
    before = pe.memory().num_tensors
    outs = [pe.logsumexp(x, 1), *pe.moments(x, [0, 2]), pe.log_softmax(x), pe.logsumexp([1, 2]), *pe.moments([1, 2])]
    outs += [pe.max(x), pe.mean([1, 2]), pe.all([1, 0]), *pe.top_k([1, 2], 1), pe.cumsum([True])]
    assert pe.memory().num_tensors == before + len(outs)


def test_failing_ops_leave_no_tensors():
    calls = [
        lambda: pe.max([True]),
        lambda: pe.min([[1.0]], 2),
        lambda: pe.sum([1, 2], [0, 0]),
        lambda: pe.argmax([], 0),
        lambda: pe.top_k([1], 2),
        lambda: pe.softmax(3.0),
        lambda: pe.log_softmax(3),
        lambda: pe.logsumexp([1.0], 3),
        lambda: pe.moments([1], 1),
        lambda: pe.cumsum(True),
    ]
    before = pe.memory().num_tensors
    for call in calls:
        with pytest.raises((DTypeError, ShapeError)):
            call()
    assert pe.memory().num_tensors == before


# ---- gradients ----------------------------------------------------------------------------------

SMALL = X[:, :2, :3]  # (2, 2, 3), no ties


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "logsumexp"])
@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), ([0, 2], True), (-1, True), ((), False)])
def test_reduction_gradients(name, axis, keepdims):
    check_gradients(lambda x: getattr(pe, name)(x, axis, keepdims=keepdims), SMALL)


def test_prod_gradient_with_zeros():
    one_zero = np.array([[2.0, 0.0, 3.0], [1.5, -2.0, 0.5]], np.float32)
    check_gradients(lambda x: pe.prod(x, 1), one_zero)
    close(pe.grad(lambda x: pe.prod(x, 1).sum())(pe.tensor(one_zero)), [[0, 6, 0], [-1, 0.75, -3]])
    two_zeros = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    check_gradients(lambda x: pe.prod(x, 1), two_zeros)
    close(pe.grad(lambda x: pe.prod(x).sum())(pe.tensor(two_zeros)), np.zeros((2, 3)))
    check_gradients(lambda x: pe.prod(x, 0), one_zero)


def test_max_gradient_splits_nothing_when_there_are_no_ties():
    x = pe.tensor([[1.0, 4.0, 2.0], [3.0, -1.0, 0.5]])
    close(pe.grad(lambda x: pe.max(x, 1).sum())(x), [[0, 1, 0], [1, 0, 0]])
    close(pe.grad(lambda x: pe.min(x).sum())(x), [[0, 0, 0], [0, 1, 0]])


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_gradients(axis):
    check_gradients(lambda x: pe.softmax(x, axis), SMALL)
    check_gradients(lambda x: pe.log_softmax(x, axis), SMALL)


def test_logsumexp_gradient_is_softmax_even_for_large_inputs():
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1001.0]], np.float32)
    g = pe.grad(lambda x: pe.logsumexp(x, 1).sum())(pe.tensor(x))
    close(g, np_softmax(x.astype(np.float64), 1), atol=1e-6)
    g = pe.grad(lambda x: pe.log_softmax(x, 1).sum())(pe.tensor(x))
    close(g, 1 - 3 * np_softmax(x.astype(np.float64), 1), atol=1e-5)


@pytest.mark.parametrize("axis", [None, 1, [0, 2]])
def test_moments_gradients(axis):
    check_gradients(lambda x: pe.moments(x, axis)[0], SMALL)
    check_gradients(lambda x: pe.moments(x, axis)[1], SMALL)
    check_gradients(lambda x: pe.moments(x, axis, keepdims=True)[1] * 2 + pe.moments(x, axis, True)[0], SMALL)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_gradients(exclusive, reverse):
    check_gradients(lambda x: pe.cumsum(x, 1, exclusive, reverse), SMALL)
    check_gradients(lambda x: pe.cumsum(x, -1, exclusive, reverse), SMALL)


def test_top_k_gradients():
    check_gradients(lambda x: pe.tidy(lambda: pe.top_k(x, 2)[0]), SMALL)
    check_gradients(lambda x: pe.tidy(lambda: pe.top_k(x, 3)[0]), SMALL)
    x = pe.tensor([[1.0, 4.0, 2.0], [3.0, -1.0, 0.5]])
    close(pe.grad(lambda x: pe.top_k(x, 2)[0].sum())(x), [[0, 1, 1], [1, 0, 1]])
    close(pe.grad(lambda x: pe.top_k(x, 0)[0].sum() + (x * 0).sum())(x), np.zeros((2, 3)))


def test_euclidean_norm_and_search_sorted():
    x = pe.tensor([[3.0, 4.0], [6.0, 8.0]])
    assert pe.euclidean_norm(x).item() == pytest.approx(125**0.5)
    assert pe.euclidean_norm(x, 1, keepdims=True).numpy().tolist() == [[5.0], [10.0]]
    check_gradients(lambda t: pe.euclidean_norm(t, 0), X[0])
    assert pe.lower_bound([1, 3, 3, 7], [0, 3, 4, 8]).numpy().tolist() == [0, 1, 3, 4]
    assert pe.upper_bound([1, 3, 3, 7], [0, 3, 4, 8]).numpy().tolist() == [0, 3, 3, 4]
    rows = pe.search_sorted([[1.0, 2.0], [5.0, 6.0]], [[1.5], [7.0]], "right")
    assert rows.dtype == "int32" and rows.numpy().tolist() == [[1], [2]]
    with pytest.raises(ShapeError, match=r"search_sorted: sorted_sequence \(2, 2\) and values \(3, 1\) must have"):
        pe.search_sorted([[1.0, 2.0], [5.0, 6.0]], [[1.5], [7.0], [0.0]])
    with pytest.raises(ValueError, match="search_sorted: side must be 'left' or 'right'"):
        pe.search_sorted([1.0], [1.0], "middle")


def test_cumprod():
    x = pe.tensor([[1.0, 2.0, 3.0], [4.0, 0.5, 2.0]])
    assert pe.cumprod(x, 1).numpy().tolist() == [[1, 2, 6], [4, 2, 4]]
    assert pe.cumprod(x, 1, exclusive=True, reverse=True).numpy().tolist() == [[6, 3, 1], [1, 2, 1]]
    assert pe.cumprod(pe.tensor([True, False]), 0).dtype == "int32"
    for exclusive in (False, True):
        for reverse in (False, True):
            check_gradients(lambda t, e=exclusive, r=reverse: pe.cumprod(t, 1, e, r), X[0] + 3.0)


def test_multinomial_draws_each_class_by_its_probability():
    pe.set_seed(7)
    logits = pe.tensor([[0.0, 0.0, np.log(2.0)], [-1e9, 0.0, -1e9]])
    draws = pe.multinomial(logits, 40000)
    assert draws.shape == (2, 40000) and draws.dtype == "int32"
    counts = [np.bincount(row, minlength=3) / 40000 for row in draws.numpy()]
    np.testing.assert_allclose(counts[0], [0.25, 0.25, 0.5], atol=0.01)
    assert counts[1].tolist() == [0.0, 1.0, 0.0]  # the other classes have probability 0
    picks = pe.multinomial([0.0, 1.0, 0.0], 5, seed=3, normalized=True)
    assert picks.shape == (5,) and picks.numpy().tolist() == [1] * 5
    with pytest.raises(ShapeError, match=r"multinomial: logits must be \[classes\] or \[batch, classes\]"):
        pe.multinomial(pe.zeros((2, 2, 2)), 3)
