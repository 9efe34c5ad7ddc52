"""Creation on the SIMD module: Fill of float32 or int32 arrays while a capture records (a replay's native step writes
the value's bits with kernels/shape.c's repeat_values; op by op np.full costs less than the call)."""

import math

import numpy as np

from ....kernel_registry import register_kernel
from ...numpy.kernels.creation import fill
from .. import native
from ..native import I32, address


def _fill(shape, value, dtype):
    """np.full's array, the value's bits written by the module while a capture records (a gradient's seed)."""
    size = math.prod(shape)
    if native.log is None or dtype not in ("float32", "int32") or not size:
        return fill(shape, value, dtype)
    value = native.ints([np.array(value, dtype).view(I32)])
    out = native.out(shape, np.dtype(dtype))
    native.exports.repeat_values(address(value, 1, I32), 1, size, 1, address(out, size, out.dtype))
    return out


register_kernel("Fill", "wasm", _fill)
