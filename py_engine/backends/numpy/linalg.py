"""Matrix multiplication on numpy."""

import numpy as np

from ...kernels import register_kernel


def _batch_matmul(a, b, transpose_a, transpose_b):
    return np.matmul(np.swapaxes(a, -1, -2) if transpose_a else a, np.swapaxes(b, -1, -2) if transpose_b else b)


register_kernel("BatchMatMul", "numpy", _batch_matmul)
