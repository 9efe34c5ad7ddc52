"""The numpy backend: the reference every other backend is checked against, and the CPU fallback (backend.py); its
kernels, one module per family (kernels/)."""

from . import kernels  # noqa: F401 - registers the kernels
from .backend import NumpyBackend

__all__ = ["NumpyBackend"]
