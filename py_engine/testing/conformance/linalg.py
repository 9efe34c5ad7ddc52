"""Conformance cases: linalg kernels."""

CASES = []
