"""Conformance cases: reduce kernels."""

CASES = []
