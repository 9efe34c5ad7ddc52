import numpy as np
import pytest

import py_engine as pe
from py_engine import DTypeError, ShapeError
from tests.gradcheck import check_gradients


def _same(t, expected):
    expected = np.asarray(expected)
    assert t.shape == expected.shape
    assert t.dtype == {"f": "float32", "i": "int32", "b": "bool"}[expected.dtype.kind]
    np.testing.assert_array_equal(t.numpy(), expected)


def _buffers():
    return pe.memory().num_data_buffers


ARR = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# ---- views ----------------------------------------------------------------------------------


def test_reshape_survives_dispose_of_its_source():
    x = pe.tensor(ARR)
    y = x.reshape((6, 4))
    x.dispose()
    _same(y, ARR.reshape(6, 4))
    y.dispose()
    assert _buffers() == 0


def test_a_tensor_and_its_views_hold_one_buffer():
    x, empty = pe.tensor(np.arange(6, dtype=np.float32).reshape(1, 6, 1)), pe.tensor(np.zeros((0, 3)))
    views = [
        x.reshape((2, 3, 1)),
        x.expand_dims(-1),
        x.squeeze(),
        x.flatten(),
        x.transpose((1, 0, 2)),
        x.transpose((2, 1, 0)),
        x.slice([0, 0, 0], [-1, -1, -1]),
        x.pad([[0, 0]] * 3),
        x.tile([1, 1, 1]),
        x.reverse([0, 2]),
        pe.concat([x], 1),
        pe.stack([x], 0),
        pe.transpose(empty, (1, 0)),
    ]
    assert _buffers() == 2  # x, and the size-0 tensor with its view
    _same(views[4], np.arange(6).reshape(6, 1, 1).astype(np.float32))
    _same(views[11], np.arange(6).reshape(1, 1, 6, 1).astype(np.float32))
    x.dispose()
    _same(views[3], np.arange(6, dtype=np.float32))
    pe.dispose([views, empty])
    assert _buffers() == 0


# ---- transpose ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "perm"),
    [
        ((2, 3, 4), None),
        ((2, 3, 4), (1, 0, 2)),
        ((2, 3, 4), (-1, 0, -2)),
        ((3,), None),
        ((), None),
        ((2, 0, 3), (2, 0, 1)),
        ((1, 3, 1, 2), (3, 1, 0, 2)),
    ],
)
def test_transpose_matches_numpy(shape, perm):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    _same(pe.transpose(pe.tensor(a), perm), np.transpose(a, perm))


def test_transpose_dtypes_and_T():
    _same(pe.tensor([[1, 2, 3]], "int32").T, np.array([[1], [2], [3]], np.int32))
    b = np.array([[True, False], [False, False], [True, True]])
    _same(pe.tensor(b).T, b.T)
    _same(pe.tensor(ARR).T, ARR.T)


def test_transpose_errors():
    x = pe.tensor(ARR)
    for perm in [(0, 1), (0, 0, 1), (0, 1, 3), (0, 1, -4)]:
        with pytest.raises(
            ShapeError, match=r"transpose: perm .* is not a permutation of the 3 axes of shape \(2, 3, 4\)"
        ):
            pe.transpose(x, perm)
    with pytest.raises(TypeError, match="transpose: perm must be an int or a sequence of ints"):
        pe.transpose(x, (0.5, 1, 2))
    with pytest.raises(TypeError, match="transpose: expected a Tensor, got list"):
        pe.transpose([[1, 2]])


# ---- concat, stack, unstack, split ----------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_matches_numpy(axis):
    a = ARR
    b = np.ones_like(a) * -1
    _same(pe.concat([pe.tensor(a), pe.tensor(b), pe.tensor(a)], axis), np.concatenate([a, b, a], axis))


