"""matmul: 2-D, batched with broadcast batch dimensions, the four transpose modes, sizes 0 and 1, dtypes, gradients."""

import numpy as np
import pytest

import py_engine as pe
from py_engine import DTypeError, ShapeError
from py_engine.backends.numpy.kernels.linalg import matmul as numpy_matmul
from tests.gradcheck import check_gradients

MODES = [(False, False), (False, True), (True, False), (True, True)]


def close(t, expected, dtype="float32", rtol=1e-5, atol=1e-5):
    assert t.dtype == dtype, f"dtype {t.dtype}, expected {dtype}"
    got = t.numpy()
    assert got.shape == np.shape(expected), f"shape {got.shape}, expected {np.shape(expected)}"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def operands(rng, a_shape, b_shape, transpose_a, transpose_b):
    """(a, b, a @ b): a and b stored transposed where the mode says so."""
    a = rng.normal(size=a_shape).astype(np.float32)
    b = rng.normal(size=b_shape).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    a = np.swapaxes(a, -1, -2).copy() if transpose_a else a
    b = np.swapaxes(b, -1, -2).copy() if transpose_b else b
    return a, b, expected


@pytest.mark.parametrize(("transpose_a", "transpose_b"), MODES)
def test_matmul_2d(transpose_a, transpose_b, rng):
    for m, k, n in [(2, 3, 4), (1, 5, 1), (4, 1, 3), (7, 6, 5)]:
        a, b, expected = operands(rng, (m, k), (k, n), transpose_a, transpose_b)
        close(pe.matmul(a, b, transpose_a, transpose_b), expected)
        close(pe.tensor(a).matmul(b, transpose_a=transpose_a, transpose_b=transpose_b), expected)


@pytest.mark.parametrize(("transpose_a", "transpose_b"), MODES)
@pytest.mark.parametrize(
    ("a_batch", "b_batch", "out_batch"),
    [((3,), (3,), (3,)), ((2, 1), (4,), (2, 4)), ((), (2, 3), (2, 3)), ((5, 2), (), (5, 2)), ((1,), (1, 3), (1, 3))],
)
def test_matmul_broadcasts_batch_dimensions(transpose_a, transpose_b, a_batch, b_batch, out_batch, rng):
    a, b, expected = operands(rng, (*a_batch, 2, 3), (*b_batch, 3, 4), transpose_a, transpose_b)
    out = pe.matmul(a, b, transpose_a, transpose_b)
    assert out.shape == (*out_batch, 2, 4)
    close(out, expected)


def test_matmul_hand_checked_and_operator():
    a, b = pe.tensor([[1.0, 2.0], [3.0, 4.0]]), pe.tensor([[5.0, 6.0], [7.0, 8.0]])
    close(pe.matmul(a, b), [[19, 22], [43, 50]])
    close(a @ b, [[19, 22], [43, 50]])
    close(pe.matmul(a, b, transpose_a=True), [[26, 30], [38, 44]])
    close(pe.matmul(a, b, transpose_b=True), [[17, 23], [39, 53]])
    close(pe.matmul(a, b, True, True), [[23, 31], [34, 46]])
    close([[1.0, 0.0]] @ a, [[1, 2]])
    close(np.array([[0.0, 1.0]]) @ a, [[3, 4]])


def test_matmul_size_zero_dimensions():
    close(pe.matmul(pe.ones((2, 0)), pe.ones((0, 3))), np.zeros((2, 3)))  # empty inner sum: zeros
    assert pe.matmul(pe.ones((0, 2)), pe.ones((2, 3))).shape == (0, 3)
    assert pe.matmul(pe.ones((2, 2)), pe.ones((2, 0))).shape == (2, 0)
    assert pe.matmul(pe.ones((0, 4, 2)), pe.ones((2, 3))).shape == (0, 4, 3)
    assert pe.matmul(pe.ones((3, 0, 2)), pe.ones((1, 2, 5)), False, False).shape == (3, 0, 5)
    close(pe.matmul(pe.ones((0, 2)), pe.ones((0, 3)), transpose_a=True), np.zeros((2, 3)))


def test_matmul_int32_and_promotion():
    a, b = pe.tensor([[1, 2], [3, 4]]), pe.tensor([[5], [-6]])
    close(pe.matmul(a, b), [[-7], [-9]], "int32")
    close(pe.matmul(a, b, transpose_a=True), [[-13], [-14]], "int32")
    close(pe.matmul(a, pe.tensor([[0.5], [1.0]])), [[2.5], [5.5]], "float32")
    close(pe.matmul(a, [[1.5], [0.0]]), [[1.5], [4.5]], "float32")


