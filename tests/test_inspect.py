"""pe.inspect: statistics computed where the tensor lives, in one readback, for every dtype and empty tensors."""

import numpy as np
import pytest

import py_engine as pe


def inspect_counting(t):
    """pe.inspect(t) and the readbacks it took."""
    before = pe.stats()["readbacks"]
    stats = pe.inspect(t)
    return stats, pe.stats()["readbacks"] - before


def test_float_statistics_skip_nan_and_infinities_and_count_them(each_backend, rng):
    values = rng.normal(3.0, 2.0, size=(40, 70)).astype(np.float32)
    values[3, 4] = values[20, 1] = np.nan
    values[7, 7], values[8, 8], values[9, 9] = np.inf, -np.inf, np.inf
    finite = values[np.isfinite(values)].astype(np.float64)
    x = pe.tensor(values)
    stats, readbacks = inspect_counting(x)
    assert readbacks == 1
    assert stats.shape == (40, 70) and stats.dtype == "float32" and stats.size == 2800
    assert (stats.nan_count, stats.inf_count) == (2, 3)
    assert stats.min == finite.min() and stats.max == finite.max()
    assert stats.mean == pytest.approx(finite.mean(), rel=1e-5)
    assert stats.std == pytest.approx(finite.std(), rel=1e-4)
    assert pe.memory().num_tensors == 1  # only x: everything inspect made is gone


def test_integers_are_exact_past_float32_precision(each_backend):
    values = np.array([[2**31 - 1, -(2**31), 16777217], [5, -3, 0]], np.int32)
    stats, readbacks = inspect_counting(pe.tensor(values))
    assert readbacks == 1
    assert (stats.min, stats.max) == (-(2**31), 2**31 - 1)
    assert isinstance(stats.min, int) and (stats.nan_count, stats.inf_count) == (0, 0)
    assert stats.mean == pytest.approx(values.astype(np.float64).mean(), rel=1e-6)


def test_bools_count_true_as_one(each_backend):
    stats, readbacks = inspect_counting(pe.tensor(np.array([True, False, True, True])))
    assert readbacks == 1
    assert (stats.dtype, stats.min, stats.max, stats.mean) == ("bool", 0, 1, 0.75)
    assert stats.std == pytest.approx(np.std([1, 0, 1, 1]))


def test_empty_and_all_nan_tensors_have_no_statistics(each_backend):
    empty, readbacks = inspect_counting(pe.zeros((0, 3)))
    assert readbacks == 0  # nothing to read
    assert (empty.shape, empty.size, empty.min, empty.mean, empty.nan_count) == ((0, 3), 0, None, None, 0)
    nans, readbacks = inspect_counting(pe.tensor([np.nan, np.nan, np.inf], dtype="float32"))
    assert readbacks == 1
    assert (nans.min, nans.max, nans.mean, nans.std, nans.nan_count, nans.inf_count) == (None, None, None, None, 2, 1)


def test_it_prints_as_one_line():
    stats = pe.inspect(pe.tensor([[1.0, 2.0], [3.0, np.nan]]))
    assert repr(stats) == "<float32[2, 2] min=1 max=3 mean=2 std=0.816497 nan=1 inf=0>"
    assert repr(pe.inspect(pe.zeros((0,), "int32"))) == "<int32[0] min=n/a max=n/a mean=n/a std=n/a nan=0 inf=0>"
    assert pe.inspect(pe.tensor(7)).to_dict()["max"] == 7


def test_inspect_inside_a_gradient_records_nothing():
    x = pe.tensor([1.0, 2.0, 3.0])

    def f(t):
        assert pe.inspect(t).mean == 2.0
        return (t * t).sum()

    np.testing.assert_allclose(pe.grad(f)(x).numpy(), [2.0, 4.0, 6.0])


def test_inspect_takes_a_live_tensor():
    with pytest.raises(TypeError, match="expected a Tensor, got list"):
        pe.inspect([1, 2])
    x = pe.tensor([1.0])
    pe.dispose(x)
    with pytest.raises(pe.DisposedTensorError):
        pe.inspect(x)
