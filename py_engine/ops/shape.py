"""Shape ops and their gradients. reshape, expand_dims, squeeze and flatten are views: they share the data
buffer. The other ops return a view too when the result holds x's values in x's order (a transpose that
moves only size-1 axes, a full slice, zero padding, ...)."""

__all__ = [
    "batch_to_space_nd",
    "bincount",
    "broadcast_to",
    "concat",
    "dense_bincount",
    "depth_to_space",
    "expand_dims",
    "flatten",
    "gather",
    "gather_nd",
    "mirror_pad",
    "pad",
    "reshape",
    "reverse",
    "scatter_nd",
    "slice",
    "space_to_batch_nd",
    "sparse_segment_mean",
    "sparse_segment_sum",
    "sparse_to_dense",
    "split",
    "squeeze",
    "stack",
    "tensor_scatter_update",
    "tile",
    "transpose",
    "unsorted_segment_sum",
    "unstack",
]

import functools
import math
import numbers
import operator

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .check import axes as normalize_axes
from .check import axis_index, broadcast_shapes, dtype_in
from .creation import ones
from .math import greater, logical_and, where
from .operands import as_temporary, release
from .operands import tensor as host_tensor
from .reduce import all as reduce_all
from .reduce import sum as reduce_sum

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_


def _tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    x._live_buffer()
    return x


def _ints(op, values, name):
    """An int or a sequence of ints as a tuple of ints."""
    try:
        return (operator.index(values),) if not hasattr(values, "__len__") else tuple(map(operator.index, values))
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int or a sequence of ints, got {values!r}") from None


