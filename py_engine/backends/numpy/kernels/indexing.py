"""Indexing kernels on numpy: the strided slice that x[...] runs, and its gradient; the ops whose output's length
depends on the values (the GPU backend runs them on the host: backends/webgpu/host_kernel.py): Where (the coordinates
of the true elements), Unique, ListDiff (setdiff1d), SparseFillEmptyRows, SparseReshape, RaggedRange, RaggedGather and RaggedTensorToTensor."""

import math

import numpy as np

from ....kernel_registry import register_kernel


def _strided(begin, end, strides):
    """Per axis, the elements begin, begin + stride, ... before end (exclusive). Empty ranges come as (0, 0, 1);
    with a negative stride, end -1 means "through index 0", so it becomes None for numpy."""
    return tuple(slice(b, e if e >= 0 else None, s) for b, e, s in zip(begin, end, strides))


def _strided_slice_grad(dy, shape, begin, end, strides):
    out = np.zeros(shape, dy.dtype)
    out[_strided(begin, end, strides)] = dy
    return out


def _key(value):
    """A value as TF.js's unique and setdiff1d compare them: every NaN alike, 0 and -0 alike (as Python's floats)."""
    return "nan" if value != value else value


def _unique(x, axis):
    """(the distinct slices of x along axis, in order of first occurrence; for each slice, its index in them)."""
    rows = np.moveaxis(x, axis, 0)
    found, index, firsts = {}, [], []
    for k, row in enumerate(rows.reshape(rows.shape[0], math.prod(rows.shape[1:])).tolist()):
        key = tuple(map(_key, row))
        if key not in found:
            found[key] = len(firsts)
            firsts.append(k)
        index.append(found[key])
    return np.moveaxis(rows[firsts], 0, axis), np.array(index, np.int32)


def _list_diff(x, y):
    """(the values of x that are not in y, in x's order; their positions in x)."""
    drop = set(map(_key, y.tolist()))
    keep = [k for k, v in enumerate(x.tolist()) if _key(v) not in drop]
    return x[keep], np.array(keep, np.int32)


def _sparse_fill_empty_rows(indices, values, dense_shape, default_value):
    """(indices, values, empty_row_indicator, reverse_index_map) of a sparse tensor whose empty rows got one entry,
    [row, 0, ...] = default_value: entries ordered by row (stably), as TF.js's SparseFillEmptyRows."""
    rows, n = int(dense_shape[0]), indices.shape[0]
    row = indices[:, 0] if n else np.zeros(0, np.int32)
    bad = (row < 0) | (row >= rows)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(
            f"sparse_fill_empty_rows: indices[{k}] = {indices[k].tolist()} has a row outside 0..{rows - 1}"
        )
    counts = np.bincount(row, minlength=rows)
    empty = counts == 0
    starts = np.cumsum(np.maximum(counts, 1)) - np.maximum(counts, 1)
    order = np.argsort(row, kind="stable")
    sorted_rows = row[order]
    positions = np.empty(n, np.int64)
    positions[order] = starts[sorted_rows] + np.arange(n) - np.searchsorted(sorted_rows, sorted_rows)
    total = n + int(empty.sum())
    out_indices = np.zeros((total, indices.shape[1]), np.int32)
    out_values = np.empty(total, values.dtype)
    out_indices[positions], out_values[positions] = indices, values
    out_indices[starts[empty], 0], out_values[starts[empty]] = np.flatnonzero(empty), default_value
    return out_indices, out_values, empty, positions.astype(np.int32)


def _sparse_reshape(indices, shape, new_shape):
    """(indices, shape) of a sparse tensor of dense shape `shape` reshaped to new_shape (one -1 inferred), as TF.js's
    SparseReshape: each entry's flat position stays."""
    size, target = math.prod(shape.tolist()), new_shape.tolist()
    known = math.prod(d for d in target if d != -1)
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise ValueError(f"sparse_reshape: new_shape {target} may hold one -1 and no other negative size")
    if -1 in target:
        if known <= 0 or size % known:
            raise ValueError(f"sparse_reshape: cannot infer the -1 of {target} for {size} elements")
        target[target.index(-1)] = size // known
    if math.prod(target) != size:
        raise ValueError(f"sparse_reshape: new_shape {target} ({math.prod(target)} elements) must hold {size}")
    flat = np.ravel_multi_index(indices.T, shape.tolist()) if indices.size else np.zeros(indices.shape[0], np.int64)
    return np.stack(np.unravel_index(flat, target), -1).astype(np.int32).reshape(-1, len(target)), np.array(
        target, np.int32
    )


def _ragged_range(starts, limits, deltas):
    """(splits, values): row k holds start, start + delta, ... before limit; a scalar input serves every row. As
    TF.js's RaggedRange, each value by adding delta to the last, in float64."""
    rows = max((a.shape[0] for a in (starts, limits, deltas) if a.ndim), default=1)
    splits, values = [0], []
    for k in range(rows):
        start, limit, delta = (a.item() if a.ndim == 0 else a[k].item() for a in (starts, limits, deltas))
        if delta == 0:
            raise ValueError(f"ragged_range: deltas must not be 0 (row {k})")
        size = (
            0
            if (delta > 0 and limit < start) or (delta < 0 and limit > start)
            else math.ceil(abs((limit - start) / delta))
        )
        for _ in range(size):
            values.append(start)
            start += delta
        splits.append(splits[-1] + size)
    return np.array(splits, np.int32), np.array(values, starts.dtype)


