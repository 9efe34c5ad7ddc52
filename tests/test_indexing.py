import itertools

import numpy as np
import pytest

import py_engine as pe
from py_engine import DisposedTensorError, ShapeError
from py_engine.engine import ENGINE
from py_engine.kernel_registry import get_kernel
from tests.gradcheck import check_gradients

S = slice
BOUNDS = [None, -7, -4, -1, 0, 1, 3, 4, 7]
STEPS = [None, 1, 2, -1, -2, 3, -5]


def _check(a, key):
    """x[key] matches numpy's a[key]: the same values, shape and dtype, or the same kind of error."""
    x = pe.tensor(a)
    try:
        expected = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            x[key]
        return
    got = x[key]
    assert got.shape == expected.shape, key
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.numpy(), expected, err_msg=str(key))
    pe.dispose([x, got])


@pytest.mark.parametrize("n", [0, 1, 4, 5])
def test_every_1d_slice_matches_numpy(n):
    a = np.arange(n, dtype=np.float32)
    for start, stop, step in itertools.product(BOUNDS, BOUNDS, STEPS):
        _check(a, S(start, stop, step))
    for i in range(-n - 2, n + 2):
        _check(a, i)


KEYS = [
    (),
    ...,
    0,
    -1,
    2,
    -3,
    None,
    (None, None),
    (..., None),
    (None, ..., None),
    (0, 1),
    (-1, S(None, None, -1)),
    (..., 0),
    (0, ..., -1),
    (S(None, None, -2), ..., S(0, 1)),
    (S(1, None, 2), None, -2),
    (1, None, S(None), ...),
    (S(None), S(None), S(None)),
    (S(None), None, S(3, 0, -1), 2),
    (S(-1, -10, -1), S(10, -10, -3)),
    (S(2, 2), 0),
    (..., S(5, 1)),
    (0, 0, 0),
    (0, 0, 0, 0),
    (S(None), 3),
    (None, 0, None, S(None, None, -1), None),
]


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 1, 2), (1, 0, 3), (3,), ()])
def test_index_grid_matches_numpy(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 5
    for key in KEYS:
        _check(a, key)


def test_int32_and_bool_tensors():
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    bools = ints % 3 == 0
    for key in [(1, S(None, None, -1)), (..., 2), (S(None, None, 2), None), -1]:
        _check(ints, key)
        _check(bools, key)


def test_pure_int_none_and_full_slice_results_are_views():
    x = pe.tensor(np.arange(6, dtype=np.float32).reshape(1, 2, 3))
    views = [x[None], x[..., None], x[()], x[...], x[:], x[0], x[-1, :, None], x[:, ::1, -5:10], x[::-1]]
    assert pe.memory().num_data_buffers == 1
    x.dispose()
    np.testing.assert_array_equal(views[1].numpy()[0, 1, :, 0], [3, 4, 5])
    assert views[6].shape == (2, 1, 3)
    pe.dispose(views)
    assert pe.memory().num_data_buffers == 0


def test_other_results_have_one_buffer_and_no_leftovers():
    x = pe.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    row = x[1]
    assert pe.memory().num_data_buffers == 2 and pe.memory().num_tensors == 2
    np.testing.assert_array_equal(row.numpy(), [3, 4, 5])
    x.dispose()
    np.testing.assert_array_equal(row.numpy(), [3, 4, 5])


def test_strided_slice_attrs_are_normalised():
    """The kernel gets a (begin, end, stride) per axis; end -1 with a negative stride means "through index 0"."""
    original, seen = get_kernel("StridedSlice", "numpy"), []
    pe.register_kernel(
        "StridedSlice", "numpy", lambda x, **attrs: seen.append(attrs) or original(x, **attrs), override=True
    )
    try:
        x = pe.tensor(np.arange(10, dtype=np.float32).reshape(2, 5))
        np.testing.assert_array_equal(x[1, ::-2].numpy(), [9, 7, 5])
        assert x[:, 7:2].shape == (2, 0)
        assert x[-1:, -7:0:-1].shape == (1, 0)
    finally:
        pe.register_kernel("StridedSlice", "numpy", original, override=True)
    assert seen == [
        {"begin": (1, 4), "end": (2, -1), "strides": (1, -2)},
        {"begin": (0, 0), "end": (2, 0), "strides": (1, 1)},
        {"begin": (1, 0), "end": (2, 0), "strides": (1, 1)},
    ]


def test_iteration_and_len():
    x = pe.tensor([[1, 2], [3, 4], [5, 6]], "int32")
    rows = list(x)
    assert len(x) == 3 and [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert [int(v) for v in x[2]] == [5, 6]


def test_index_errors():
    x = pe.tensor(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        x[0, -5]
    with pytest.raises(IndexError, match="too many indices for tensor: tensor is 2-dimensional, but 3 were indexed"):
        x[0, None, 1, 2]
    with pytest.raises(IndexError, match=r"tensor indexing: an index can only have a single ellipsis \('...'\)"):
        x[..., 0, ...]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(
        TypeError, match=r"tensor indexing: slice bounds must be ints or None, got slice\(0.5, None, None\)"
    ):
        x[0.5:]
    with pytest.raises(
        TypeError, match=r"tensor indexing: an index must be an int, a slice, None or \.\.\., got float"
    ):
        x[1.0]
    for key, kind in [
        (pe.tensor([0, 1]), "Tensor"),
        ([0, 1], "list"),
        (np.array([0]), "ndarray"),
        ((0, (1, 2)), "tuple"),
        (True, "boolean"),
    ]:
        with pytest.raises(
            TypeError, match=rf"tensor indexing: {kind} indexes are not supported .* use pe.gather\(x, indices, axis\)"
        ):
            x[key]
    x.dispose()
    with pytest.raises(DisposedTensorError):
        x[0]


def test_numpy_integers_are_ints():
    x = pe.tensor(np.arange(5))
    assert x[np.int64(-2)].item() == 3
    assert x[np.int32(1) : np.int64(3)].tolist() == [1, 2]


def test_indexing_gradients():
    a = np.linspace(-1, 1, 24).reshape(2, 3, 4)
    check_gradients(lambda x: x[::-1, 1], a)
    check_gradients(lambda x: x[..., ::-2], a)
    check_gradients(lambda x: x[None, 1:, ::-3, -1], a)
    check_gradients(lambda x: x[-1, 1:3, None, ::2] * x[0, :2, None, 1::2], a)
    check_gradients(lambda x: x[0][None, ..., None], a[:1])  # views only
    check_gradients(lambda x: x[:, 5:1], a)


def test_strided_slice_grad_kernel_has_a_gradient():
    attrs = {"shape": (5,), "begin": (4,), "end": (-1,), "strides": (-2,)}
    check_gradients(lambda dy: ENGINE.run_kernel("StridedSliceGrad", (dy,), attrs), [0.5, -1.0, 2.0])
    out = ENGINE.run_kernel("StridedSliceGrad", (pe.tensor([1.0, 2.0, 3.0]),), attrs)
    np.testing.assert_array_equal(out.numpy(), [3, 0, 2, 0, 1])


def test_argwhere_and_where_with_the_condition_alone():
    x = pe.tensor([[0.0, 2.0, np.nan], [0.0, 0.0, -1.0]])
    expected = [[0, 1], [0, 2], [1, 2]]  # row-major; NaN is nonzero, so true
    coordinates = [pe.argwhere(x), pe.where(x), x.argwhere(), pe.where(x != 0)]
    assert [(c.dtype, c.numpy().tolist()) for c in coordinates] == [("int32", expected)] * 4
    assert pe.argwhere(pe.scalar(True)).shape == (1, 0) and pe.argwhere(np.zeros((0, 3), bool)).shape == (0, 2)
    with pytest.raises(TypeError, match=r"where: give both a and b \(pick from them\), or neither"):
        pe.where(x > 0, x)


def test_unique_and_setdiff1d_errors_and_readbacks(gpu):
    values, indices = pe.unique(pe.tensor([3, 1, 3, 2, 1]))
    assert values.numpy().tolist() == [3, 1, 2] and indices.numpy().tolist() == [0, 1, 0, 2, 1]
    before = pe.stats()["readbacks"]
    out, positions = pe.setdiff1d(pe.tensor([1.0, 2.0, 3.0]), pe.tensor([2.0]))
    assert pe.stats()["readbacks"] - before == 2  # x and y
    assert out.numpy().tolist() == [1.0, 3.0] and positions.numpy().tolist() == [0, 2]
    with pytest.raises(ShapeError, match="unique: x must have rank >= 1, got a scalar"):
        pe.unique(pe.scalar(1.0))
    with pytest.raises(pe.DTypeError, match="setdiff1d: x and y must have one dtype, got float32 and int32"):
        pe.setdiff1d([1.0], [1])
    with pytest.raises(ShapeError, match=r"setdiff1d: x and y must be 1-D, got shapes \(1, 1\) and \(1,\)"):
        pe.setdiff1d([[1]], [1])


def test_strided_slice_masks_follow_tensorflow():
    a = np.arange(2 * 4 * 6 * 8, dtype=np.float32).reshape(2, 4, 6, 8)
    x = pe.tensor(a)
    got = pe.strided_slice(x, [1, 2, 0, 7], [2, 3, 6, 8], [1, 1, 2, 1], shrink_axis_mask=0b1011)
    np.testing.assert_array_equal(got.numpy(), a[1, 2, 0:6:2, 7])
    got = pe.strided_slice(x, [0, 1], [0, 3], [1, -1], begin_mask=0b10, end_mask=0b01, new_axis_mask=0)
    np.testing.assert_array_equal(got.numpy(), a[0:, :3:-1])
    np.testing.assert_array_equal(pe.strided_slice(x, [0, 1], [0, 3], ellipsis_mask=1).numpy(), a[..., 1:3])
    with pytest.raises(ValueError, match="strided_slice: ellipsis_mask 3 may set one bit only"):
        pe.strided_slice(x, [0, 0], [1, 1], ellipsis_mask=3)
    with pytest.raises(ValueError, match=r"strided_slice: strides \[1, 0\] must not contain 0"):
        pe.strided_slice(x, [0, 0], [1, 1], [1, 0])
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 2"):
        pe.strided_slice(x, [9], [10], shrink_axis_mask=1)


def test_sparse_fill_empty_rows_and_sparse_reshape_errors():
    indices, values, counts = pe.sparse_fill_empty_rows([[2, 0]], [5.0], [3, 2], 0.5)[:3]
    assert indices.numpy().tolist() == [[0, 0], [1, 0], [2, 0]] and values.numpy().tolist() == [0.5, 0.5, 5.0]
    assert counts.dtype == "bool"
    with pytest.raises(ValueError, match=r"sparse_fill_empty_rows: indices\[0\] = \[3, 0\] has a row outside 0..2"):
        pe.sparse_fill_empty_rows([[3, 0]], [5.0], [3, 2], 0.5)
    with pytest.raises(ShapeError, match=r"sparse_fill_empty_rows: values must be \[n\] = \(1,\), got \(2,\)"):
        pe.sparse_fill_empty_rows([[0, 0]], [5.0, 6.0], [3, 2], 0.5)
    with pytest.raises(ValueError, match=r"sparse_reshape: cannot infer the -1 of \[4, -1\] for 6 elements"):
        pe.sparse_reshape([[0, 1]], [2, 3], [4, -1])
    with pytest.raises(ShapeError, match=r"sparse_reshape: indices must be \[n, rank\] and the dense shape \[rank\]"):
        pe.sparse_reshape([[0, 1, 0]], [2, 3], [6])


def test_ragged_range():
    splits, values = pe.ragged_range([0, 5], 4, [2, -2])
    assert splits.numpy().tolist() == [0, 2, 3] and values.numpy().tolist() == [0, 2, 5]
    with pytest.raises(ValueError, match=r"ragged_range: deltas must not be 0 \(row 1\)"):
        pe.ragged_range([0, 1], 4, [1, 0])
    with pytest.raises(
        ShapeError, match="ragged_range: starts, limits and deltas must be scalars or 1-D of one length"
    ):
        pe.ragged_range([0, 1], [4, 5, 6], 1)


def test_ragged_gather():
    splits, values = pe.ragged_gather([[0, 2, 2, 5]], [1.0, 2.0, 3.0, 4.0, 5.0], [2, 0])
    assert [s.numpy().tolist() for s in splits] == [[0, 3, 5]] and values.numpy().tolist() == [3, 4, 5, 1, 2]
    with pytest.raises(IndexError, match="ragged_gather: index 3 is out of range for 3 rows"):
        pe.ragged_gather([[0, 2, 2, 5]], [1.0, 2.0, 3.0, 4.0, 5.0], [3])
    with pytest.raises(ValueError, match="ragged_gather: output_ragged_rank 2 must be 1 for these inputs"):
        pe.ragged_gather([[0, 2, 2, 5]], [1.0, 2.0, 3.0, 4.0, 5.0], [0], 2)
    with pytest.raises(TypeError, match="ragged_gather: params_nested_splits must be a list"):
        pe.ragged_gather(pe.tensor([0, 2]), [1.0, 2.0], [0])


def test_ragged_tensor_to_tensor():
    rows = pe.ragged_tensor_to_tensor(-1, [1.0, 2.0, 3.0], 0.5, [[0, 2, 2, 3]], ["ROW_SPLITS"])
    assert rows.numpy().tolist() == [[1, 2], [0.5, 0.5], [3, 0.5]]
    # 3 rows with values in rows 0 and 2, cut to 2 rows of 3; a default of one value's shape (TF's semantics)
    ids = pe.ragged_tensor_to_tensor(
        [2, 3, 2], [[1, 2], [3, 4]], [8, 9], [3, [0, 2]], ["FIRST_DIM_SIZE", "VALUE_ROWIDS"]
    )
    assert ids.numpy().tolist() == [[[1, 2], [8, 9], [8, 9]], [[8, 9], [8, 9], [8, 9]]]
    with pytest.raises(ValueError, match="row_partition_types must be ROW_SPLITS each, or FIRST_DIM_SIZE then"):
        pe.ragged_tensor_to_tensor(-1, [1.0], 0.0, [[0, 1]], ["ROW_LENGTHS"])
    with pytest.raises(ShapeError, match=r"shape must have 2 entries \(or be a scalar -1\) for these values"):
        pe.ragged_tensor_to_tensor([1, 2, 3], [1.0], 0.0, [[0, 1]], ["ROW_SPLITS"])
