"""The webgpu backend: WGSL kernels run through a narrow device interface, wgpu-py or the browser (backend.py, which
also starts it on this platform's device); its kernels, one module per family (kernels/)."""

from . import kernels  # noqa: F401 - registers the WGSL kernels
from .backend import GpuArray, WebGPUBackend, create_backend

__all__ = ["GpuArray", "WebGPUBackend", "create_backend"]
