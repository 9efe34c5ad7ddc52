"""Conformance cases: matmul (BatchMatMul) and its gradient.

Every case also runs as "...-tiled", with the webgpu backend picking kernels as on a real GPU (the
workgroup-memory "tiled" variant), so both variants are checked whatever the adapter is.
"""

import numpy as np

from ... import ops
from ...autograd import grads
from .case import FLOAT_EDGES, INT_EDGES, Case, as_gpu, rand, with_edges


def both_variants(cases):
    """Each case, then the same case on the GPU variant (id suffix "-tiled")."""
    out = []
    for c in cases:
        out += [c, Case(f"{c.id}-tiled", as_gpu(c.fn), c.inputs, c.rtol, c.atol)]
    return out


def _matmul(ta=False, tb=False):
    return lambda a, b: ops.matmul(a, b, ta, tb)


def _cases():
    cases = [
        Case("matmul/2d", _matmul(), [rand((13, 17), 1), rand((17, 9), 2)]),
        Case("matmul/batched", _matmul(), [rand((3, 6, 5), 3), rand((3, 5, 4), 4)]),
        Case("matmul/broadcast-batch", _matmul(), [rand((2, 1, 5, 7), 5), rand((3, 7, 4), 6)]),
        Case("matmul/broadcast-rank2-lhs", _matmul(), [rand((5, 7), 7), rand((4, 7, 3), 8)]),
        Case("matmul/many-batches", _matmul(), [rand((70, 3, 4), 9), rand((1, 4, 2), 10)]),
        Case("matmul/int32", _matmul(), [rand((5, 7), 11, -9, 9, np.int32), rand((3, 7, 4), 12, -9, 9, np.int32)]),
        Case(
            "matmul/int32-transposed",
            _matmul(True, True),
            [rand((40, 35), 13, -9, 9, np.int32), rand((66, 40), 14, -9, 9, np.int32)],
        ),
        Case("matmul/size1", _matmul(), [rand((1, 1), 15), rand((1, 1), 16)]),
        Case("matmul/vector-like", _matmul(), [rand((1, 37), 17), rand((37, 1), 18)]),
        Case("matmul/size0-rows", _matmul(), [rand((0, 3), 19), rand((3, 4), 20)]),
        Case("matmul/size0-inner", _matmul(), [rand((4, 0), 21), rand((0, 3), 22)]),  # all zeros
        Case("matmul/size0-batch", _matmul(), [rand((0, 2, 3), 23), rand((3, 4), 24)]),
        Case("matmul/nan-inf", _matmul(), [np.array([[np.nan, 1.0], [np.inf, 0.5]], np.float32), rand((2, 3), 25)]),
        Case("matmul/large", _matmul(), [rand((257, 300), 26), rand((300, 190), 27)], rtol=1e-4, atol=1e-4),
        Case("matmul/special-values-lhs", _matmul(), [FLOAT_EDGES.reshape(3, 5), rand((5, 4), 34)]),
        Case("matmul/special-values-rhs", _matmul(False, True), [rand((6, 3), 35), FLOAT_EDGES.reshape(5, 3)]),
        Case(
            "matmul/special-values-large",
            _matmul(),
            [with_edges(rand((70, 90), 36), FLOAT_EDGES), rand((90, 66), 37)],
            rtol=1e-4,
            atol=1e-4,
        ),
        Case("matmul/int32-edges", _matmul(), [INT_EDGES.reshape(3, 3), rand((3, 2), 38, -3, 3, np.int32)]),
    ]
    a, b = rand((67, 33), 28), rand((33, 129), 29)
    for ta in (False, True):
        for tb in (False, True):
            x, y = a.T.copy() if ta else a, b.T.copy() if tb else b
            label = f"matmul/odd-transpose-{'t' if ta else 'n'}{'t' if tb else 'n'}"
            cases.append(Case(label, _matmul(ta, tb), [x, y], rtol=1e-4, atol=1e-5))
            cases.append(
                Case(
                    f"{label}-broadcast",
                    _matmul(ta, tb),
                    [rand((2, 1) + x.shape, 30), rand((3,) + y.shape, 31)],
                    rtol=1e-4,
                    atol=1e-5,
                )
            )
    for ta, tb in ((False, False), (True, True)):
        fn = grads(lambda a, b, ta=ta, tb=tb: ops.matmul(a, b, ta, tb).sum())
        inputs = [rand((2, 9, 7), 32), rand((7, 11), 33)] if not ta else [rand((2, 7, 9), 32), rand((11, 7), 33)]
        cases.append(Case(f"matmul/grad-{'tt' if ta else 'nn'}", lambda a, b, fn=fn: tuple(fn(a, b)), inputs))
    return both_variants(cases)


CASES = _cases()
