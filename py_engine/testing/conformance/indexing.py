"""Conformance cases: tensor indexing (x[...], one StridedSlice kernel) on every dtype, and its gradient
(StridedSliceGrad); argwhere (Where), unique (Unique), setdiff1d (ListDiff), sparse_fill_empty_rows,
sparse_reshape, ragged_range, ragged_gather and ragged_tensor_to_tensor."""

import numpy as np

from ... import ops
from .case import FLOAT_EDGES, SHAPES, Case, rand, with_edges
from .shape import grad_case, typed_inputs


def _cases():
    cases = []
    x3, large = rand((3, 5, 7), 1), rand((300, 257), 2)
    for dtype, x in typed_inputs((6, 5, 7), 54).items():
        cases.append(Case(f"getitem/negative-steps-{dtype}", lambda t: t[::-1, 3:0:-2, ::-3], [x]))
    cases.append(Case("getitem/int-and-newaxis", lambda t: t[1, None, ::2, -1], [x3]))
    cases.append(Case("getitem/ellipsis-reverse", lambda t: t[..., ::-1], [x3]))
    cases.append(Case("getitem/through-zero", lambda t: t[4::-2, -1:-8:-3], [rand((5, 7), 56)]))
    cases.append(Case("getitem/empty-range", lambda t: t[3:1, ::-1], [x3]))
    cases.append(Case("getitem/large", lambda t: t[::-3, 5:-5:2], [large]))
    cases.append(grad_case("getitem/grad-negative-steps", lambda t: t[::-1, 3:0:-2, ::-3], x3, (3, 2, 3), 57))
    cases.append(grad_case("getitem/grad-large", lambda t: t[::-3, 5:-5:2], large, (100, 124), 58))
    for label, shape in SHAPES.items():
        cases.append(Case(f"argwhere/{label}", ops.argwhere, [rand(shape, 59, dtype=bool)]))
    for dtype, x in typed_inputs((4, 3, 5), 60).items():
        cases.append(Case(f"argwhere/{dtype}", ops.argwhere, [x]))  # numbers: nonzero (NaN included) is true
    cases.append(Case("argwhere/special-values", ops.argwhere, [with_edges(np.zeros((9, 7), np.float32), FLOAT_EDGES)]))
    cases.append(Case("argwhere/none-true", ops.argwhere, [np.zeros((5, 70), bool)]))
    cases.append(Case("argwhere/rank5", ops.argwhere, [rand((2, 3, 1, 4, 3), 61, dtype=bool)]))
    for dtype, x in typed_inputs((40,), 62).items():
        cases.append(Case(f"unique/{dtype}", ops.unique, [np.concatenate([x, x[::3]])]))  # repeats, edge values
    cases.append(Case("unique/nan-and-zeros", ops.unique, [np.array([np.nan, 0.0, -0.0, np.nan, 1.0], np.float32)]))
    rows = rand((6, 3), 63, -2, 2, np.int32)
    cases.append(Case("unique/axis1", lambda t: ops.unique(t, 1), [np.concatenate([rows, rows[:, ::-1]], 1)]))
    cases.append(Case("unique/axis0-rows", ops.unique, [np.concatenate([rows, rows[::2]], 0)]))
    cases.append(Case("unique/empty", ops.unique, [np.zeros(0, np.float32)]))
    cases.append(Case("unique/large", ops.unique, [rand((70000,), 64, -300, 300, np.int32)]))
    for dtype, x in typed_inputs((50,), 65).items():
        cases.append(Case(f"setdiff1d/{dtype}", ops.setdiff1d, [x, x[::4].copy()]))
    cases.append(Case("setdiff1d/empty-y", ops.setdiff1d, [rand((9,), 66), np.zeros(0, np.float32)]))
    sparse = np.array([[3, 1], [0, 2], [3, 0], [5, 5], [0, 0]], np.int32)
    for dtype, values in typed_inputs((5,), 67).items():
        if dtype != "bool":
            fill = lambda i, v, s, d: ops.sparse_fill_empty_rows(i, v, s, d)  # noqa: E731
            default = np.array(-7, values.dtype)
            cases.append(
                Case(f"sparse_fill_empty_rows/{dtype}", fill, [sparse, values, np.array([7, 6], np.int32), default])
            )
    cases.append(
        Case(
            "sparse_reshape/infer",
            ops.sparse_reshape,
            [sparse, np.array([6, 6], np.int32), np.array([3, -1, 2], np.int32)],
        )
    )
    cases.append(
        Case(
            "sparse_reshape/empty",
            ops.sparse_reshape,
            [np.zeros((0, 2), np.int32), np.array([6, 6], np.int32), np.array([36], np.int32)],
        )
    )
    ranges = [np.array([0, 5, 8, 2], np.int32), np.array([3, 5, 1, 9], np.int32), np.array([1, 1, -3, 2], np.int32)]
    cases.append(Case("ragged_range/int32", ops.ragged_range, ranges))
    floats = [np.float32(0.5), np.array([2.0, -1.0, 3.3], np.float32), np.array([0.25, -0.5, 0.7], np.float32)]
    cases.append(Case("ragged_range/float32-scalar-start", ops.ragged_range, floats))

    def gather_rows(s0, s1, values, indices):
        splits, picked = ops.ragged_gather([s0, s1], values, indices)
        return (*splits, picked)

    ragged = [np.array([0, 2, 2, 5], np.int32), np.array([0, 1, 3, 3, 6, 7], np.int32), rand((7, 2), 68)]
    cases.append(Case("ragged_gather/matrix-indices", gather_rows, [*ragged, np.array([[2, 0], [1, 2]], np.int32)]))
    cases.append(Case("ragged_gather/empty-rows", gather_rows, [*ragged, np.array([1, 1], np.int32)]))

    def to_dense(shape, values, default, s0, s1):
        return ops.ragged_tensor_to_tensor(shape, values, default, [s0, s1], ["ROW_SPLITS", "ROW_SPLITS"])

    splits = ragged[:2]
    cases.append(
        Case(
            "ragged_tensor_to_tensor/splits",
            to_dense,
            [np.array([-1, 2, -1, 2], np.int32), ragged[2], np.float32(-1), *splits],
        )
    )
    cases.append(
        Case(
            "ragged_tensor_to_tensor/vector-default",
            to_dense,
            [np.array(-1, np.int32), ragged[2], np.array([7.0, 8.0], np.float32), *splits],
        )
    )
    cases.append(Case("setdiff1d/all-gone", ops.setdiff1d, [np.array([1, 1, 2], np.int32), np.array([2, 1], np.int32)]))
    return cases


CASES = _cases()
