"""Gradients of the ops in py_engine/ops/image.py."""

from ...engine import ENGINE
from ...kernel_registry import register_gradient


def _resize_gradient(kernel):
    def gradient(dy, ins, outs, attrs):
        return ENGINE.run_kernel(f"{kernel}Grad", (dy,), {**attrs, "input_shape": ins[0].shape})

    register_gradient(kernel, gradient)


_resize_gradient("ResizeBilinear")
_resize_gradient("ResizeNearestNeighbor")
