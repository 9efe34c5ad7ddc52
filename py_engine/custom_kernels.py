"""pe.run_kernel: run a kernel by its registered name, a user's (docs/custom_kernels.md) or a built-in one.

A user's webgpu kernel, pe.Program, is the webgpu backend's (backends/webgpu/user_program.py): the backend's own
sequence kernels are written with it, and the backend imports nothing from the layers above it.
"""

from .engine import ENGINE
from .tensor import Tensor


def run_kernel(name, inputs, attrs=None):
    """Run kernel `name` on the active backend with `inputs` (tensors) and `attrs` (keyword arguments of the
    kernel); returns a tensor, or a tuple for a kernel with several outputs. Recorded for gradients."""
    inputs = tuple(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"run_kernel({name!r}): input {i} must be a Tensor, got {type(t).__name__}")
    if attrs is not None and not isinstance(attrs, dict):
        raise TypeError(f"run_kernel({name!r}): attrs must be a dict of keyword arguments, got {type(attrs).__name__}")
    return ENGINE.run_kernel(name, inputs, dict(attrs or {}))


__all__ = ["run_kernel"]