def test_concat_size_zero_dtypes_and_values():
    a, empty = np.ones((2, 3), np.float32), np.zeros((0, 3), np.float32)
    _same(pe.concat([pe.tensor(empty), pe.tensor(a), pe.tensor(empty)]), a)
    _same(pe.concat([pe.tensor(empty), pe.tensor(empty)]), np.zeros((0, 3), np.float32))
    _same(pe.concat([pe.tensor([1, 2]), pe.tensor([0.5])]), np.array([1, 2, 0.5], np.float32))
    _same(pe.concat([pe.tensor([True]), pe.tensor([3, 4])]), np.array([1, 3, 4], np.int32))
    _same(pe.concat([pe.tensor([True]), [False]]), np.array([True, False]))
    _same(pe.concat([[1, 2], pe.tensor([3])]), np.array([1, 2, 3], np.int32))


def test_concat_errors():
    x = pe.tensor(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"concat: got shapes \[\(2, 3\), \(2, 4\)\]; .* except along axis 0"):
        pe.concat([x, pe.tensor(np.ones((2, 4)))], 0)
    with pytest.raises(
        ShapeError, match=r"concat: got shapes \[\(2, 3\), \(3,\)\]; all tensors must have the same rank"
    ):
        pe.concat([x, pe.tensor(np.ones(3))], 0)
    with pytest.raises(ShapeError, match=r"concat: cannot concatenate scalars \(rank 0\); use pe.stack"):
        pe.concat([pe.scalar(1.0), pe.scalar(2.0)])
    with pytest.raises(ShapeError, match="concat: axis 2 is out of range for a tensor of rank 2"):
        pe.concat([x, x], 2)
    with pytest.raises(ValueError, match="concat: expected at least one tensor, got an empty list"):
        pe.concat([])
    with pytest.raises(
        TypeError, match=r"concat: expected a list of tensors, got Tensor; call pe.concat\(\[a, b\], axis\)"
    ):
        pe.concat(x, 0)


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_stack_matches_numpy(axis):
    _same(pe.stack([pe.tensor(ARR), pe.tensor(ARR * 2)], axis), np.stack([ARR, ARR * 2], axis))


def test_stack_scalars_dtypes_and_errors():
    _same(pe.stack([pe.scalar(1), pe.scalar(2.5)]), np.array([1, 2.5], np.float32))
    _same(pe.stack([pe.tensor([True]), pe.tensor([False])], 1), np.array([[True, False]]))
    _same(pe.stack([pe.tensor(np.zeros((0, 2)))] * 3, 1), np.zeros((0, 3, 2), np.float32))
    with pytest.raises(ShapeError, match=r"stack: all tensors must have the same shape, got shapes \[\(2,\), \(3,\)\]"):
        pe.stack([pe.tensor([1, 2]), pe.tensor([1, 2, 3])])
    with pytest.raises(ShapeError, match="stack: axis 2 is out of range for a tensor of rank 2"):
        pe.stack([pe.tensor([1, 2])], 2)
    with pytest.raises(ValueError, match="stack: expected at least one tensor"):
        pe.stack(())


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_unstack_matches_numpy(axis):
    parts = pe.unstack(pe.tensor(ARR), axis)
    expected = [np.take(ARR, i, axis) for i in range(ARR.shape[axis])]
    assert len(parts) == len(expected)
    for t, e in zip(parts, expected):
        _same(t, e)


def test_unstack_edge_cases():
    assert pe.unstack(pe.tensor(np.zeros((2, 0))), 1) == []
    x = pe.tensor([[True, False]])
    before = _buffers()
    (row,) = pe.unstack(x)
    assert _buffers() == before  # one piece: a view
    _same(row, np.array([True, False]))
    _same(pe.unstack(pe.tensor([4, 5], "int32"))[1], np.array(5, np.int32))
    with pytest.raises(ShapeError, match="unstack: x must have rank >= 1, got a scalar"):
        pe.unstack(pe.scalar(1.0))
    with pytest.raises(ShapeError, match="unstack: axis 1 is out of range for a tensor of rank 1"):
        pe.unstack(pe.tensor([1.0]), 1)


