"""Gradients of the ops in py_engine/ops/indexing.py."""

from ...engine import ENGINE
from ...kernel_registry import register_gradient


def _strided_slice_grad(dy, ins, outs, attrs):
    return ENGINE.run_kernel("StridedSliceGrad", (dy,), {"shape": ins[0].shape, **attrs})


def _strided_slice_grad_grad(dy, ins, outs, attrs):
    return ENGINE.run_kernel("StridedSlice", (dy,), {k: v for k, v in attrs.items() if k != "shape"})


register_gradient("StridedSlice", _strided_slice_grad)
register_gradient("StridedSliceGrad", _strided_slice_grad_grad)
