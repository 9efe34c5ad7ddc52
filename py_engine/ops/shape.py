"""Shape ops and their gradients. reshape, expand_dims, squeeze and flatten are views: they share the data
buffer. The other ops return a view too when the result holds x's values in x's order (a transpose that
moves only size-1 axes, a full slice, zero padding, ...)."""

__all__ = [
    "broadcast_to",
    "concat",
    "expand_dims",
    "flatten",
    "gather",
    "gather_nd",
    "pad",
    "reshape",
    "reverse",
    "slice",
    "split",
    "squeeze",
    "stack",
    "tile",
    "transpose",
    "unsorted_segment_sum",
    "unstack",
]

import functools
import numbers
import operator

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .check import axes as normalize_axes
from .check import axis_index, broadcast_shapes, dtype_in
from .convert import as_temporary, release

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


def reshape(x, shape):
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


def expand_dims(x, axis=0):
    x = _tensor("expand_dims", x)
    axis = axis_index("expand_dims", axis, x.rank + 1)
    return ENGINE.view(x, x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, axis=None):
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


def flatten(x):
    x = _tensor("flatten", x)
    return ENGINE.view(x, (x.size,))


def broadcast_to(x, shape):
    """x repeated along new leading axes and size-1 axes to fill `shape` (NumPy rules)."""
    x = _tensor("broadcast_to", x)
    shape = tuple(int(d) for d in shape)
    if len(shape) < x.rank or broadcast_shapes("broadcast_to", x.shape, shape) != shape:
        raise ShapeError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    if shape == x.shape:
        return ENGINE.view(x, shape)
    return ENGINE.run_kernel("BroadcastTo", (x,), {"shape": shape})


def transpose(x, perm=None):
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


def concat(tensors, axis=0):
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


def stack(tensors, axis=0):
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


def unstack(x, axis=0):
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


def split(x, num_or_size_splits, axis=0):
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


def slice(x, begin, size=None):
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


def gather(x, indices, axis=0, batch_dims=0):
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


def gather_nd(x, indices):
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


def unsorted_segment_sum(x, segment_ids, num_segments):
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


def tile(x, reps):
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


def pad(x, paddings, constant_value=0):
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


def reverse(x, axis=None):
    """x with the order of elements reversed along `axis` (an int or a list; default all axes)."""
    x = _tensor("reverse", x)
    axis = tuple(a for a in normalize_axes("reverse", axis, x.rank) if x.shape[a] > 1)
    if not axis:
        return ENGINE.view(x, x.shape)
    return ENGINE.run_kernel("Reverse", (x,), {"axis": axis})
