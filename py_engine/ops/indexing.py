"""Basic indexing, x[...]: ints, slices with any step, None (a new axis) and Ellipsis, as in numpy; and the ops
that pick elements by their values, whose output's length depends on them: argwhere, unique, setdiff1d.

A result that holds x's values in x's order (full slices, None, ints on size-1 axes) is a view of x. Anything
else is one StridedSlice kernel over every axis of x, then a view that drops the int axes and adds the None axes.
"""

__all__ = [
    "argwhere",
    "ragged_gather",
    "ragged_range",
    "ragged_tensor_to_tensor",
    "setdiff1d",
    "sparse_fill_empty_rows",
    "sparse_reshape",
    "strided_slice",
    "unique",
]

import operator

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .check import axis_index
from .operands import as_temporary, release

_ADVANCED = (
    "tensor indexing: {} indexes are not supported (only ints, slices, None and ...); "
    "use pe.gather(x, indices, axis) to pick elements by index"
)


def _item(item):
    """An index item as int, slice, None or Ellipsis; anything else is a TypeError."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, (Tensor, list, tuple, np.ndarray)):
        raise TypeError(_ADVANCED.format(type(item).__name__))
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(_ADVANCED.format("boolean"))
    try:
        return operator.index(item)
    except TypeError:
        raise TypeError(
            f"tensor indexing: an index must be an int, a slice, None or ..., got {type(item).__name__}"
        ) from None


def _range(item, n):
    try:
        return range(*item.indices(n))
    except TypeError:
        raise TypeError(f"tensor indexing: slice bounds must be ints or None, got {item}") from None


def getitem(x, key) -> Tensor:
    """x[key] for basic numpy indexing; an out-of-range int is an IndexError (so iteration stops)."""
    x._live_buffer()
    items = [_item(item) for item in (key if isinstance(key, tuple) else (key,))]
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("tensor indexing: an index can only have a single ellipsis ('...')")
    used = sum(item is not None and item is not Ellipsis for item in items)
    if used > x.rank:
        raise IndexError(f"too many indices for tensor: tensor is {x.rank}-dimensional, but {used} were indexed")
    at = next((k for k, item in enumerate(items) if item is Ellipsis), len(items))
    items[at : at + 1] = [slice(None)] * (x.rank - used)

    begin, end, strides, shape, is_view, axis = [], [], [], [], True, 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, slice):
            r = _range(item, n)
            shape.append(len(r))
            is_view = is_view and r == range(n)
            start, stop, step = (r.start, r.stop, r.step) if r else (0, 0, 1)  # stop -1 with step < 0: through 0
        else:
            if not -n <= item < n:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size {n}")
            start, stop, step = item % n, item % n + 1, 1
            is_view = is_view and n == 1
        begin.append(start)
        end.append(stop)
        strides.append(step)
        axis += 1
    shape = tuple(shape)
    if is_view:
        return ENGINE.view(x, shape)
    part = ENGINE.run_kernel(
        "StridedSlice", (x,), {"begin": tuple(begin), "end": tuple(end), "strides": tuple(strides)}
    )
    if part.shape == shape:
        return part
    out = ENGINE.view(part, shape)
    part.dispose()
    return out


def argwhere(condition) -> Tensor:
    """The coordinates (int32, shape [n, rank], in row-major order) of the n true elements of `condition` (bool; a
    number counts as true when nonzero), as TensorFlow's Where with one argument (TF.js's whereAsync).

    The result's length depends on the values: a GPU backend reads `condition` back and finds them on the host (one
    readback), as TF.js does."""
    temps = []
    try:
        condition = as_temporary(condition, "argwhere", temps)
        return ENGINE.run_kernel("Where", (condition,))
    finally:
        release(temps)


def unique(x, axis=0) -> tuple[Tensor, Tensor]:
    """(values, indices): the distinct slices of x along `axis` in order of first appearance, and for each slice of
    x its position in values (int32), as TF.js's unique (TensorFlow's Unique / UniqueV2). NaNs count as one value,
    and so do 0 and -0. On a GPU backend x is read back and compared on the host (one readback)."""
    temps = []
    try:
        x = as_temporary(x, "unique", temps)
        if x.rank == 0:
            raise ShapeError("unique: x must have rank >= 1, got a scalar")
        return ENGINE.run_kernel("Unique", (x,), {"axis": axis_index("unique", axis, x.rank)})
    finally:
        release(temps)


def setdiff1d(x, y) -> tuple[Tensor, Tensor]:
    """(out, indices): the values of x (1-D) that are not in y (1-D), in x's order, and their positions in x
    (int32), as TF.js's setdiff1dAsync (TensorFlow's ListDiff). On a GPU backend both are read back."""
    temps = []
    try:
        x, y = as_temporary(x, "setdiff1d", temps), as_temporary(y, "setdiff1d", temps)
        if x.dtype != y.dtype:
            raise DTypeError(f"setdiff1d: x and y must have one dtype, got {x.dtype} and {y.dtype}")
        if x.rank != 1 or y.rank != 1:
            raise ShapeError(f"setdiff1d: x and y must be 1-D, got shapes {x.shape} and {y.shape}")
        return ENGINE.run_kernel("ListDiff", (x, y))
    finally:
        release(temps)


def strided_slice(
    x, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0
) -> Tensor:
    """TF.js's stridedSlice (TensorFlow's StridedSlice): begin, end and strides (default ones) per spec entry, whose
    bit i in the masks makes entry i start from the beginning (begin_mask), run to the end (end_mask), stand for the
    axes not named (ellipsis_mask: at most one), insert a new axis (new_axis_mask) or take the single index begin[i]
    and drop the axis (shrink_axis_mask). Runs as x[...] (a view or one StridedSlice kernel)."""
    op = "strided_slice"
    try:
        begin, end = [operator.index(b) for b in begin], [operator.index(e) for e in end]
        strides = [1] * len(begin) if strides is None else [operator.index(s) for s in strides]
        masks = [operator.index(m) for m in (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)]
    except TypeError:
        raise TypeError(f"{op}: begin, end and strides must be lists of ints and the masks ints") from None
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"{op}: begin {begin}, end {end} and strides {strides} must have one length")
    if 0 in strides:
        raise ValueError(f"{op}: strides {strides} must not contain 0")
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = masks
    if bin(ellipsis_mask).count("1") > 1:
        raise ValueError(f"{op}: ellipsis_mask {ellipsis_mask} may set one bit only")
    key = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            key.append(b)
        else:
            key.append(slice(None if begin_mask & bit else b, None if end_mask & bit else e, s))
    temps = []
    try:
        return getitem(as_temporary(x, op, temps), tuple(key))  # a view outlives the temporary it shows
    finally:
        release(temps)


def _sparse_inputs(op, indices, dense_shape, temps):
    indices, dense_shape = as_temporary(indices, op, temps), as_temporary(dense_shape, op, temps)
    if indices.dtype != dtypes.int32 or dense_shape.dtype != dtypes.int32:
        raise DTypeError(
            f"{op}: indices and the dense shape must be int32, got {indices.dtype} and {dense_shape.dtype}"
        )
    if indices.rank != 2 or dense_shape.rank != 1 or indices.shape[1] != dense_shape.shape[0]:
        raise ShapeError(
            f"{op}: indices must be [n, rank] and the dense shape [rank], got {indices.shape} and {dense_shape.shape}"
        )
    return indices, dense_shape


def sparse_fill_empty_rows(indices, values, dense_shape, default_value) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(indices, values, empty_row_indicator, reverse_index_map): the sparse tensor (indices [n, rank] int32, values
    [n], dense_shape [rank]) with an entry [row, 0, ...] = default_value added for each row that has none, entries
    ordered by row, as TF.js's sparse.sparseFillEmptyRows. On a GPU backend the inputs are read back."""
    op = "sparse_fill_empty_rows"
    temps = []
    try:
        indices, dense_shape = _sparse_inputs(op, indices, dense_shape, temps)
        values = as_temporary(values, op, temps)
        if values.shape != indices.shape[:1]:
            raise ShapeError(f"{op}: values must be [n] = {indices.shape[:1]}, got {values.shape}")
        default = as_temporary(default_value, op, temps, values.dtype)
        if default.size != 1:
            raise ShapeError(f"{op}: default_value must be one value, got shape {default.shape}")
        return ENGINE.run_kernel("SparseFillEmptyRows", (indices, values, dense_shape, default))
    finally:
        release(temps)


