"""WGSL kernels: conv."""
