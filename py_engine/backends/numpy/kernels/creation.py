"""Creation kernels on numpy: fill and one_hot."""

import numpy as np

from ....dtypes import NUMPY
from ....kernel_registry import register_kernel


def fill(shape, value, dtype):
    return np.full(shape, value, NUMPY[dtype])


register_kernel("Fill", "numpy", fill)


def _one_hot(indices, depth, on_value, off_value, dtype):
    out = np.full(indices.shape + (depth,), off_value, NUMPY[dtype])
    valid = (indices >= 0) & (indices < depth)
    out[valid, indices[valid]] = on_value
    return out


register_kernel("OneHot", "numpy", _one_hot)
