"""Indexing kernels on numpy: the strided slice that x[...] runs, and its gradient; Where, the coordinates of the
true elements (the GPU backend runs it on the host: backends/webgpu/host_kernel.py)."""

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


register_kernel("StridedSlice", "numpy", lambda x, begin, end, strides: x[_strided(begin, end, strides)])
register_kernel("StridedSliceGrad", "numpy", _strided_slice_grad)
register_kernel("Where", "numpy", lambda condition: np.argwhere(condition).astype(np.int32))
