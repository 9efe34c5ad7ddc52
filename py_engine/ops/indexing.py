"""Basic indexing, x[...]: ints, slices with any step, None (a new axis) and Ellipsis, as in numpy; and argwhere,
the coordinates of the true elements.

A result that holds x's values in x's order (full slices, None, ints on size-1 axes) is a view of x. Anything
else is one StridedSlice kernel over every axis of x, then a view that drops the int axes and adds the None axes.
"""

__all__ = ["argwhere"]

import operator

import numpy as np

from ..engine import ENGINE
from ..tensor import Tensor
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