@pytest.mark.parametrize(
    ("splits", "axis", "expected_sizes"),
    [
        (2, 0, [1, 1]),
        (3, 1, [1, 1, 1]),
        (2, -1, [2, 2]),
        ([1, 3], 2, [1, 3]),
        ([-1, 1], 2, [3, 1]),
        ([0, 3, 0], 1, [0, 3, 0]),
        ([4, -1], -1, [4, 0]),
    ],
)
def test_split_matches_numpy(splits, axis, expected_sizes):
    parts = pe.split(pe.tensor(ARR), splits, axis)
    expected = np.split(ARR, np.cumsum(expected_sizes)[:-1], axis)
    assert len(parts) == len(expected)
    for t, e in zip(parts, expected):
        _same(t, e)


def test_split_errors():
    x = pe.tensor(np.ones((5, 2), np.int32))
    _same(pe.split(pe.tensor(np.zeros((0, 2))), 2)[1], np.zeros((0, 2), np.float32))
    with pytest.raises(
        ShapeError, match=r"split: axis 0 of shape \(5, 2\) \(size 5\) cannot be split into 2 equal parts"
    ):
        pe.split(x, 2)
    with pytest.raises(ShapeError, match="cannot be split into 0 equal parts"):
        pe.split(x, 0)
    with pytest.raises(ValueError, match=r"split: sizes \(-1, -1\) must be non-negative, with at most one -1"):
        pe.split(x, [-1, -1])
    with pytest.raises(ValueError, match=r"split: sizes \(3, -2\) must be non-negative"):
        pe.split(x, [3, -2])
    with pytest.raises(ValueError, match=r"split: sizes \(\) must be non-negative"):
        pe.split(x, [])
    with pytest.raises(
        ShapeError, match=r"split: sizes \(1, 2\) do not add up to 5, the size of axis 0 of shape \(5, 2\)"
    ):
        pe.split(x, [1, 2])
    with pytest.raises(ShapeError, match=r"split: sizes \(6, -1\) do not add up to 5"):
        pe.split(x, [6, -1])
    with pytest.raises(ShapeError, match="split: x must have rank >= 1, got a scalar"):
        pe.split(pe.scalar(1), 1)
    with pytest.raises(TypeError, match="split: num_or_size_splits must be an int or a sequence of ints"):
        pe.split(x, [1.5, 3.5])


# ---- slice ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("begin", "size", "expected"),
    [
        ([0, 1, 2], [2, 2, 2], ARR[:, 1:3, 2:4]),
        ([1, 0, 0], [-1, -1, 1], ARR[1:, :, :1]),
        (1, None, ARR[1:]),
        (1, 1, ARR[1:2]),
        ([0, 2], [1, -1], ARR[:1, 2:]),
        ([0, 3, 0], [2, 0, 4], ARR[:, 3:3]),
        ([0, 1, 4], [2, 1, 0], ARR[:, 1:2, 4:]),
    ],
)
def test_slice_matches_numpy(begin, size, expected):
    _same(pe.slice(pe.tensor(ARR), begin, size), expected)


def test_slice_dtypes_and_errors():
    _same(pe.slice(pe.tensor([True, False, True]), [1], [2]), np.array([False, True]))
    _same(pe.slice(pe.tensor([[1, 2], [3, 4]], "int32"), [1, 0], [1, 2]), np.array([[3, 4]], np.int32))
    x = pe.tensor(ARR)
    with pytest.raises(
        ShapeError,
        match=r"slice: begin \(0, 2, 0\) with size \(1, 2, -1\) is out of range for shape \(2, 3, 4\) \(axis 1\)",
    ):
        pe.slice(x, [0, 2], [1, 2])
    with pytest.raises(ShapeError, match=r"slice: begin \(3, 0, 0\) .* \(axis 0\)"):
        pe.slice(x, 3)
    with pytest.raises(ShapeError, match=r"slice: begin \(-1, 0, 0\) .* \(axis 0\)"):
        pe.slice(x, -1, 1)
    with pytest.raises(ShapeError, match=r"slice: begin \(0, 0, 0\) with size \(1, 1, -2\) is out of range"):
        pe.slice(x, 0, [1, 1, -2])
    with pytest.raises(
        ShapeError, match=r"slice: begin \(0, 0, 0, 0\) and size \(\) have more entries than x has axes"
    ):
        pe.slice(x, [0, 0, 0, 0])
    with pytest.raises(TypeError, match="slice: begin must be an int or a sequence of ints, got 'a'"):
        pe.slice(x, "a")