def test_matmul_errors():
    with pytest.raises(ShapeError, match=r"matmul: a must have rank >= 2, got shape \(3,\); add an axis"):
        pe.matmul(pe.ones((3,)), pe.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"matmul: b must have rank >= 2, got shape \(3,\)"):
        pe.matmul(pe.ones((2, 3)), pe.ones((3,)))
    with pytest.raises(ShapeError, match=r"matmul: a must have rank >= 2, got shape \(\)"):
        pe.matmul(pe.scalar(1.0), pe.ones((1, 1)))
    with pytest.raises(ShapeError, match=r"matmul: inner dimensions differ: a \(2, 3\) has 3, b \(4, 5\) has 4"):
        pe.matmul(pe.ones((2, 3)), pe.ones((4, 5)))
    with pytest.raises(
        ShapeError, match=r"inner dimensions differ: a \(2, 3\) \(transposed\) has 2, b \(4, 3\) \(transposed\) has 3"
    ):
        pe.matmul(pe.ones((2, 3)), pe.ones((4, 3)), True, True)
    with pytest.raises(ShapeError, match=r"matmul \(batch dimensions\): shapes \(5,\) and \(4,\) cannot be broadcast"):
        pe.matmul(pe.ones((5, 2, 3)), pe.ones((4, 3, 2)))
    with pytest.raises(DTypeError, match="matmul: a has dtype bool, expected float32 or int32"):
        pe.matmul(pe.ones((1, 1), "bool"), pe.ones((1, 1), "bool"))


def test_matmul_releases_its_temporaries():
    before = pe.memory().num_tensors
    out = pe.matmul([[1.0, 2.0]], np.ones((2, 1)))
    assert pe.memory().num_tensors == before + 1
    close(out, [[3]])


def test_failing_matmul_leaves_no_tensors():
    before = pe.memory().num_tensors
    for a, b in [
        ([[True]], [[True]]),
        ([1.0], [[1.0]]),
        ([[1, 2]], [[1.5, 2]]),
        (np.ones((2, 1, 1)), np.ones((3, 1, 1))),
    ]:
        with pytest.raises((DTypeError, ShapeError)):
            pe.matmul(a, b)
    assert pe.memory().num_tensors == before


@pytest.mark.parametrize(("transpose_a", "transpose_b"), MODES)
def test_matmul_gradients(transpose_a, transpose_b, rng):
    a, b, _ = operands(rng, (2, 3), (3, 4), transpose_a, transpose_b)
    check_gradients(lambda a, b: pe.matmul(a, b, transpose_a, transpose_b), a, b)


@pytest.mark.parametrize(("transpose_a", "transpose_b"), MODES)
def test_matmul_gradients_with_broadcast_batch_dimensions(transpose_a, transpose_b, rng):
    a, b, _ = operands(rng, (2, 1, 2, 3), (3, 3, 2), transpose_a, transpose_b)
    check_gradients(lambda a, b: pe.matmul(a, b, transpose_a, transpose_b), a, b)
    a, b, _ = operands(rng, (2, 3), (2, 3, 2), transpose_a, transpose_b)  # a 2-D matrix against a batch
    check_gradients(lambda a, b: pe.matmul(a, b, transpose_a, transpose_b), a, b)


def test_matmul_gradient_of_a_product_with_itself():
    x = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
    check_gradients(lambda x: x @ x, x)
    check_gradients(lambda x: pe.matmul(x, x, transpose_a=True), x)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((64, 784), (784, 128)),
        ((3, 1, 40, 128), (2, 128, 96)),
        ((1, 100), (100, 64)),
        ((300, 16), (16, 96)),
        ((64, 95), (95, 64)),
    ],
)
def test_numpy_products_without_blas_are_matmuls(a_shape, b_shape, rng):
    """Pyodide's numpy has no BLAS, so the numpy backend's large products run through einsum there: they equal
    matmul's, NaN and inf included, on a row-major b and on a transposed view (which keeps matmul)."""
    a = rng.normal(size=a_shape).astype(np.float32)
    b = rng.normal(size=b_shape).astype(np.float32)
    a.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    want = np.matmul(a, b)
    transposed_view = np.ascontiguousarray(np.swapaxes(b, -1, -2)).swapaxes(-1, -2)
    for rhs in (b, transposed_view):
        got = numpy_matmul(a, rhs, blas=False)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("bij,bkj->bki", [(2, 3, 4), (2, 5, 4)]),
        ("ij,ij->i", [(3, 4), (3, 4)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ijk,kl->", [(2, 3, 4), (4, 2)]),
        ("abc->cab", [(2, 3, 4)]),
        ("abc->b", [(2, 3, 4)]),
    ],
)
def test_einsum_matches_numpy(equation, shapes):
    rng = np.random.default_rng(len(equation))
    arrays = [rng.normal(size=s).astype(np.float32) for s in shapes]
    got = pe.einsum(equation, *[pe.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), np.einsum(equation, *arrays), rtol=1e-5, atol=1e-5)


def test_einsum_errors_gradient_and_band_part():
    a = pe.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="einsum: the equation must name the output"):
        pe.einsum("ij,jk", a, a)
    with pytest.raises(ValueError, match=r"einsum: 'ii' in 'ii->i' must be distinct letters"):
        pe.einsum("ii->i", a)
    with pytest.raises(ShapeError, match="einsum: letter 'j' has sizes 3 and 2"):
        pe.einsum("ij,jk->ik", a, a)
    with pytest.raises(ValueError, match=r"names 3 operands, 3 given \(1 or 2 are supported\)"):
        pe.einsum("i,i,i->i", a, a, a)
    b = pe.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    check_gradients(lambda x: pe.einsum("ij,jk->ki", x, b), np.linspace(-1, 1, 6).reshape(2, 3))
    banded = pe.matrix_band_part(pe.ones((3, 4)), 0, 1).numpy()
    np.testing.assert_array_equal(banded, [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])
    check_gradients(lambda x: pe.matrix_band_part(x, 1, -1), np.linspace(-1, 1, 12).reshape(3, 4))
