"""WGSL kernels: linalg."""
