"""Gradients of the ops in py_engine/ops/linalg.py."""

from ...kernels import register_gradient
from ..linalg import matmul
from .math import unbroadcast


def _matmul_grad(dy, ins, outs, attrs):
    a, b = ins
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if not ta and not tb:
        da, db = matmul(dy, b, False, True), matmul(a, dy, True, False)
    elif ta and not tb:
        da, db = matmul(b, dy, False, True), matmul(a, dy, False, False)
    elif not ta and tb:
        da, db = matmul(dy, b, False, False), matmul(dy, a, True, False)
    else:
        da, db = matmul(b, dy, True, True), matmul(dy, a, True, True)
    return unbroadcast(da, a.shape), unbroadcast(db, b.shape)


register_gradient("BatchMatMul", _matmul_grad)
