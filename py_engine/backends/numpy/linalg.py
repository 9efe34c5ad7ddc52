"""Matrix multiplication on numpy."""

import numpy as np

from ...kernels import register_kernel

# numpy built without BLAS (Pyodide's) multiplies with a loop that walks down b's columns: once K is large every step
# misses the cache. einsum adds rows of b into each output row instead, the same float32 sums in the same order, 2-3x
# faster in Pyodide from K >= 96 and N >= 64 on a row-major b (and slower below: docs/platform_facts.md).
HAS_BLAS = bool(np.__config__.CONFIG["Build Dependencies"]["blas"].get("found"))
ROWS_FROM_K, ROWS_FROM_N = 96, 64


def matmul(a, b, blas=HAS_BLAS):
    """a @ b for arrays of 2 or more dimensions (batch dimensions broadcast)."""
    if blas or a.shape[-1] < ROWS_FROM_K or b.shape[-1] < ROWS_FROM_N or b.strides[-1] != b.itemsize:
        return np.matmul(a, b)
    return np.einsum("...ik,...kj->...ij", a, b)


def _batch_matmul(a, b, transpose_a, transpose_b):
    return matmul(np.swapaxes(a, -1, -2) if transpose_a else a, np.swapaxes(b, -1, -2) if transpose_b else b)


register_kernel("BatchMatMul", "numpy", _batch_matmul)
