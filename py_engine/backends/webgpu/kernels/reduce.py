"""WGSL kernels: reduce."""