# ---- gather and unsorted_segment_sum --------------------------------------------------------


def _gather_ref(x, indices, axis, batch_dims):
    if batch_dims == 0:
        return np.take(x, indices, axis)
    return np.stack([_gather_ref(x[i], indices[i], axis - 1, batch_dims - 1) for i in range(x.shape[0])])


@pytest.mark.parametrize(
    ("indices", "axis", "batch_dims"),
    [
        ([2, 0, 2], 1, 0),
        (1, 0, 0),
        ([[3, 0], [1, 1]], -1, 0),
        (np.zeros((0, 2), np.int32), 2, 0),
        ([[2, 0, 1], [0, 0, 0]], 1, 1),
        ([[3, 0], [1, 2]], 2, 1),
        ([[1], [0]], 2, -1),
        (np.array([[[0, 3], [1, 1], [2, 0]], [[3, 3], [0, 1], [2, 2]]]), 2, 2),
    ],
)
def test_gather_matches_numpy(indices, axis, batch_dims):
    expected = _gather_ref(
        ARR, np.asarray(indices), axis % 3, batch_dims % np.ndim(indices) if batch_dims < 0 else batch_dims
    )
    _same(pe.gather(pe.tensor(ARR), pe.tensor(indices, "int32"), axis, batch_dims), expected)


def test_gather_dtypes_and_list_indices():
    _same(pe.gather(pe.tensor([True, False]), [1, 1, 0]), np.array([False, False, True]))
    _same(pe.tensor([[1, 2], [3, 4]], "int32").gather([1], 1), np.array([[2], [4]], np.int32))
    _same(pe.gather(pe.tensor(np.zeros((0, 2))), pe.tensor(np.zeros(0), "int32")), np.zeros((0, 2), np.float32))


def test_gather_errors():
    x = pe.tensor(ARR)
    with pytest.raises(IndexError, match=r"gather: index 3 is out of range for axis 1 of size 3 \(valid: 0..2\)"):
        pe.gather(x, [0, 3], 1)
    with pytest.raises(IndexError, match="gather: index -1 is out of range for axis 0 of size 2"):
        pe.gather(x, [-1])
    with pytest.raises(DTypeError, match="gather: indices have dtype float32, expected int32"):
        pe.gather(x, [0.0])
    with pytest.raises(ShapeError, match="gather: x must have rank >= 1, got a scalar"):
        pe.gather(pe.scalar(1.0), [0])
    with pytest.raises(ShapeError, match="gather: axis 3 is out of range for a tensor of rank 3"):
        pe.gather(x, [0], 3)
    with pytest.raises(ShapeError, match=r"gather: batch_dims 2 must be between 0 and min\(axis 1, indices rank 2\)"):
        pe.gather(x, [[0], [1]], 1, batch_dims=2)
    with pytest.raises(
        ShapeError, match=r"gather: the 1 batch dimensions differ: x has shape \(2, 3, 4\), indices have shape \(3, 1\)"
    ):
        pe.gather(x, [[0], [1], [1]], 1, batch_dims=1)


def test_gather_nd_follows_tensorflow():
    x = pe.tensor(ARR)
    _same(pe.gather_nd(x, [[1, 2], [0, 0]]), ARR[[1, 0], [2, 0]])  # rows of the last axis
    _same(x.gather_nd([[1, 2, 3]]), np.array([ARR[1, 2, 3]]))
    _same(pe.gather_nd(x, [1]), ARR[1])  # a scalar batch
    _same(pe.gather_nd(x, np.zeros((2, 0), np.int32)), np.stack([ARR, ARR]))  # an empty tuple picks all of x
    _same(pe.gather_nd(pe.tensor([True, False]), [[1], [1]]), np.array([False, False]))