def sparse_reshape(input_indices, input_shape, new_shape) -> tuple[Tensor, Tensor]:
    """(output_indices, output_shape): the sparse tensor of dense shape input_shape (int32 [rank]) with entries at
    input_indices ([n, rank]) reshaped to new_shape (one -1 inferred), each entry keeping its flat position, as TF.js's
    sparse.sparseReshape. On a GPU backend the inputs are read back."""
    op = "sparse_reshape"
    temps = []
    try:
        indices, shape = _sparse_inputs(op, input_indices, input_shape, temps)
        new_shape = as_temporary(new_shape, op, temps)
        if new_shape.dtype != dtypes.int32 or new_shape.rank != 1:
            raise ShapeError(f"{op}: new_shape must be a 1-D int32 tensor, got {new_shape.dtype} {new_shape.shape}")
        return ENGINE.run_kernel("SparseReshape", (indices, shape, new_shape))
    finally:
        release(temps)


def ragged_range(starts, limits, deltas) -> tuple[Tensor, Tensor]:
    """(nested_splits, dense_values): the ranges start, start + delta, ... before limit of each row (starts, limits
    and deltas 1-D of one length, or scalars serving every row), as a ragged tensor: row k is
    dense_values[nested_splits[k]:nested_splits[k + 1]], as TF.js's raggedRange. Values in starts' dtype (float32 or
    int32). On a GPU backend the inputs are read back."""
    op = "ragged_range"
    temps = []
    try:
        starts = as_temporary(starts, op, temps)
        if starts.dtype not in (dtypes.float32, dtypes.int32):
            raise DTypeError(f"{op}: starts has dtype {starts.dtype}, expected float32 or int32")
        limits, deltas = (as_temporary(t, op, temps, starts.dtype) for t in (limits, deltas))
        sizes = {t.shape[0] for t in (starts, limits, deltas) if t.rank == 1}
        if any(t.rank > 1 for t in (starts, limits, deltas)) or len(sizes) > 1:
            raise ShapeError(
                f"{op}: starts, limits and deltas must be scalars or 1-D of one length, got {starts.shape}, "
                f"{limits.shape} and {deltas.shape}"
            )
        return ENGINE.run_kernel("RaggedRange", (starts, limits, deltas))
    finally:
        release(temps)


