"""Basic indexing, x[...]: ints, slices with any step, None (a new axis) and Ellipsis, as in numpy; and the ops
that pick elements by their values, whose output's length depends on them: argwhere, unique, setdiff1d.

A result that holds x's values in x's order (full slices, None, ints on size-1 axes) is a view of x. Anything
else is one StridedSlice kernel over every axis of x, then a view that drops the int axes and adds the None axes.
"""

__all__ = ["argwhere", "setdiff1d", "unique"]

import operator

import numpy as np

from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .check import axis_index
from .convert import as_temporary, release

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


def getitem(x, key):
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


def argwhere(condition):
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


def unique(x, axis=0):
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


def setdiff1d(x, y):
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
