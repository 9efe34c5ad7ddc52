"""The wasm backend: the numpy backend's tensors with the kernels where the time goes run by our own SIMD WebAssembly
module (backend.py); its kernels, C and Python, one family per module (kernels/); the module on Pyodide's memory
(native.py), its pool of workers (threads.py), and pe.capture's recordings of its kernels' calls (capture.py)."""

from . import kernels  # noqa: F401 - registers the kernels
from .backend import WasmBackend

__all__ = ["WasmBackend"]
