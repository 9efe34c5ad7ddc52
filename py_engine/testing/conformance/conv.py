"""Conformance cases: conv kernels."""

CASES = []