def test_gather_nd_errors():
    x = pe.tensor(ARR)
    with pytest.raises(
        IndexError, match=r"gather_nd: index \[1, 3\] is out of range for the first 2 axes of x, of sizes \[2, 3\]"
    ):
        pe.gather_nd(x, [[0, 0], [1, 3]])
    with pytest.raises(IndexError, match=r"gather_nd: index \[-1\] is out of range"):
        pe.gather_nd(x, [[-1]])
    with pytest.raises(DTypeError, match="gather_nd: indices have dtype float32, expected int32"):
        pe.gather_nd(x, [[0.0]])
    with pytest.raises(ShapeError, match="gather_nd: indices must have rank >= 1"):
        pe.gather_nd(x, 0)
    with pytest.raises(
        ShapeError, match=r"gather_nd: the last axis of indices \(1, 4\) has 4 entries, more than x's rank 3"
    ):
        pe.gather_nd(x, [[0, 0, 0, 0]])
    assert _buffers() == 1


def test_gather_nd_on_webgpu_writes_0_for_an_index_out_of_range(gpu):
    _same(pe.gather_nd(pe.tensor(ARR), [[0, 1], [2, 0], [1, -1]]), np.array([ARR[0, 1], np.zeros(4), np.zeros(4)]))


def test_unsorted_segment_sum():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = pe.unsorted_segment_sum(pe.tensor(data), pe.tensor([2, 0, 2], "int32"), 4)
    _same(out, np.array([data[1], np.zeros(4), data[0] + data[2], np.zeros(4)], np.float32))
    ids = [[0, 5], [-1, 1], [1, 1]]  # 5 and -1 are dropped
    out = pe.unsorted_segment_sum(pe.tensor(data.reshape(3, 2, 2).astype(np.int32)), ids, 2)
    _same(out, np.array([[0, 1], [6 + 8 + 10, 7 + 9 + 11]], np.int32))
    _same(pe.unsorted_segment_sum(pe.tensor(data), [0, 0, 0], 0), np.zeros((0, 4), np.float32))
    with pytest.raises(
        ShapeError, match=r"unsorted_segment_sum: segment_ids shape \(2,\) must be a leading part of x's shape \(3, 4\)"
    ):
        pe.unsorted_segment_sum(pe.tensor(data), [0, 1], 2)
    with pytest.raises(DTypeError, match="unsorted_segment_sum: segment_ids has dtype float32, expected int32"):
        pe.unsorted_segment_sum(pe.tensor(data), [0.0, 1, 2], 2)
    with pytest.raises(DTypeError, match="unsorted_segment_sum: x has dtype bool, expected float32 or int32"):
        pe.unsorted_segment_sum(pe.tensor([True]), [0], 2)
    with pytest.raises(ValueError, match="unsorted_segment_sum: num_segments must be >= 0, got -1"):
        pe.unsorted_segment_sum(pe.tensor(data), [0, 1, 2], -1)


# ---- tile, pad, reverse ---------------------------------------------------------------------


@pytest.mark.parametrize("reps", [(1, 2, 1), (3, 1, 2), (2, 0, 1)])
def test_tile_matches_numpy(reps):
    _same(pe.tile(pe.tensor(ARR), reps), np.tile(ARR, reps))


def test_tile_dtypes_and_errors():
    _same(pe.tile(pe.tensor([True, False]), 2), np.array([True, False, True, False]))
    _same(pe.tile(pe.tensor([[7]], "int32"), [2, 3]), np.full((2, 3), 7, np.int32))
    _same(pe.tile(pe.tensor(np.zeros((0, 2))), [3, 2]), np.zeros((0, 4), np.float32))
    with pytest.raises(ShapeError, match=r"tile: reps \(2,\) must have one entry per axis of x \(shape \(2, 3, 4\)\)"):
        pe.tile(pe.tensor(ARR), [2])
    with pytest.raises(ValueError, match=r"tile: reps \(1, -1\) must be non-negative"):
        pe.tile(pe.tensor([[1]]), [1, -1])


