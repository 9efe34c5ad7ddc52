"""WGSL kernels: pool_image."""
