"""WGSL kernels: shape."""
