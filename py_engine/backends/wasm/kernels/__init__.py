"""The SIMD kernels, one family per module: each family's C (<family>.c, built into kernels.wasm by
scripts/build_wasm_kernels.py) and its Python wrappers (<family>.py), which register them for the wasm backend."""

from . import creation, fused, image, linalg, math, nn, reduce, shape  # noqa: F401