def ragged_gather(
    params_nested_splits, params_dense_values, indices, output_ragged_rank=None
) -> tuple[list[Tensor], Tensor]:
    """(output_nested_splits, output_dense_values): the rows of the ragged tensor (params_nested_splits, a list of
    int32 row splits from the outermost, and params_dense_values) at indices (int32, any shape), as TF.js's
    raggedGather; indices' own axes come first as uniform ragged dimensions. output_ragged_rank, when given, must be
    what that makes (indices.rank - 1 + len(params_nested_splits)). On a GPU backend the inputs are read back."""
    op = "ragged_gather"
    if isinstance(params_nested_splits, Tensor) or not isinstance(params_nested_splits, (list, tuple)):
        raise TypeError(f"{op}: params_nested_splits must be a list of 1-D int32 tensors, one per ragged dimension")
    if not params_nested_splits:
        raise ValueError(f"{op}: params_nested_splits must name at least one ragged dimension")
    temps = []
    try:
        splits = [as_temporary(t, op, temps) for t in params_nested_splits]
        values, indices = as_temporary(params_dense_values, op, temps), as_temporary(indices, op, temps)
        if any(t.dtype != dtypes.int32 or t.rank != 1 for t in splits) or indices.dtype != dtypes.int32:
            raise DTypeError(f"{op}: the splits must be 1-D int32 tensors and indices int32")
        if values.rank == 0 or indices.rank == 0:
            raise ShapeError(
                f"{op}: params_dense_values and indices must have rank >= 1, got {values.shape} and {indices.shape}"
            )
        rank = indices.rank - 1 + len(splits)
        if output_ragged_rank is not None and output_ragged_rank != rank:
            raise ValueError(f"{op}: output_ragged_rank {output_ragged_rank} must be {rank} for these inputs")
        out = ENGINE.run_kernel("RaggedGather", (*splits, values, indices), {"ragged_rank": len(splits)})
        return list(out[:-1]), out[-1]
    finally:
        release(temps)


_PARTITIONS = ("ROW_SPLITS", "FIRST_DIM_SIZE", "VALUE_ROWIDS")


def ragged_tensor_to_tensor(shape, values, default_value, row_partition_tensors, row_partition_types) -> Tensor:
    """A ragged tensor as a dense one, as TF.js's raggedTensorToTensor (TensorFlow's RaggedTensorToTensor): values
    [n, ...] split into rows by row_partition_tensors (int32, outermost first), whose row_partition_types are
    "ROW_SPLITS" each, or "FIRST_DIM_SIZE" (a scalar row count) then "VALUE_ROWIDS" each; shape (int32, -1 entries
    or a scalar -1: as large as the rows need) cuts longer rows; short rows get default_value (a scalar or one value's
    shape). On a GPU backend the inputs are read back."""
    op = "ragged_tensor_to_tensor"
    types = list(row_partition_types)
    if not types or any(t not in _PARTITIONS for t in types) or "FIRST_DIM_SIZE" in types[1:]:
        raise ValueError(
            f"{op}: row_partition_types must be ROW_SPLITS each, or FIRST_DIM_SIZE then VALUE_ROWIDS each, got {types}"
        )
    if len(types) != len(row_partition_tensors) or (types[0] == "FIRST_DIM_SIZE") != ("VALUE_ROWIDS" in types):
        raise ValueError(f"{op}: {len(row_partition_tensors)} row partitions do not match the types {types}")
    temps = []
    try:
        values = as_temporary(values, op, temps)
        shape = as_temporary(shape, op, temps, dtypes.int32)
        default = as_temporary(default_value, op, temps, values.dtype)
        parts = [as_temporary(t, op, temps) for t in row_partition_tensors]
        if any(t.dtype != dtypes.int32 for t in parts):
            raise DTypeError(f"{op}: the row partition tensors must be int32")
        ragged_rank = len(types) - (types[0] == "FIRST_DIM_SIZE")
        rank = 1 + ragged_rank + values.rank - 1
        if values.rank == 0 or (shape.rank == 1 and shape.shape[0] != rank) or shape.rank > 1:
            raise ShapeError(
                f"{op}: shape must have {rank} entries (or be a scalar -1) for these values, got {shape.shape}"
            )
        attrs = {"partition_types": tuple(types)}
        return ENGINE.run_kernel("RaggedTensorToTensor", (shape, values, default, *parts), attrs)
    finally:
        release(temps)
