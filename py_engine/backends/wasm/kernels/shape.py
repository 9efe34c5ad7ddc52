"""Data movement on the SIMD module (kernels/shape.c): Concat of float32 or int32 arrays, each input's rows copied
into their columns of the output, numpy's result exactly (a copy of the bits); GatherNd of float32 or int32 arrays,
a slice copied per index tuple, at every size (numpy's range check and fancy indexing cost more than the call);
Slice and BroadcastTo of float32 or int32 arrays while a capture records (a replay's native step copies the slice's
rows or the broadcast's values; op by op numpy's view costs less than the call).

Below math.SMALL elements numpy's concatenate runs, except while a capture records (as the elementwise ops): a
replay's native step is a call per input. The other shape ops (strided slices, pads, transposes, Gather) run the
numpy backend's kernels.
"""

import math

import numpy as np

from ....kernel_registry import register_kernel
from ...numpy.kernels.shape import broadcast_to, gather_nd, slice_view
from .. import native
from ..native import F32, I32, address
from .math import runs_numpy


def _concat(*xs, axis):
    dtype, shape = xs[0].dtype, xs[0].shape
    if dtype not in (F32, I32) or not shape or any(x.dtype != dtype or not x.flags.c_contiguous for x in xs):
        return np.concatenate(xs, axis)
    axis %= len(shape)
    if any(x.shape[:axis] != shape[:axis] or x.shape[axis + 1 :] != shape[axis + 1 :] for x in xs):
        return np.concatenate(xs, axis)  # numpy's error
    out_shape = [*shape[:axis], sum(x.shape[axis] for x in xs), *shape[axis + 1 :]]
    size = math.prod(out_shape)
    if runs_numpy(size):
        return np.concatenate(xs, axis)
    out = native.out(out_shape, dtype)
    rows = math.prod(out_shape[:axis])
    stride = size // rows
    flat, column = out.reshape(-1), 0
    for x in xs:
        width = x.size // rows
        if width:  # each input's block starts `column` elements into the output's rows
            target = flat[column:]
            native.exports.copy_rows(
                address(x, x.size, dtype), width, address(target, (rows - 1) * stride + width, dtype), stride, rows, width
            )  # fmt: skip
        column += width
    return out


def _gather_nd(x, indices):
    """out[b...] = x[indices[b..., 0], ..., indices[b..., k - 1]]: one pass over the index tuples; a tuple out of
    range runs numpy's kernel, which raises the engine's IndexError (a replay writes zeros there)."""
    k = indices.shape[-1]
    out_shape = indices.shape[:-1] + x.shape[k:]
    if x.dtype not in (F32, I32) or not x.size or not math.prod(out_shape):
        return gather_nd(x, indices)
    x, indices = np.ascontiguousarray(x), np.ascontiguousarray(indices)
    out = native.out(out_shape, x.dtype)
    q = math.prod(x.shape[k:])
    dims = native.ints(x.shape[:k])
    bad = native.exports.gather_nd(
        address(x, x.size, x.dtype), address(indices, indices.size, I32), indices.size // k, k,
        address(dims, k, I32), q, address(out, out.size, x.dtype),
    )  # fmt: skip
    return gather_nd(x, indices) if bad else out


def _slice(x, begin, size):
    if native.log is None or x.dtype not in (F32, I32) or not x.ndim or not math.prod(size):
        return slice_view(x, begin, size)
    x, shape, begin, size = np.ascontiguousarray(x), list(x.shape), list(begin), list(size)
    out = native.out(tuple(size), x.dtype)
    while len(shape) > 1 and begin[-1] == 0 and size[-1] == shape[-1]:  # whole last axes: one longer row
        inner, _, _ = shape.pop(), begin.pop(), size.pop()
        shape[-1], begin[-1], size[-1] = shape[-1] * inner, begin[-1] * inner, size[-1] * inner
    dims = native.ints(shape + begin + size)
    native.exports.slice_rows(
        address(x, x.size, x.dtype), len(shape), address(dims, dims.size, I32), address(out, out.size, x.dtype)
    )
    return out


def _broadcast_to(x, shape):
    """x's values repeated as np.broadcast_to's view reads them, copied by the module while a capture records, where
    x's axes other than 1 are consecutive axes of `shape` (a scalar; a column (n, 1) to (n, m); a row to rows)."""
    size = math.prod(shape)
    if native.log is None or x.dtype not in (F32, I32) or not size:
        return broadcast_to(x, shape)
    padded = (1,) * (len(shape) - x.ndim) + x.shape
    kept = [d for d, n in enumerate(padded) if n != 1] or [len(shape)]
    first, last = kept[0], kept[-1]
    if padded[first : last + 1] != shape[first : last + 1]:
        return broadcast_to(x, shape)
    x = np.ascontiguousarray(x)
    out = native.out(shape, x.dtype)
    outer, inner = math.prod(shape[:first]), math.prod(shape[last + 1 :])
    native.exports.repeat_values(address(x, x.size, x.dtype), x.size, inner, outer, address(out, size, x.dtype))
    return out


register_kernel("Concat", "wasm", _concat)
register_kernel("BroadcastTo", "wasm", _broadcast_to)
register_kernel("Slice", "wasm", _slice)
register_kernel("GatherNd", "wasm", _gather_nd)
