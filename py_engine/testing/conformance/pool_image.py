"""Conformance cases: pool_image kernels."""

CASES = []
