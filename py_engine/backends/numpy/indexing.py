"""Indexing kernels on numpy: the strided slice that x[...] runs, and its gradient; the ops whose output's length
depends on the values (the GPU backend runs them on the host: backends/webgpu/host_kernel.py): Where (the coordinates
of the true elements), Unique and ListDiff (setdiff1d)."""

import math

import numpy as np

from ...kernel_registry import register_kernel


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


register_kernel("StridedSlice", "numpy", lambda x, begin, end, strides: x[_strided(begin, end, strides)])
register_kernel("StridedSliceGrad", "numpy", _strided_slice_grad)
register_kernel("Where", "numpy", lambda condition: np.argwhere(condition).astype(np.int32))
register_kernel("Unique", "numpy", _unique)
register_kernel("ListDiff", "numpy", _list_diff)