def _tensor_list(op, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: expected a list of tensors, got {type(tensors).__name__}; call pe.{op}([a, b], axis)")
    if not tensors:
        raise ValueError(f"{op}: expected at least one tensor, got an empty list")


def reshape(x, shape) -> Tensor:
    """The same values in a new shape; one dimension may be -1 (inferred). Shares x's data."""
    x = _tensor("reshape", x)
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    known = 1
    for d in shape:
        if d != -1:
            if d < 0:
                raise ShapeError(f"reshape: shape {shape} has a negative dimension")
            known *= d
    if len(unknown) > 1:
        raise ShapeError(f"reshape: shape {shape} has more than one -1")
    if unknown:
        if known == 0 or x.size % known:
            raise ShapeError(f"reshape: cannot infer the -1 in {shape} for a tensor of {x.size} elements")
        shape = shape[: unknown[0]] + (x.size // known,) + shape[unknown[0] + 1 :]
    elif known != x.size:
        raise ShapeError(f"reshape: cannot reshape {x.shape} ({x.size} elements) into {shape} ({known} elements)")
    return ENGINE.view(x, shape)


def expand_dims(x, axis=0) -> Tensor:
    x = _tensor("expand_dims", x)
    axis = axis_index("expand_dims", axis, x.rank + 1)
    return ENGINE.view(x, x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, axis=None) -> Tensor:
    """Drop size-1 dimensions (all of them, or those in `axis`)."""
    x = _tensor("squeeze", x)
    if axis is None:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = {axis_index("squeeze", a, x.rank) for a in (axis if isinstance(axis, (list, tuple)) else [axis])}
        for a in drop:
            if x.shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return ENGINE.view(x, tuple(d for i, d in enumerate(x.shape) if i not in drop))


def flatten(x) -> Tensor:
    x = _tensor("flatten", x)
    return ENGINE.view(x, (x.size,))


def broadcast_to(x, shape) -> Tensor:
    """x repeated along new leading axes and size-1 axes to fill `shape` (NumPy rules)."""
    x = _tensor("broadcast_to", x)
    shape = tuple(int(d) for d in shape)
    if len(shape) < x.rank or broadcast_shapes("broadcast_to", x.shape, shape) != shape:
        raise ShapeError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    if shape == x.shape:
        return ENGINE.view(x, shape)
    return ENGINE.run_kernel("BroadcastTo", (x,), {"shape": shape})


def transpose(x, perm=None) -> Tensor:
    """Axes reordered: axis i of the result is axis perm[i] of x (default: all axes reversed)."""
    x = _tensor("transpose", x)
    rank = x.rank
    if perm is None:
        perm = tuple(range(rank - 1, -1, -1))
    else:
        perm = _ints("transpose", perm, "perm")
        if len(perm) != rank or not all(-rank <= a < rank for a in perm) or len({a % rank for a in perm}) != rank:
            raise ShapeError(f"transpose: perm {perm} is not a permutation of the {rank} axes of shape {x.shape}")
        perm = tuple(a % rank for a in perm)
    shape = tuple(x.shape[a] for a in perm)
    moved = [a for a in perm if x.shape[a] != 1]
    if x.size == 0 or moved == sorted(moved):  # the values keep their order
        return ENGINE.view(x, shape)
    return ENGINE.run_kernel("Transpose", (x,), {"perm": perm})


def concat(tensors, axis=0) -> Tensor:
    """Tensors joined along an existing axis; all other dimensions must match. Dtypes upcast as in add."""
    _tensor_list("concat", tensors)
    temps = []
    try:
        xs = [as_temporary(t, "concat", temps) for t in tensors]
        dtype = functools.reduce(dtypes.upcast, (t.dtype for t in xs))
        xs = [as_temporary(t, "concat", temps, dtype) for t in xs]
        rank = xs[0].rank
        if rank == 0:
            raise ShapeError("concat: cannot concatenate scalars (rank 0); use pe.stack to make a new axis")
        axis = axis_index("concat", axis, rank)
        shapes = [t.shape for t in xs]
        rest = shapes[0][:axis] + shapes[0][axis + 1 :]
        if any(len(s) != rank or s[:axis] + s[axis + 1 :] != rest for s in shapes):
            raise ShapeError(
                f"concat: got shapes {shapes}; all tensors must have the same rank and the same dimensions "
                f"except along axis {axis}"
            )
        if len(xs) == 1:
            return ENGINE.view(xs[0], xs[0].shape)
        return ENGINE.run_kernel("Concat", tuple(xs), {"axis": axis})
    finally:
        release(temps)


def stack(tensors, axis=0) -> Tensor:
    """Tensors of one shape joined along a new axis. Dtypes upcast as in add."""
    _tensor_list("stack", tensors)
    temps = []
    try:
        xs = [as_temporary(t, "stack", temps) for t in tensors]
        shapes = [t.shape for t in xs]
        if any(s != shapes[0] for s in shapes):
            raise ShapeError(f"stack: all tensors must have the same shape, got shapes {shapes}")
        axis = axis_index("stack", axis, xs[0].rank + 1)
        expanded = [ENGINE.view(t, shapes[0][:axis] + (1,) + shapes[0][axis:]) for t in xs]
        temps += expanded
        return concat(expanded, axis)
    finally:
        release(temps)


def _pieces(x, sizes, axis):
    """Consecutive slices of x along axis with the given sizes."""
    begin, pieces = [0] * x.rank, []
    for s in sizes:
        pieces.append(slice(x, begin, x.shape[:axis] + (s,) + x.shape[axis + 1 :]))
        begin[axis] += s
    return pieces


def unstack(x, axis=0) -> list[Tensor]:
    """The slices of x along axis, as a list of tensors with that axis removed."""
    x = _tensor("unstack", x)
    if x.rank == 0:
        raise ShapeError("unstack: x must have rank >= 1, got a scalar")
    axis = axis_index("unstack", axis, x.rank)
    shape, out = x.shape[:axis] + x.shape[axis + 1 :], []
    for piece in _pieces(x, [1] * x.shape[axis], axis):
        out.append(ENGINE.view(piece, shape))
        piece.dispose()
    return out


def split(x, num_or_size_splits, axis=0) -> list[Tensor]:
    """x cut along axis into a list of tensors: `num_or_size_splits` equal parts (an int that divides the axis
    size) or parts of the given sizes, one of which may be -1 (the rest)."""
    x = _tensor("split", x)
    if x.rank == 0:
        raise ShapeError("split: x must have rank >= 1, got a scalar")
    axis = axis_index("split", axis, x.rank)
    n = x.shape[axis]
    if isinstance(num_or_size_splits, numbers.Integral) and not isinstance(num_or_size_splits, bool):
        k = int(num_or_size_splits)
        if k <= 0 or n % k:
            raise ShapeError(f"split: axis {axis} of shape {x.shape} (size {n}) cannot be split into {k} equal parts")
        return _pieces(x, [n // k] * k, axis)
    given = _ints("split", num_or_size_splits, "num_or_size_splits")
    unknown = [i for i, s in enumerate(given) if s == -1]
    if not given or len(unknown) > 1 or any(s < -1 for s in given):
        raise ValueError(f"split: sizes {given} must be non-negative, with at most one -1 (the rest)")
    sizes, known = list(given), sum(s for s in given if s != -1)
    if unknown:
        sizes[unknown[0]] = n - known
    if sum(sizes) != n or min(sizes) < 0:
        raise ShapeError(f"split: sizes {given} do not add up to {n}, the size of axis {axis} of shape {x.shape}")
    return _pieces(x, sizes, axis)


def slice(x, begin, size=None) -> Tensor:
    """The block of x that starts at `begin` with `size` elements per axis (-1: to the end). Ints, or lists
    shorter than x's rank, cover the leading axes; the other axes are taken whole."""
    x = _tensor("slice", x)
    begin = _ints("slice", begin, "begin")
    size = () if size is None else _ints("slice", size, "size")
    if len(begin) > x.rank or len(size) > x.rank:
        raise ShapeError(f"slice: begin {begin} and size {size} have more entries than x has axes (shape {x.shape})")
    begin += (0,) * (x.rank - len(begin))
    size += (-1,) * (x.rank - len(size))
    sizes = tuple(d - b if s == -1 else s for b, s, d in zip(begin, size, x.shape))
    for axis, (b, s, d) in enumerate(zip(begin, sizes, x.shape)):
        if not (0 <= b <= d and 0 <= s <= d - b):
            raise ShapeError(f"slice: begin {begin} with size {size} is out of range for shape {x.shape} (axis {axis})")
    if sizes == x.shape:
        return ENGINE.view(x, x.shape)
    return ENGINE.run_kernel("Slice", (x,), {"begin": begin, "size": sizes})


def gather(x, indices, axis=0, batch_dims=0) -> Tensor:
    """Slices of x along `axis` at `indices` (int32, any shape), with shape
    x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis + 1:]. The first batch_dims axes of x and indices
    are batch axes: each batch entry gathers with its own indices."""
    x = _tensor("gather", x)
    temps = []
    try:
        indices = as_temporary(indices, "gather", temps)
        if indices.dtype != I32:
            raise DTypeError(f"gather: indices have dtype {indices.dtype}, expected int32")
        if x.rank == 0:
            raise ShapeError("gather: x must have rank >= 1, got a scalar")
        axis = axis_index("gather", axis, x.rank)
        b = operator.index(batch_dims)
        b += indices.rank if b < 0 else 0
        if not 0 <= b <= min(axis, indices.rank):
            raise ShapeError(
                f"gather: batch_dims {batch_dims} must be between 0 and min(axis {axis}, indices rank {indices.rank})"
            )
        if x.shape[:b] != indices.shape[:b]:
            raise ShapeError(
                f"gather: the {b} batch dimensions differ: x has shape {x.shape}, indices have shape {indices.shape}"
            )
        return ENGINE.run_kernel("Gather", (x, indices), {"axis": axis, "batch_dims": b})
    finally:
        release(temps)


def gather_nd(x, indices) -> Tensor:
    """Slices of x picked by index tuples, as TensorFlow's GatherNd: indices (int32) has shape batch + (k,) with
    k <= x's rank, each row an index into x's first k axes; the result has shape batch + x.shape[k:].
    An index out of range is an IndexError on numpy (a GPU writes 0 there, as TensorFlow does on GPUs)."""
    x = _tensor("gather_nd", x)
    temps = []
    try:
        indices = as_temporary(indices, "gather_nd", temps)
        if indices.dtype != I32:
            raise DTypeError(f"gather_nd: indices have dtype {indices.dtype}, expected int32")
        if indices.rank == 0:
            raise ShapeError("gather_nd: indices must have rank >= 1 (its last axis indexes x), got a scalar")
        k, batch = indices.shape[-1], indices.shape[:-1]
        if k > x.rank:
            raise ShapeError(
                f"gather_nd: the last axis of indices {indices.shape} has {k} entries, more than x's rank {x.rank} "
                f"(shape {x.shape})"
            )
        if k == 0:  # each empty index tuple picks the whole of x
            whole = ENGINE.view(x, (1,) * len(batch) + x.shape)
            try:
                return broadcast_to(whole, batch + x.shape)
            finally:
                whole.dispose()
        return ENGINE.run_kernel("GatherNd", (x, indices))
    finally:
        release(temps)


def unsorted_segment_sum(x, segment_ids, num_segments) -> Tensor:
    """out[k] = the sum of the x[i...] whose segment_ids[i...] is k. segment_ids (int32) has the shape of x's
    leading axes; the result has shape (num_segments,) + the rest. Ids outside 0..num_segments-1 are dropped."""
    op = "unsorted_segment_sum"
    x = _tensor(op, x)
    temps = []
    try:
        ids = as_temporary(segment_ids, op, temps)
        dtype_in(op, x, (F32, I32))
        dtype_in(op, ids, (I32,), "segment_ids")
        if ids.shape != x.shape[: ids.rank]:
            raise ShapeError(f"{op}: segment_ids shape {ids.shape} must be a leading part of x's shape {x.shape}")
        n = operator.index(num_segments)
        if n < 0:
            raise ValueError(f"{op}: num_segments must be >= 0, got {n}")
        return ENGINE.run_kernel("UnsortedSegmentSum", (x, ids), {"num_segments": n})
    finally:
        release(temps)


def tile(x, reps) -> Tensor:
    """x repeated reps[i] times along each axis i."""
    x = _tensor("tile", x)
    reps = _ints("tile", reps, "reps")
    if len(reps) != x.rank:
        raise ShapeError(f"tile: reps {reps} must have one entry per axis of x (shape {x.shape})")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps {reps} must be non-negative")
    if all(r == 1 for r in reps):
        return ENGINE.view(x, x.shape)
    return ENGINE.run_kernel("Tile", (x,), {"reps": reps})


def pad(x, paddings, constant_value=0) -> Tensor:
    """x with `constant_value` added around it: paddings is one [before, after] pair per axis."""
    x = _tensor("pad", x)
    try:
        pads = tuple((operator.index(before), operator.index(after)) for before, after in paddings)
    except (TypeError, ValueError):
        raise TypeError(f"pad: paddings must be one [before, after] pair of ints per axis, got {paddings!r}") from None
    if len(pads) != x.rank:
        raise ShapeError(f"pad: paddings {pads} must have one [before, after] pair per axis of x (shape {x.shape})")
    if any(p < 0 for pair in pads for p in pair):
        raise ValueError(f"pad: paddings {pads} must be non-negative")
    if not isinstance(constant_value, numbers.Real):
        raise TypeError(f"pad: constant_value must be a number, got {type(constant_value).__name__}")
    if not any(p for pair in pads for p in pair):
        return ENGINE.view(x, x.shape)
    value = {F32: float, I32: int, BOOL: bool}[x.dtype](constant_value)
    return ENGINE.run_kernel("Pad", (x,), {"paddings": pads, "constant_value": value})


def reverse(x, axis=None) -> Tensor:
    """x with the order of elements reversed along `axis` (an int or a list; default all axes)."""
    x = _tensor("reverse", x)
    axis = tuple(a for a in normalize_axes("reverse", axis, x.rank) if x.shape[a] > 1)
    if not axis:
        return ENGINE.view(x, x.shape)
    return ENGINE.run_kernel("Reverse", (x,), {"axis": axis})


# ---- composites: ops written with the ops above (their gradients come with them) ----------------------------------


def _pairs(op, pairs, n, name):
    """n [before, after] pairs of non-negative ints."""
    try:
        out = tuple((operator.index(a), operator.index(b)) for a, b in pairs)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be [before, after] pairs of ints, got {pairs!r}") from None
    if len(out) != n or any(p < 0 for pair in out for p in pair):
        raise ValueError(f"{op}: {name} must be {n} pairs of non-negative ints, got {pairs!r}")
    return out


def mirror_pad(x, paddings, mode) -> Tensor:
    """x padded with its own mirror image, as TF.js's mirrorPad: mode "reflect" leaves the edge out (abc -> cbabcba,
    at most size - 1 a side), "symmetric" repeats it (abc -> babccb, at most size a side). One gather per padded
    axis."""
    x = _tensor("mirror_pad", x)
    if mode not in ("reflect", "symmetric"):
        raise ValueError(f"mirror_pad: mode must be 'reflect' or 'symmetric', got {mode!r}")
    pads = _pairs("mirror_pad", paddings, x.rank, "paddings")
    edge = 1 if mode == "reflect" else 0
    for axis, ((a, b), n) in enumerate(zip(pads, x.shape)):
        if max(a, b) > n - edge:
            raise ShapeError(
                f"mirror_pad: padding {(a, b)} of axis {axis} (size {n}) is too large for mode {mode!r}: "
                f"at most {n - edge} a side"
            )
    with ENGINE.scope("mirror_pad") as scope:
        out = x
        for axis, ((a, b), n) in enumerate(zip(pads, x.shape)):
            if a or b:
                p = list(range(-a, n + b))
                index = [-q - 1 + edge if q < 0 else 2 * n - 1 - edge - q if q >= n else q for q in p]
                out = gather(out, host_tensor(index, I32), axis)
        return scope.export(out if out is not x else ENGINE.view(x, x.shape))


def _block(op, block_shape, x, first):
    """block_shape as a tuple of positive ints, one per spatial axis of x (the axes after `first`)."""
    block = _ints(op, block_shape, "block_shape")
    if not block or min(block) < 1 or x.rank < first + len(block):
        raise ValueError(f"{op}: block_shape {block_shape!r} must be positive ints, one per spatial axis of {x.shape}")
    return block


def space_to_batch_nd(x, block_shape, paddings) -> Tensor:
    """TF.js's spaceToBatchND: the M spatial axes after the batch axis, padded, are cut into blocks of block_shape
    whose offsets move into the batch axis (offset-major): [B, *spatial, *rest] -> [B * prod(block), *(spatial
    padded / block), *rest]."""
    op = "space_to_batch_nd"
    x = _tensor(op, x)
    block = _block(op, block_shape, x, 1)
    m = len(block)
    pads = _pairs(op, paddings, m, "paddings")
    padded = [n + a + b for n, (a, b) in zip(x.shape[1 : m + 1], pads)]
    if any(p % k for p, k in zip(padded, block)):
        raise ShapeError(f"{op}: the padded spatial shape {padded} is not divisible by block_shape {block}")
    rest = x.shape[m + 1 :]
    with ENGINE.scope(op) as scope:
        y = pad(x, ((0, 0), *pads, *((0, 0),) * len(rest)))
        split_shape = (x.shape[0], *(d for p, k in zip(padded, block) for d in (p // k, k)), *rest)
        y = reshape(y, split_shape)
        perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(2 * m + 1, y.rank))
        y = transpose(y, perm)
        batch = x.shape[0] * math.prod(block)
        return scope.export(reshape(y, (batch, *(p // k for p, k in zip(padded, block)), *rest)))


def batch_to_space_nd(x, block_shape, crops) -> Tensor:
    """TF.js's batchToSpaceND, space_to_batch_nd's inverse: [B * prod(block), *spatial, *rest] -> [B, *(spatial *
    block, cropped), *rest]."""
    op = "batch_to_space_nd"
    x = _tensor(op, x)
    block = _block(op, block_shape, x, 1)
    m, blocks = len(block), math.prod(block)
    cuts = _pairs(op, crops, m, "crops")
    if x.shape[0] % blocks:
        raise ShapeError(f"{op}: the batch size {x.shape[0]} is not divisible by prod(block_shape {block}) = {blocks}")
    spatial, rest = x.shape[1 : m + 1], x.shape[m + 1 :]
    full = [d * k for d, k in zip(spatial, block)]
    if any(a + b > f for (a, b), f in zip(cuts, full)):
        raise ShapeError(f"{op}: crops {cuts} remove more than the spatial shape {full}")
    with ENGINE.scope(op) as scope:
        y = reshape(x, (*block, x.shape[0] // blocks, *spatial, *rest))
        perm = [m] + [a for i in range(m) for a in (m + 1 + i, i)] + list(range(2 * m + 1, y.rank))
        y = reshape(transpose(y, perm), (x.shape[0] // blocks, *full, *rest))
        begin = (0, *(a for a, _ in cuts), *(0,) * len(rest))
        size = (-1, *(f - a - b for (a, b), f in zip(cuts, full)), *(-1,) * len(rest))
        return scope.export(slice(y, begin, size))


def depth_to_space(x, block_size, data_format="NHWC") -> Tensor:
    """TF.js's depthToSpace: each pixel's channels become a block_size x block_size patch of pixels (channels in
    depth-column-row order, as TensorFlow's DCR): [N, H, W, C] -> [N, H * b, W * b, C / b^2] (or NCHW)."""
    op = "depth_to_space"
    x = _tensor(op, x)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{op}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    b = operator.index(block_size)
    if x.rank != 4 or b < 2:
        raise ShapeError(f"{op}: x must have rank 4 and block_size be >= 2, got shape {x.shape} and {block_size}")
    if data_format == "NHWC":
        n, h, w, c = x.shape
    else:
        n, c, h, w = x.shape
    if c % (b * b):
        raise ShapeError(f"{op}: the channels ({c}) must be divisible by block_size^2 = {b * b}")
    with ENGINE.scope(op) as scope:
        if data_format == "NHWC":
            y = transpose(reshape(x, (n, h, w, b, b, c // (b * b))), (0, 1, 3, 2, 4, 5))
            return scope.export(reshape(y, (n, h * b, w * b, c // (b * b))))
        y = transpose(reshape(x, (n, b, b, c // (b * b), h, w)), (0, 3, 4, 1, 5, 2))
        return scope.export(reshape(y, (n, c // (b * b), h * b, w * b)))


def _scatter_rows(op, indices, shape):
    """indices (int32, [..., k]) as rows of `shape`'s first k axes flattened (-1 for an index out of range, which a
    segment sum drops), shape [m]; checks the shapes."""
    if indices.dtype != I32:
        raise DTypeError(f"{op}: indices have dtype {indices.dtype}, expected int32")
    if indices.rank == 0 or indices.shape[-1] > len(shape):
        raise ShapeError(f"{op}: indices {indices.shape} must have rank >= 1 and at most {len(shape)} entries a row")
    dims = shape[: indices.shape[-1]]
    strides = [math.prod(dims[d + 1 :]) for d in range(len(dims))]
    rows = reduce_sum(indices * host_tensor(strides, I32), -1)
    valid = reduce_all(logical_and(indices >= 0, indices < host_tensor(list(dims), I32)), -1)
    return reshape(where(valid, rows, -1), (-1,)), math.prod(dims)


def scatter_nd(indices, updates, shape) -> Tensor:
    """A tensor of `shape`, zero but for `updates` added at `indices`, as TF.js's scatterND: indices (int32) has
    shape batch + (k,), updates batch + shape[k:]; repeated indices add up; an index out of range is dropped (as
    TensorFlow on GPUs)."""
    op = "scatter_nd"
    shape = _ints(op, shape, "shape")
    with ENGINE.scope(op) as scope:
        indices, updates = as_temporary(indices, op, []), as_temporary(updates, op, [])
        dtype_in(op, updates, (F32, I32), "updates")
        rows, n = _scatter_rows(op, indices, shape)
        if updates.shape != indices.shape[:-1] + shape[indices.shape[-1] :]:
            raise ShapeError(
                f"{op}: updates have shape {updates.shape}, expected indices' batch {indices.shape[:-1]} + "
                f"shape[{indices.shape[-1]}:] {shape[indices.shape[-1] :]}"
            )
        flat = reshape(updates, (rows.shape[0], *shape[indices.shape[-1] :]))
        return scope.export(reshape(unsorted_segment_sum(flat, rows, n), shape))


def tensor_scatter_update(tensor, indices, updates) -> Tensor:
    """`tensor` with the slices at `indices` replaced by `updates`, as TF.js's tensorScatterUpdate (shapes as in
    scatter_nd, with tensor's shape). An index given twice gets the sum of its updates (TensorFlow leaves the order
    open; TF.js's CPU keeps the last)."""
    op = "tensor_scatter_update"
    tensor = _tensor(op, tensor)
    with ENGINE.scope(op) as scope:
        updates = as_temporary(updates, op, [], tensor.dtype)
        indices = as_temporary(indices, op, [])
        hits = scatter_nd(indices, ones(updates.shape, I32), tensor.shape)
        return scope.export(where(greater(hits, 0), scatter_nd(indices, updates, tensor.shape), tensor))


def sparse_to_dense(sparse_indices, sparse_values, output_shape, default_value=0) -> Tensor:
    """A tensor of output_shape filled with default_value but for sparse_values at sparse_indices, as TF.js's
    sparseToDense: indices int32 [n, k] (or [n] for k = 1, or a scalar), values [n] or one value for all; each index
    at most once."""
    op = "sparse_to_dense"
    shape = _ints(op, output_shape, "output_shape")
    with ENGINE.scope(op) as scope:
        indices, values = as_temporary(sparse_indices, op, []), as_temporary(sparse_values, op, [])
        dtype_in(op, values, (F32, I32), "sparse_values")
        if indices.rank < 2:
            indices = reshape(indices, (-1, 1) if indices.rank == 1 else (1, indices.size))
        if values.rank == 0:
            values = broadcast_to(values, indices.shape[:1])
        if values.shape != indices.shape[:1] or indices.shape[1] != len(shape):
            raise ShapeError(
                f"{op}: sparse_indices {indices.shape} must be [n, {len(shape)}] and sparse_values [n] or a scalar, "
                f"got {values.shape}"
            )
        hits = scatter_nd(indices, ones(values.shape, I32), shape)
        return scope.export(where(greater(hits, 0), scatter_nd(indices, values, shape), default_value))


def _bincount(op, x, weights, size, binary_output, ranks):
    """Counts (or weight sums) of each value 0..size-1 of x, per row of a 2-D x; values >= size are left out."""
    size = operator.index(size)
    if size < 0:
        raise ValueError(f"{op}: size must be >= 0, got {size}")
    with ENGINE.scope(op) as scope:
        x = as_temporary(x, op, [])
        dtype_in(op, x, (I32,))
        if x.rank not in ranks:
            raise ShapeError(f"{op}: x must have rank {' or '.join(map(str, ranks))}, got shape {x.shape}")
        dtype = I32
        if weights is not None:
            weights = as_temporary(weights, op, [])
            dtype_in(op, weights, (F32, I32), "weights")
            dtype = weights.dtype
            if weights.size and weights.shape != x.shape:
                raise ShapeError(f"{op}: weights {weights.shape} must have x's shape {x.shape}, or no elements")
        if weights is None or not weights.size or binary_output:
            weights = ones(x.shape, dtype)
        rows = x.shape[0] if x.rank == 2 else 1
        ids = x
        if x.rank == 2:
            ids = x + reshape(host_tensor([r * size for r in range(rows)], I32), (rows, 1))
        ids = reshape(where(logical_and(x >= 0, x < size), ids, -1), (-1,))
        counts = unsorted_segment_sum(reshape(weights, (-1,)), ids, rows * size)
        if binary_output:
            counts = ENGINE.run_kernel("Cast", (greater(counts, 0),), {"dtype": dtype})
        return scope.export(reshape(counts, (rows, size) if x.rank == 2 else (size,)))


def bincount(x, weights, size) -> Tensor:
    """How often each value 0..size-1 occurs in x (int32, 1-D), or the sum of the weights (x's shape) at those
    positions, as TF.js's bincount; weights None or empty counts (int32 for None, else in weights' dtype). Values
    >= size are left out; so are negative ones (TF.js raises)."""
    return _bincount("bincount", x, weights, size, False, (1,))


def dense_bincount(x, weights, size, binary_output=False) -> Tensor:
    """bincount for a 1-D x, or for each row of a 2-D x (result [rows, size]), as TF.js's denseBincount;
    binary_output gives 1 where a value occurs, whatever the weights."""
    return _bincount("dense_bincount", x, weights, size, bool(binary_output), (1, 2))


def _sparse_segment(op, data, indices, segment_ids, mean):
    """Rows data[indices[k]] summed (or averaged) into segment segment_ids[k]; segment_ids sorted, so there are
    segment_ids[-1] + 1 segments: that one number is read back (a readback on a GPU), as TF.js reads them all."""
    with ENGINE.scope(op) as scope:
        data, indices, ids = (as_temporary(t, op, []) for t in (data, indices, segment_ids))
        dtype_in(op, data, (F32, I32), "data")
        dtype_in(op, indices, (I32,), "indices")
        dtype_in(op, ids, (I32,), "segment_ids")
        if data.rank == 0 or indices.rank != 1 or ids.shape != indices.shape:
            raise ShapeError(
                f"{op}: data must have rank >= 1 and indices and segment_ids be 1-D of one length, got {data.shape}, "
                f"{indices.shape} and {ids.shape}"
            )
        n = ids[-1].item() + 1 if ids.size else 0
        total = unsorted_segment_sum(gather(data, indices), ids, n)
        if mean:
            counts = unsorted_segment_sum(ones(ids.shape, F32), ids, n)
            total = total / reshape(where(counts > 0, counts, 1.0), (n,) + (1,) * (data.rank - 1))
        return scope.export(total)


def sparse_segment_sum(data, indices, segment_ids) -> Tensor:
    """out[s] = the sum of data[indices[k]] over the k with segment_ids[k] == s (segment_ids sorted, int32), as TF.js's
    sparse.sparseSegmentSum; segments no id names are 0."""
    return _sparse_segment("sparse_segment_sum", data, indices, segment_ids, False)


def sparse_segment_mean(data, indices, segment_ids) -> Tensor:
    """sparse_segment_sum divided by each segment's count (float32 data), as TF.js's sparse.sparseSegmentMean;
    segments no id names are 0."""
    return _sparse_segment("sparse_segment_mean", data, indices, segment_ids, True)
