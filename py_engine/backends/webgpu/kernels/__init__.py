"""WGSL kernels, one module per family; importing them registers them for the webgpu backend."""

from . import conv, elementwise, fused, linalg, pool_image, recurrent, reduce, sequence, shape  # noqa: F401