def _ragged_gather(*arrays, ragged_rank):
    """(output splits..., output values): the rows of a ragged tensor (ragged_rank splits arrays, then its dense
    values) picked by indices (the last array, any shape), as TF.js's RaggedGather: indices' own axes become uniform
    ragged dimensions in front of the gathered ones."""
    param_splits, values, indices = arrays[:ragged_rank], arrays[ragged_rank], arrays[ragged_rank + 1]
    rows = param_splits[0].shape[0] - 1
    bad = (indices < 0) | (indices >= rows)
    if bad.any():
        raise IndexError(f"ragged_gather: index {indices[bad].flat[0]} is out of range for {rows} rows")
    for k, splits in enumerate(param_splits):
        end = values.shape[0] if k == ragged_rank - 1 else param_splits[k + 1].shape[0] - 1
        if splits.size == 0 or splits[0] < 0 or splits[-1] > end or (np.diff(splits) < 0).any():
            raise ValueError(f"ragged_gather: splits {k} must be sorted, non-empty, from >= 0 and within the values")
    out_splits = []
    count = 1
    for d in range(indices.ndim - 1):  # indices' outer axes: uniform rows
        count *= indices.shape[d]
        out_splits.append(list(range(0, (count + 1) * indices.shape[d + 1], indices.shape[d + 1])))
    out_splits += [[0] for _ in param_splits]
    slices = []
    for index in indices.reshape(-1).tolist():
        start, limit = index, index + 1
        for k, splits in enumerate(param_splits):
            out = out_splits[indices.ndim - 1 + k]
            shift = out[-1] - splits[start]
            out.extend((splits[start + 1 : limit + 1] + shift).tolist())
            start, limit = int(splits[start]), int(splits[limit])
        if limit > start:
            slices.append((start, limit))
    picked = np.concatenate([values[a:b] for a, b in slices]) if slices else values[:0]
    return (*(np.array(s, np.int32) for s in out_splits), picked)


def _ragged_to_dense(shape, values, default_value, *partitions, partition_types):
    """A ragged tensor (values, and its row partitions from the outermost: "ROW_SPLITS" arrays, or "FIRST_DIM_SIZE"
    then "VALUE_ROWIDS" arrays) as a dense one of `shape` (-1 or a scalar -1: as large as the rows need), default_value
    where a row is short, rows cut where shape is smaller; as TF.js's RaggedTensorToTensor."""
    if partition_types[0] == "FIRST_DIM_SIZE":
        rows, partitions, partition_types = int(partitions[0]), partitions[1:], partition_types[1:]
    else:
        rows = partitions[0].shape[0] - 1
    parents, columns, count = [], [], rows  # per level: each element's parent and its place in that parent's row
    for kind, part in zip(partition_types, partitions):
        if kind == "ROW_SPLITS":
            n = int(part[-1])
            parent = np.searchsorted(part, np.arange(n), "right") - 1
            column = np.arange(n) - part[parent]
        elif kind == "VALUE_ROWIDS":
            n = part.shape[0]
            parent, column = part, np.arange(n) - np.searchsorted(part, part, "left")
        else:
            raise ValueError(f"ragged_tensor_to_tensor: row partition type {kind!r} is not supported")
        parents.append(parent.astype(np.int64))
        columns.append(column.astype(np.int64))
        count = n
    if count != values.shape[0]:
        raise ValueError(f"ragged_tensor_to_tensor: the partitions hold {count} values, values has {values.shape[0]}")
    ids = np.arange(count)  # walked up to the root rows, noting each level's column
    per_level = []
    for parent, column in zip(reversed(parents), reversed(columns)):
        per_level.append(column[ids])
        ids = parent[ids]
    coords = [ids, *reversed(per_level)]
    ragged_dims = [rows] + [int(c.max()) + 1 if c.size else 0 for c in columns]
    inner = values.shape[1:]
    wanted = [-1] * (len(ragged_dims) + len(inner)) if shape.ndim == 0 else shape.tolist()
    out_shape = [w if w >= 0 else d for w, d in zip(wanted, [*ragged_dims, *inner])]
    out = np.empty(out_shape, values.dtype)
    out[...] = default_value  # a scalar, or one value's shape
    keep = np.all([c < d for c, d in zip(coords, out_shape)], 0)
    cut = tuple(slice(0, min(a, b)) for a, b in zip(out_shape[len(ragged_dims) :], inner))
    out[(*(c[keep] for c in coords), *cut)] = values[keep][(slice(None), *cut)]
    return out


register_kernel("StridedSlice", "numpy", lambda x, begin, end, strides: x[_strided(begin, end, strides)])
register_kernel("StridedSliceGrad", "numpy", _strided_slice_grad)
register_kernel("Where", "numpy", lambda condition: np.argwhere(condition).astype(np.int32))
register_kernel("Unique", "numpy", _unique)
register_kernel("ListDiff", "numpy", _list_diff)
register_kernel("SparseFillEmptyRows", "numpy", _sparse_fill_empty_rows)
register_kernel("SparseReshape", "numpy", _sparse_reshape)
register_kernel("RaggedRange", "numpy", _ragged_range)
register_kernel("RaggedGather", "numpy", _ragged_gather)
register_kernel("RaggedTensorToTensor", "numpy", _ragged_to_dense)
