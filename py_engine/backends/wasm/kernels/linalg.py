"""Matrix products on the SIMD module: the GEMM every product, convolution and their gradients run on."""

import math
import weakref

import numpy as np

from ....kernel_registry import register_kernel
from ...numpy.kernels.linalg import batch_matmul as numpy_batch_matmul
from .. import native, threads
from ..native import F32, address

# below this many multiply-adds (about) numpy's product is quicker than packing B and calling the module
SMALL_PRODUCT = 16384


def pack(b, k, n, transposed=False):
    """B (k x n; stored n x k when `transposed`) packed into the GEMM's 8-column panels."""
    packed = native.aligned(-(-n // 8) * 8 * k)
    native.exports.pack_b(address(b, k * n), k, n, *_strides(k, n, transposed), address(packed, packed.size))
    return packed


def _strides(k, n, transposed):
    """B's strides (along k, along n) in elements."""
    return (1, k) if transposed else (n, 1)


_packs = {}  # id(array) -> (weak reference to it, (k, n, transposed), its packed panels)


def pack_kept(b, k, n, transposed=False):
    """pack(b), kept while b lives where b is a tensor's buffer (read-only: its values never change), so a model's
    weights are packed at their first product rather than at every run; an array of the caller's is packed each
    time."""
    if b.flags.writeable:
        return pack(b, k, n, transposed)
    key, layout = id(b), (k, n, transposed)
    entry = _packs.get(key)
    if entry is not None and entry[0]() is b and entry[1] == layout:
        packed = entry[2]
    else:
        log, native.log = native.log, None  # a capture records the packing apart: it belongs to b, not to the kernel
        try:
            packed = pack(b, k, n, transposed)
        finally:
            native.log = log
        _packs[key] = (weakref.ref(b, lambda _, key=key: _packs.pop(key, None)), layout, packed)
    if native.log is not None:
        native.log.packed(b, packed, (k, n, *_strides(k, n, transposed)))
    return packed


def changed(b):
    """b's values were written in place (a captured training step's variable): its kept panels go."""
    _packs.pop(id(b), None)


def packed_bytes():
    """The bytes of the panels pack_kept keeps for live tensors (backend_info()'s packed_weight_bytes)."""
    return sum(entry[2].nbytes for entry in _packs.values())


def gemm(a, packed, m, n, k, c, *, transposed_a=False, bias=None, activation=0, accumulate=False):
    """c[m, n] = activation(A @ B + bias) (or c += A @ B): A is `a` (m x k; stored k x m when `transposed_a`), B
    `packed` by pack(); c a C-contiguous float32 array of m * n elements, written in place."""
    sai, sak = (1, m) if transposed_a else (k, 1)
    target = address(c, m * n)
    # a last panel of 1-4 columns (a pose model's heads) in a tile of 4 (linalg.c's gemm_narrow_edge)
    product = native.exports.gemm_narrow_edge if 1 <= n % 8 <= 4 else native.exports.gemm
    product(
        address(a, m * k),
        sai,
        sak,
        address(packed, -(-n // 8) * 8 * k),
        target,
        n,
        m,
        n,
        k,
        address(bias, n) if bias is not None else 0,
        target if accumulate else 0,
        activation,
    )
    return c


def _batch_matmul(a, b, transpose_a, transpose_b):
    """a @ b with batch dimensions broadcast; native for float32 when each side's batch is the whole batch or one."""
    n = b.shape[-2] if transpose_b else b.shape[-1]
    if a.dtype != F32 or b.dtype != F32 or a.size * n < SMALL_PRODUCT or 0 in b.shape:
        return numpy_batch_matmul(a, b, transpose_a, transpose_b)
    a, b = native.f32(a), native.f32(b)
    (ar, ac), (br, bc) = a.shape[-2:], b.shape[-2:]
    m, k = (ac, ar) if transpose_a else (ar, ac)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count, a_count, b_count = math.prod(batch), math.prod(a.shape[:-2]), math.prod(b.shape[:-2])
    out = native.out((*batch, m, n))
    if b_count == 1 and not transpose_a:  # a's batch folds into its rows: one GEMM, B packed once
        pool = threads.worth(a_count * m * n * k, a, out=(out,), kept=(b,))
        if pool and threads.gemm(pool, a, b, a_count * m, n, k, transpose_b, out) is not None:
            return out
        return gemm(a, pack_kept(b, k, n, transpose_b), a_count * m, n, k, out)
    if count == 1:  # a transposed A (a product's gradient, x^T @ dy): its columns are the rows
        pool = threads.worth(m * n * k, a, out=(out,), kept=(b,))
        if pool and threads.gemm(pool, a, b, m, n, k, transpose_b, out, transposed_a=True) is not None:
            return out
    if a_count not in (1, count) or b_count not in (1, count):
        return numpy_batch_matmul(a, b, transpose_a, transpose_b)
    a3, b3, o3 = a.reshape(a_count, ar, ac), b.reshape(b_count, br, bc), out.reshape(count, m, n)
    packed = pack_kept(b, k, n, transpose_b) if b_count == 1 else None
    for i in range(count):
        bp = packed if packed is not None else pack(b3[i], k, n, transpose_b)
        gemm(a3[i if a_count > 1 else 0], bp, m, n, k, o3[i], transposed_a=transpose_a)
    return out


register_kernel("BatchMatMul", "wasm", _batch_matmul)
