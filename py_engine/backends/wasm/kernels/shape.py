"""Data movement on the SIMD module (kernels/shape.c): Concat of float32 or int32 arrays, each input's rows copied
into their columns of the output (a copy of the bits), and Cast of int32 and bool arrays to float32 (rounded as
numpy's astype): numpy's results exactly.

Below math.SMALL elements numpy's kernels run, except while a capture records (as the elementwise ops): a replay's
native step is a call per input. The other shape ops (slices, pads, transposes, gathers) and casts run the numpy
backend's kernels.
"""

import math

import numpy as np

from ....kernel_registry import register_kernel
from ...numpy.kernels.math import cast as numpy_cast
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


def _cast(x, dtype):
    from_bytes = x.dtype in (np.bool_, np.uint8)
    if dtype != "float32" or not (from_bytes or x.dtype == I32) or not x.flags.c_contiguous or runs_numpy(x.size):
        return numpy_cast(x, dtype)
    out = native.out(x.shape)
    native.exports.to_f32(address(x, x.size, x.dtype), int(from_bytes), address(out, x.size), x.size)
    return out


register_kernel("Concat", "wasm", _concat)
register_kernel("Cast", "wasm", _cast)
