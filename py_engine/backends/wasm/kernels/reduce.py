"""Sums and means over an array's leading axes on the SIMD module: a bias's gradient (dy summed over batch and
pixels) and a global average pool (its sums divided in the module too: a capture replays it as a native step);
the index of the largest value along an axis (a pose decoder's heatmap peaks); and the top k of each row of a
float32 array (a detector's best scores). Other reductions, and small arrays, run the numpy backend's kernels."""

import math

from ....kernel_registry import register_kernel
from ...numpy.kernels.reduce import arg_max, reduce_mean, reduce_sum, softmax, top_k
from .. import native, threads
from ..native import F32, I32, address
from ..op_codes import BINARY
from .math import SMALL, runs_numpy

REAL_DIV = BINARY["RealDiv"]


def _leading(x, axis):
    """(rows, columns) when `axis` (sorted) reduces x's leading axes (axes of length 1 before them count as leading)
    and not its last, so x is a [rows, columns] matrix summed down its columns; None otherwise. (Along its last axis
    numpy sums pairwise, in another order.)"""
    if x.dtype != F32 or runs_numpy(x.size) or not axis:
        return None
    first, last = axis[0], axis[-1]
    if last == x.ndim - 1 or list(axis) != list(range(first, last + 1)) or any(d != 1 for d in x.shape[:first]):
        return None
    rows = math.prod(x.shape[: last + 1])
    return rows, x.size // rows


def _sum_rows(x, axis, keepdims, divide=False):
    """The sum (or mean) down x's leading axes, or along its last axis alone, on the module; None where neither
    applies."""
    leading = _leading(x, axis)
    if leading is None:
        if x.dtype != F32 or runs_numpy(x.size) or list(axis) != [x.ndim - 1]:
            return None
        # along the last axis in numpy's pairwise order (its values): a loss's sums over classes, a mean over a batch
        x, columns = native.f32(x), x.size // x.shape[-1]
        out = native.out(columns)
        native.exports.sum_last(address(x, x.size), columns, x.shape[-1], address(out, columns))
        rows = x.shape[-1]
    else:
        rows, columns = leading
        x, out = native.f32(x), native.out(columns)
        # in the pool where x is (a training step's bias gradient); not a mean, whose sums are divided here after
        pool = None if divide else threads.in_place(x.size, x)
        if pool is None or threads.sum_rows(pool, x, rows, columns, out) is None:
            native.exports.sum_rows(address(x, x.size), rows, columns, address(out, columns))
    if divide:  # in place, numpy's float32 division
        divisor = native.floats([rows])
        native.exports.binary(
            REAL_DIV, address(out, columns), columns, address(divisor, 1), 1, address(out, columns), columns
        )
    return out.reshape([1 if i in axis else d for i, d in enumerate(x.shape) if keepdims or i not in axis])


def _sum_kernel(x, axis, keepdims):
    out = _sum_rows(x, axis, keepdims)
    return reduce_sum(x, axis, keepdims) if out is None else out


def _mean_kernel(x, axis, keepdims):
    out = _sum_rows(x, axis, keepdims, divide=True)
    return reduce_mean(x, axis, keepdims) if out is None else out


def _arg_max(x, axis):
    """numpy.argmax's indices (int32: Pyodide's intp) along one axis of a float32 array, in one pass over it."""
    if x.dtype != F32 or axis is None or runs_numpy(x.size):
        return arg_max(x, axis)
    x = native.f32(x)
    outer, n = math.prod(x.shape[:axis]), x.shape[axis]
    inner = x.size // (outer * n)
    out = native.out(x.shape[:axis] + x.shape[axis + 1 :], I32)
    native.exports.arg_max(address(x, x.size), outer, n, inner, address(out, out.size, I32))
    return out


def _softmax(x, axis):
    """Softmax along the last axis on the module at every size (its own e^x, within an ulp or two of numpy's, as
    the sigmoid's), so a captured step's values are those of the same step run op by op."""
    if x.dtype != F32 or not x.size or axis != x.ndim - 1:
        return softmax(x, axis)
    x = native.f32(x)
    n = x.shape[-1]
    out = native.out(x.shape)
    native.exports.softmax_rows(address(x, x.size), x.size // n, n, address(out, out.size))
    return out


def _top_k(x, k):
    """values, indices of each row's k largest (numpy's kernel's order: NaN last, ties by index) in one pass over the
    row, where numpy's negates, partitions and sorts copies of it."""
    n = x.shape[-1] if x.ndim else 0
    if x.dtype != F32 or x.size < SMALL or not 0 < k <= n:
        return top_k(x, k)
    x = native.f32(x)
    values, indices = native.out((*x.shape[:-1], k)), native.out((*x.shape[:-1], k), I32)
    native.exports.top_k_rows(
        address(x, x.size), x.size // n, n, k, address(values, values.size), address(indices, indices.size, I32)
    )
    return values, indices


register_kernel("Sum", "wasm", _sum_kernel)
register_kernel("Mean", "wasm", _mean_kernel)
register_kernel("Softmax", "wasm", _softmax)
register_kernel("TopK", "wasm", _top_k)
register_kernel("ArgMax", "wasm", _arg_max)