def test_pad_matches_numpy():
    pads = [[1, 0], [0, 2], [3, 1]]
    _same(pe.pad(pe.tensor(ARR), pads), np.pad(ARR, pads))
    _same(pe.pad(pe.tensor(ARR), pads, -1.5), np.pad(ARR, pads, constant_values=-1.5))
    _same(pe.pad(pe.tensor([1, 2], "int32"), [[2, 1]], 9), np.array([9, 9, 1, 2, 9], np.int32))
    _same(pe.pad(pe.tensor([False]), [[1, 1]], True), np.array([True, False, True]))
    _same(pe.pad(pe.tensor(np.zeros((0, 2))), [[1, 0], [0, 1]], 4), np.full((1, 3), 4, np.float32))


def test_pad_errors():
    x = pe.tensor(np.ones((2, 2)))
    with pytest.raises(
        ShapeError,
        match=r"pad: paddings \(\(1, 1\),\) must have one \[before, after\] pair per axis of x \(shape \(2, 2\)\)",
    ):
        pe.pad(x, [[1, 1]])
    with pytest.raises(ValueError, match=r"pad: paddings \(\(0, 0\), \(-1, 0\)\) must be non-negative"):
        pe.pad(x, [[0, 0], [-1, 0]])
    with pytest.raises(
        TypeError, match=r"pad: paddings must be one \[before, after\] pair of ints per axis, got \[1, 1\]"
    ):
        pe.pad(x, [1, 1])
    with pytest.raises(TypeError, match=r"pad: paddings must be one \[before, after\] pair of ints"):
        pe.pad(x, [[0, 1, 2], [0, 0]])
    with pytest.raises(TypeError, match="pad: constant_value must be a number, got str"):
        pe.pad(x, [[0, 1], [0, 0]], "a")


@pytest.mark.parametrize("axis", [0, -1, [0, 2], [1, -3], None, []])
def test_reverse_matches_numpy(axis):
    _same(pe.reverse(pe.tensor(ARR), axis), np.flip(ARR, axis if axis != [] else ()))


def test_reverse_dtypes_and_errors():
    _same(pe.reverse(pe.tensor([True, False, False])), np.array([False, False, True]))
    _same(pe.tensor([[1, 2]], "int32").reverse(1), np.array([[2, 1]], np.int32))
    _same(pe.reverse(pe.tensor(np.zeros((0, 3)))), np.zeros((0, 3), np.float32))
    with pytest.raises(ShapeError, match="reverse: axis 2 is out of range for a tensor of rank 2"):
        pe.reverse(pe.tensor([[1]]), 2)
    with pytest.raises(ShapeError, match=r"reverse: axis \[0, -2\] names the same axis twice"):
        pe.reverse(pe.tensor([[1]]), [0, -2])


# ---- gradients ------------------------------------------------------------------------------

X = np.linspace(-1, 1, 24).reshape(2, 3, 4)


def test_transpose_gradient():
    check_gradients(lambda x: pe.transpose(x, (2, 0, 1)), X)
    check_gradients(lambda x: x.T, X[0])
    check_gradients(lambda x: pe.transpose(x, (1, 0, 2)), X[:1])  # a view


def test_concat_and_stack_gradients():
    check_gradients(lambda a, b, c: pe.concat([a, b, c], -1), X[:, :2], X[:, :2, :1], np.zeros((2, 2, 0)))
    check_gradients(lambda a, b: pe.concat([a, b * 2.0, a], 0), X[:1, 0], X[:2, 0])
    check_gradients(lambda a, b: pe.stack([a, b], 1), X[0], X[1])


def test_unstack_and_split_gradients():
    check_gradients(lambda x: pe.concat([t * float(i + 1) for i, t in enumerate(pe.unstack(x, 1))], 0), X[:, :, :2])
    check_gradients(
        lambda x: pe.concat([t * float(i + 1) for i, t in enumerate(pe.split(x, [1, -1, 0], 2))], 2), X[:, :2]
    )


def test_slice_pad_tile_reverse_gradients():
    check_gradients(lambda x: pe.slice(x, [0, 1, 1], [1, 2, -1]), X)
    check_gradients(lambda x: pe.pad(x, [[1, 0], [0, 2]], 3.0), X[0])
    check_gradients(lambda x: pe.tile(x, [2, 1, 3]), X[:, :2, :2])
    check_gradients(lambda x: pe.tile(x, [0, 2]), X[0])
    check_gradients(lambda x: pe.reverse(x, [0, -1]), X[:, :2])


