"""Input checks shared by ops; every message names the op, what it got, and what it expected."""

import operator

from ..errors import DTypeError, ShapeError

_BROADCAST_CACHE = {}


def broadcast_shapes(op, a, b):
    """NumPy broadcasting of two shapes, cached (it runs on every binary op)."""
    key = (a, b)
    out = _BROADCAST_CACHE.get(key)
    if out is None:
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        dims = []
        for i, (x, y) in enumerate(zip(pa, pb)):
            if x != y and x != 1 and y != 1:
                raise ShapeError(
                    f"{op}: shapes {a} and {b} cannot be broadcast: dimension {i - n} is {x} vs {y} "
                    "(sizes must match, or one of them must be 1)"
                )
            dims.append(y if x == 1 else x)
        out = tuple(dims)
        if len(_BROADCAST_CACHE) < 4096:
            _BROADCAST_CACHE[key] = out
    return out


def axis_index(op, axis, rank, name="axis"):
    """One axis as a non-negative int; negative axes count from the end."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int, got {type(axis).__name__}") from None
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(
            f"{op}: {name} {axis} is out of range for a tensor of rank {rank} (valid: {-rank}..{rank - 1})"
        )
    return axis % rank if rank else 0


def axes(op, axis, rank):
    """None (all axes), an int, or a sequence of ints, as a sorted tuple of distinct axes."""
    if axis is None:
        return tuple(range(rank))
    items = [axis] if not isinstance(axis, (list, tuple)) else list(axis)
    out = sorted({axis_index(op, a, rank) for a in items})
    if len(out) != len(items):
        raise ShapeError(f"{op}: axis {axis} names the same axis twice")
    return tuple(out)


def dtype_in(op, t, allowed, name="x"):
    if t.dtype not in allowed:
        raise DTypeError(f"{op}: {name} has dtype {t.dtype}, expected {' or '.join(allowed)}")


def rank_is(op, t, ranks, name="x"):
    ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if t.rank not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise ShapeError(f"{op}: {name} must have rank {want}, got shape {t.shape} (rank {t.rank})")


def int_tuple(op, value, n, name):
    """An int or a sequence of n ints, as a tuple of n ints (e.g. strides, kernel sizes)."""
    items = (value,) * n if isinstance(value, int) else tuple(value)
    if len(items) != n or not all(isinstance(v, int) and v >= 1 for v in items):
        raise ValueError(f"{op}: {name} must be a positive int or {n} positive ints, got {value!r}")
    return items
