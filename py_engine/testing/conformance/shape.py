"""Conformance cases: shape kernels."""

CASES = []
