"""Conformance cases: fill, zeros_like and one_hot, on edge values and empty, scalar and large shapes."""

import numpy as np

from ... import ops
from .case import INT_EDGES, Case, rand, with_edges


def _cases():
    cases = []
    cases.append(Case("fill/float", lambda: ops.fill((3, 70), 2.5)))
    cases.append(Case("fill/int32-empty", lambda: ops.fill((0, 4), 7, "int32")))
    cases.append(Case("fill/bool", lambda: ops.fill((5,), True, "bool")))
    cases.append(Case("fill/bool-false-large", lambda: ops.fill((300, 257), False, "bool")))
    cases.append(Case("fill/scalar", lambda: ops.fill((), -3.5)))
    for value in (np.nan, np.inf, -np.inf, -0.0):
        cases.append(Case(f"fill/{value}", lambda value=value: ops.fill((2, 70), float(value))))
    for value in (2**31 - 1, -(2**31)):
        cases.append(Case(f"fill/int32-{value}", lambda value=value: ops.fill((70,), value, "int32")))
    cases.append(Case("zeros_like/int32", ops.zeros_like, [rand((4, 4), 23, -3, 3, np.int32)]))
    cases.append(Case("one_hot/float", lambda i: ops.one_hot(i, 5), [np.array([[0, 4], [2, 9]], np.int32)]))
    cases.append(
        Case("one_hot/int32-on-off", lambda i: ops.one_hot(i, 3, 7, -1, "int32"), [np.array([2, -1, 0], np.int32)])
    )
    cases.append(Case("one_hot/depth1", lambda i: ops.one_hot(i, 1), [np.array([0, 1, -1, 0], np.int32)]))
    cases.append(Case("one_hot/empty", lambda i: ops.one_hot(i, 4), [np.zeros((0, 3), np.int32)]))
    cases.append(Case("one_hot/scalar", lambda i: ops.one_hot(i, 3), [np.array(2, np.int32)]))
    cases.append(
        Case(
            "one_hot/large", lambda i: ops.one_hot(i, 130), [with_edges(rand((300,), 35, 0, 130, np.int32), INT_EDGES)]
        )
    )
    cases.append(
        Case("one_hot/nan-on-off", lambda i: ops.one_hot(i, 4, np.nan, -np.inf), [np.array([1, 3, 7], np.int32)])
    )
    return cases


CASES = _cases()
