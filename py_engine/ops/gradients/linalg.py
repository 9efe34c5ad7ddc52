"""Gradients of the ops in py_engine/ops/linalg.py."""

from ...kernel_registry import register_gradient
from ..linalg import matmul
from .math import unbroadcast


def _matmul_grad(dy, ins, outs, attrs):
    a, b = ins
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if not ta and not tb:
        da, db = (lambda: matmul(dy, b, False, True)), (lambda: matmul(a, dy, True, False))
    elif ta and not tb:
        da, db = (lambda: matmul(b, dy, False, True)), (lambda: matmul(a, dy, False, False))
    elif not ta and tb:
        da, db = (lambda: matmul(dy, b, False, False)), (lambda: matmul(dy, a, True, False))
    else:
        da, db = (lambda: matmul(b, dy, True, True)), (lambda: matmul(dy, a, True, True))
    # each product only when its operand needs a gradient: x @ w with data x skips dy @ w.T
    return (lambda: unbroadcast(da(), a.shape)), (lambda: unbroadcast(db(), b.shape))


register_gradient("BatchMatMul", _matmul_grad)
