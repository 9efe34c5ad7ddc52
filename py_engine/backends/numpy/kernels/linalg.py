"""Matrix multiplication on numpy."""

import numpy as np

from ....kernel_registry import register_kernel

# numpy built without BLAS (Pyodide's) multiplies with a loop that walks down b's columns: once K is large every step
# misses the cache. einsum adds rows of b into each output row instead, the same float32 sums in the same order, and
# is faster in Pyodide on a row-major b that is wide (N >= 96: 0.75-0.95x matmul's time) or long and not narrow
# (K >= 96, N >= 64: 0.3-0.8x), slower on narrower ones (up to 1.5x at N = 16; docs/platform_facts.md).
HAS_BLAS = bool(np.__config__.CONFIG["Build Dependencies"]["blas"].get("found"))


def _rows_pay(k, n):
    """Whether einsum's loop beats matmul's on a k x n right-hand side (without BLAS)."""
    return n >= 96 or (n >= 64 and k >= 96)


def matmul(a, b, blas=HAS_BLAS):
    """a @ b for arrays of 2 or more dimensions (batch dimensions broadcast)."""
    if blas or not _rows_pay(*b.shape[-2:]) or b.strides[-1] != b.itemsize:
        return np.matmul(a, b)
    return np.einsum("...ik,...kj->...ij", a, b)


def batch_matmul(a, b, transpose_a, transpose_b):
    return matmul(np.swapaxes(a, -1, -2) if transpose_a else a, np.swapaxes(b, -1, -2) if transpose_b else b)


register_kernel("BatchMatMul", "numpy", batch_matmul)