def test_gather_gradient():
    check_gradients(lambda x: pe.gather(x, pe.tensor([[2, 0], [2, 2]], "int32"), 1), X[:, :, :2])
    check_gradients(lambda x: pe.gather(x, pe.tensor([[3, 3, 0], [1, 2, 1]], "int32"), 2, batch_dims=1), X[:, :2])
    check_gradients(lambda x: pe.gather(x, pe.tensor([1, 1], "int32")), X[0, :2])


def test_gather_nd_gradient():
    check_gradients(lambda x: pe.gather_nd(x, pe.tensor([[1, 0], [0, 2], [1, 0]], "int32")), X[:, :3])
    check_gradients(lambda x: pe.gather_nd(x, pe.tensor([[[1, 1, 1]], [[0, 2, 0]]], "int32")), X[:, :3, :2])


def test_unsorted_segment_sum_gradient():
    ids = pe.tensor([[2, -1], [0, 2], [5, 1]], "int32")
    check_gradients(lambda x: pe.unsorted_segment_sum(x, ids, 3), X[0].reshape(3, 2, 2))
    check_gradients(lambda x: pe.unsorted_segment_sum(x, pe.tensor([0, 0], "int32"), 0), X[0, :2])


# ---- composites (tests/test_tfjs_graph_ops.py checks their values against TF.js's) --------------------------------


