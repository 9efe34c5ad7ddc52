"""pe.register_kernel and pe.run_kernel: a user's kernels (docs/custom_kernels.md), run like the built-in ones.

A user's webgpu kernel, pe.Program, is the webgpu backend's (backends/webgpu/user_program.py): the backend's own
sequence kernels are written with it, and the backend imports nothing from the layers above it.
"""

from . import kernel_registry
from .engine import ENGINE
from .errors import BackendError
from .tensor import Tensor


def register_kernel(name, backend, fn, *, override=False):
    """Register `fn` as kernel `name` on `backend`: a function of numpy arrays for "numpy", a pe.Program for
    "webgpu". Pass override=True to replace an existing one.

    The backend must be registered: a misspelled name fails here, not later as a KernelNotFoundError. A kernel for
    a backend of your own is registered after the backend itself (pe.register_backend(name, factory)).
    """
    known = ENGINE.backend_names()
    if backend not in known:
        import difflib  # here, not at `import py_engine`: 10-15 ms of the page's boot

        close = difflib.get_close_matches(str(backend), known, n=1)
        raise BackendError(
            f"register_kernel({name!r}, {backend!r}): unknown backend {backend!r}"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + f"; the backends are: {', '.join(known)}. For a backend of your own, register it first: "
            f"pe.register_backend({backend!r}, factory)"
        )
    return kernel_registry.register_kernel(name, backend, fn, override=override, by_user=True)


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


__all__ = ["register_kernel", "run_kernel"]
