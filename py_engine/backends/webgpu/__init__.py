"""The webgpu backend: WGSL kernels run through a narrow device interface (wgpu-py or the browser)."""

import sys

from . import kernels  # noqa: F401 - registers the WGSL kernels
from .backend import GpuArray, WebGPUBackend


async def create_backend():
    """Start the backend on this platform's device: the JS bridge in Pyodide, wgpu-py in CPython."""
    if sys.platform == "emscripten":
        from .bridge_device import BridgeDevice

        return WebGPUBackend(await BridgeDevice.create())
    from .wgpu_device import WgpuDevice

    return WebGPUBackend(await WgpuDevice.create())


__all__ = ["GpuArray", "WebGPUBackend", "create_backend"]
