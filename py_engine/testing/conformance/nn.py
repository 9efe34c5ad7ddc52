"""Conformance cases: nn kernels."""

CASES = []
