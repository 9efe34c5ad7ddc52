"""WGSL kernels, one module per family; importing them registers them for the webgpu backend."""

from . import elementwise  # noqa: F401