def test_space_batch_depth_round_trips_and_nchw():
    x = pe.tensor(np.arange(2 * 4 * 6 * 8, dtype=np.float32).reshape(2, 4, 6, 8))
    moved = pe.space_to_batch_nd(x, [2, 3], [[0, 0], [0, 0]])
    assert moved.shape == (12, 2, 2, 8)
    _same(pe.batch_to_space_nd(moved, [2, 3], [[0, 0], [0, 0]]), x.numpy())
    nchw = pe.depth_to_space(pe.transpose(x, (0, 3, 1, 2)), 2, "NCHW")
    _same(pe.transpose(nchw, (0, 2, 3, 1)), pe.depth_to_space(x, 2).numpy())
    with pytest.raises(ShapeError, match=r"space_to_batch_nd: the padded spatial shape \[5, 6\] is not divisible"):
        pe.space_to_batch_nd(x, [2, 3], [[1, 0], [0, 0]])
    with pytest.raises(ShapeError, match="batch_to_space_nd: the batch size 2 is not divisible by prod"):
        pe.batch_to_space_nd(x, [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(ShapeError, match=r"depth_to_space: the channels \(8\) must be divisible by block_size\^2 = 9"):
        pe.depth_to_space(x, 3)
    with pytest.raises(ValueError, match="depth_to_space: data_format must be 'NHWC' or 'NCHW'"):
        pe.depth_to_space(x, 2, "NWHC")


def test_mirror_pad_and_its_limits():
    _same(pe.mirror_pad(pe.tensor([1, 2, 3]), [[2, 2]], "reflect"), np.array([3, 2, 1, 2, 3, 2, 1], np.int32))
    _same(pe.mirror_pad(pe.tensor([1, 2, 3]), [[3, 1]], "symmetric"), np.array([3, 2, 1, 1, 2, 3, 3], np.int32))
    with pytest.raises(
        ShapeError,
        match=r"mirror_pad: padding \(3, 0\) of axis 0 \(size 3\) is too large for mode 'reflect': at most 2",
    ):
        pe.mirror_pad(pe.tensor([1, 2, 3]), [[3, 0]], "reflect")
    with pytest.raises(ValueError, match="mirror_pad: mode must be 'reflect' or 'symmetric'"):
        pe.mirror_pad(pe.tensor([1, 2, 3]), [[1, 0]], "wrap")


def test_scatter_ops():
    _same(pe.scatter_nd([[1], [3], [1]], [9.0, 10.0, 11.0], [5]), np.array([0, 20, 0, 10, 0], np.float32))
    _same(pe.scatter_nd([[0, 9]], [1.0], [2, 2]), np.zeros((2, 2), np.float32))  # out of range: dropped
    _same(pe.tensor_scatter_update(pe.tensor([1, 2, 3, 4]), [[1], [3]], [9, 10]), np.array([1, 9, 3, 10], np.int32))
    _same(pe.sparse_to_dense([1, 3], [5.0, 6.0], [5], -1), np.array([-1, 5, -1, 6, -1], np.float32))
    _same(pe.sparse_to_dense([[0, 1]], 7, [2, 2]), np.array([[0, 7], [0, 0]], np.int32))
    with pytest.raises(ShapeError, match=r"scatter_nd: updates have shape \(2,\), expected indices' batch \(3,\)"):
        pe.scatter_nd([[1], [3], [1]], [9.0, 10.0], [5])
    with pytest.raises(DTypeError, match="scatter_nd: indices have dtype float32, expected int32"):
        pe.scatter_nd([[1.0]], [9.0], [5])
    with pytest.raises(DTypeError, match="scatter_nd: updates has dtype bool, expected float32 or int32"):
        pe.scatter_nd([[1]], [True], [5])


def test_bincount_ops():
    _same(pe.bincount([1, 1, 3, 7], None, 5), np.array([0, 2, 0, 1, 0], np.int32))
    _same(pe.bincount([1, 1, 3], [0.5, 1.0, 2.0], 4), np.array([0, 1.5, 0, 2], np.float32))
    _same(pe.dense_bincount([[1, 1], [0, 9]], None, 3, binary_output=True), np.array([[0, 1, 0], [1, 0, 0]], np.int32))
    with pytest.raises(ShapeError, match=r"bincount: weights \(1,\) must have x's shape \(3,\), or no elements"):
        pe.bincount([1, 1, 3], [1.0], 4)
    with pytest.raises(ShapeError, match=r"bincount: x must have rank 1, got shape \(1, 3\)"):
        pe.bincount([[1, 1, 3]], None, 4)
    with pytest.raises(ValueError, match="dense_bincount: size must be >= 0, got -1"):
        pe.dense_bincount([1], None, -1)


def test_composite_gradients_and_no_leaks():
    check_gradients(lambda x: pe.space_to_batch_nd(x, [2], [[1, 0]]), X)
    check_gradients(lambda x: pe.batch_to_space_nd(x, [2], [[1, 0]]), X)
    check_gradients(lambda x: pe.depth_to_space(x, 2), X.reshape(1, 2, 3, 4))
    check_gradients(lambda x: pe.mirror_pad(x, [[1, 1], [2, 0], [0, 3]], "reflect"), X)
    check_gradients(lambda u: pe.scatter_nd(pe.tensor([[1], [0], [1]], "int32"), u, [3, 4]), X[0])
    x = pe.tensor(X)
    before = pe.memory().num_tensors
    pe.dispose([pe.mirror_pad(x, [[1, 1], [0, 0], [2, 3]], "symmetric"), pe.bincount([1, 2], None, 3)])
    pe.dispose(pe.sparse_to_dense([1, 3], [5.0, 6.0], [5]))
    assert pe.memory().num_tensors == before


def test_sparse_segment_sum_and_mean():
    data = pe.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    _same(pe.sparse_segment_sum(data, [0, 2, 1], [0, 0, 2]), np.array([[6, 8], [0, 0], [3, 4]], np.float32))
    _same(pe.sparse_segment_mean(data, [0, 2, 1], [0, 0, 2]), np.array([[3, 4], [0, 0], [3, 4]], np.float32))
    assert pe.sparse_segment_sum(data, np.zeros(0, np.int32), np.zeros(0, np.int32)).shape == (0, 2)
    check_gradients(lambda t: pe.sparse_segment_mean(t, [2, 0, 2], [0, 1, 1]), X[0])
    with pytest.raises(ShapeError, match="sparse_segment_sum: data must have rank >= 1 and indices and segment_ids"):
        pe.sparse_segment_sum(data, [0, 1], [0])
    with pytest.raises(DTypeError, match="sparse_segment_mean: indices has dtype float32, expected int32"):
        pe.sparse_segment_mean(data, [0.0], [0])
