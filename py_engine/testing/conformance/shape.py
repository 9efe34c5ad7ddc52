"""Conformance cases: shape kernels (transpose, concat, slice, gather, gather_nd, segment sum, tile, pad, reverse, broadcast_to)
through their public ops, and their gradients (pe.grad with an explicit dy, so no reduction kernel is needed)."""

import numpy as np

from ... import ops
from ...autograd import grad
from .case import FLOAT_EDGES, INT_EDGES, Case, rand, with_edges


def grad_case(name, f, x, dy_shape, seed):
    """The gradient of f at x for a random dy (of f(x)'s shape)."""
    return Case(name, lambda t, d: grad(f)(t, d), [x, rand(dy_shape, seed)])


def typed_inputs(shape, seed):
    """One input per dtype: float32 and int32 with their edge values among random ones (moved data keeps NaN,
    the infinities, signed zeros and the int32 extremes), and bool."""
    return {
        "float32": with_edges(rand(shape, seed), FLOAT_EDGES, seed),
        "int32": with_edges(rand(shape, seed, -50, 50, np.int32), INT_EDGES, seed),
        "bool": rand(shape, seed, dtype=bool),
    }


def _cases():
    cases = []
    x3, large = rand((3, 5, 7), 1), rand((300, 257), 2)

    # transpose
    for dtype, x in typed_inputs((3, 5, 7), 3).items():
        cases.append(Case(f"transpose/{dtype}", lambda t: ops.transpose(t, (2, 0, 1)), [x]))
    cases.append(Case("transpose/default", ops.transpose, [rand((4, 6), 4)]))
    cases.append(Case("transpose/size1-axes", lambda t: ops.transpose(t, (2, 1, 0, 3)), [rand((1, 5, 3, 1), 5)]))
    cases.append(Case("transpose/rank6", lambda t: ops.transpose(t, (5, 3, 1, 0, 2, 4)), [rand((2, 3, 1, 4, 2, 3), 6)]))
    cases.append(Case("transpose/large", ops.transpose, [large]))
    cases.append(grad_case("transpose/grad", lambda t: ops.transpose(t, (1, 2, 0)), x3, (5, 7, 3), 7))

    # concat, stack, unstack, split
    for dtype, x in typed_inputs((4, 3), 8).items():
        cases.append(Case(f"concat/{dtype}", lambda a, b: ops.concat([a, b], 1), [x, x[:, :2].copy()]))
    cases.append(Case("concat/axis0", lambda a, b: ops.concat([a, b]), [rand((2, 3, 4), 9), rand((5, 3, 4), 10)]))
    cases.append(
        Case(
            "concat/size0-input",
            lambda a, b, c: ops.concat([a, b, c], 1),
            [x3, rand((3, 0, 7), 11), rand((3, 2, 7), 12)],
        )
    )
    cases.append(Case("concat/all-empty", lambda a, b: ops.concat([a, b], 1), [rand((0, 2), 13), rand((0, 3), 14)]))
    cases.append(
        Case(
            "concat/mixed-dtypes",
            lambda a, b, c: ops.concat([a, b, c], -1),
            [rand((2, 3), 15, -5, 5, np.int32), rand((2, 2), 16), rand((2, 1), 17, dtype=bool)],
        )
    )
    many = [rand((2, k % 3 + 1, 3), 18 + k) for k in range(17)]  # 17 inputs: three dispatches
    cases.append(Case("concat/17-inputs", lambda *ts: ops.concat(list(ts), 1), many))
    cases.append(Case("concat/large", lambda a, b: ops.concat([a, b], 0), [large, rand((211, 257), 35)]))
    cases.append(grad_case("concat/grad", lambda t: ops.concat([t, t * 2.0, t[:, :1]], 1), x3, (3, 11, 7), 36))
    cases.append(Case("stack/axis0", lambda a, b, c: ops.stack([a, b, c]), [rand((4, 5), k) for k in (37, 38, 39)]))
    cases.append(
        Case("stack/axis-last", lambda a, b: ops.stack([a, b], -1), list(typed_inputs((2, 2, 3), 40)["int32"]))
    )
    cases.append(Case("stack/many-scalars", lambda *ts: ops.stack(list(ts)), [rand((), 41 + k) for k in range(12)]))
    cases.append(Case("unstack/axis1", lambda t: ops.unstack(t, 1), [x3]))
    cases.append(Case("unstack/bool", ops.unstack, [typed_inputs((3, 4), 53)["bool"]]))
    cases.append(Case("split/equal", lambda t: ops.split(t, 5, 1), [x3]))
    cases.append(Case("split/sizes", lambda t: ops.split(t, [2, -1, 0, 3], 2), [x3]))
    cases.append(Case("split/large", lambda t: ops.split(t, [100, 157], 1), [large]))

    # slice
    for dtype, x in typed_inputs((6, 5, 7), 54).items():
        cases.append(Case(f"slice/{dtype}", lambda t: ops.slice(t, [1, 2, 3], [4, 2, -1]), [x]))
    cases.append(Case("slice/size0", lambda t: ops.slice(t, [1, 0, 0], [0, -1, -1]), [x3]))
    cases.append(Case("slice/size1", lambda t: ops.slice(t, [2, 4, 6], [1, 1, 1]), [x3]))
    cases.append(Case("slice/large", lambda t: ops.slice(t, [7, 3], [290, 250]), [large]))
    cases.append(grad_case("slice/grad", lambda t: ops.slice(t, [1, 1, 2], [2, 3, 4]), x3, (2, 3, 4), 55))

    # gather
    idx = np.array([[0, 4, 2], [4, 4, 1]], np.int32)
    for dtype, x in typed_inputs((5, 6, 7), 61).items():
        cases.append(Case(f"gather/axis0-{dtype}", lambda t, i: ops.gather(t, i), [x, idx]))
    cases.append(Case("gather/axis1", lambda t, i: ops.gather(t, i, 1), [rand((3, 5, 4), 62), idx]))
    cases.append(Case("gather/axis-last", lambda t, i: ops.gather(t, i, -1), [rand((3, 5), 63), idx]))
    batch_idx = np.array([[0, 2, 2, 1], [1, 1, 0, 0], [2, 0, 1, 2]], np.int32)
    cases.append(Case("gather/batch-dims1", lambda t, i: ops.gather(t, i, 1, 1), [rand((3, 3, 4), 64), batch_idx]))
    cases.append(
        Case("gather/batch-dims1-axis2", lambda t, i: ops.gather(t, i, 2, 1), [rand((3, 2, 3, 5), 65), batch_idx])
    )
    cases.append(Case("gather/scalar-index", lambda t, i: ops.gather(t, i, 1), [x3, np.array(4, np.int32)]))
    cases.append(Case("gather/empty-indices", lambda t, i: ops.gather(t, i), [x3, np.zeros((0, 2), np.int32)]))
    cases.append(Case("gather/large", lambda t, i: ops.gather(t, i), [large, rand((5, 100), 66, 0, 300, np.int32)]))
    cases.append(grad_case("gather/grad-axis1", lambda t: ops.gather(t, ops.tensor(idx), 1), x3, (3, 2, 3, 7), 67))
    cases.append(
        grad_case(
            "gather/grad-batch-dims1",
            lambda t: ops.gather(t, ops.tensor(batch_idx), 1, 1),
            rand((3, 3, 4), 68),
            (3, 4, 4),
            69,
        )
    )

    # gather_nd: whole rows (k < rank), single elements (k = rank), an empty and a scalar batch, k = 0
    nd_idx = np.array([[[0, 4], [4, 0]], [[2, 5], [0, 0]], [[4, 5], [3, 1]]], np.int32)  # batch (3, 2), k = 2
    for dtype, x in typed_inputs((5, 6, 7), 87).items():
        cases.append(Case(f"gather_nd/rows-{dtype}", ops.gather_nd, [x, nd_idx]))
    cases.append(Case("gather_nd/elements", ops.gather_nd, [x3, np.array([[2, 4, 6], [0, 0, 0], [1, 3, 5]], np.int32)]))
    cases.append(Case("gather_nd/scalar-batch", ops.gather_nd, [x3, np.array([1, 2], np.int32)]))
    cases.append(Case("gather_nd/empty-batch", ops.gather_nd, [x3, np.zeros((0, 2), np.int32)]))
    cases.append(Case("gather_nd/k0", ops.gather_nd, [rand((2, 3), 88), np.zeros((4, 0), np.int32)]))
    large_idx = np.stack([rand((97, 5), 89, 0, 300, np.int32), rand((97, 5), 90, 0, 257, np.int32)], -1)
    cases.append(Case("gather_nd/large", ops.gather_nd, [large, large_idx]))
    cases.append(Case("gather_nd/large-rows", ops.gather_nd, [large, rand((130, 1), 91, 0, 300, np.int32)]))
    cases.append(
        grad_case(
            "gather_nd/grad-rows", lambda t: ops.gather_nd(t, ops.tensor(nd_idx)), rand((5, 6, 7), 95), (3, 2, 7), 92
        )
    )
    repeated = np.array([[1, 2, 3], [1, 2, 3], [0, 4, 6]], np.int32)  # a repeated tuple: its gradients add up
    cases.append(grad_case("gather_nd/grad-elements", lambda t: ops.gather_nd(t, ops.tensor(repeated)), x3, (3,), 93))
    cases.append(
        grad_case("gather_nd/grad-large", lambda t: ops.gather_nd(t, ops.tensor(large_idx)), large, (97, 5), 94)
    )

    # unsorted_segment_sum
    ids = np.array([3, 0, -1, 3, 1, 7], np.int32)  # -1 and 7 are dropped
    cases.append(
        Case("unsorted_segment_sum/float", lambda t, i: ops.unsorted_segment_sum(t, i, 5), [rand((6, 4), 70), ids])
    )
    cases.append(
        Case(
            "unsorted_segment_sum/int32",
            lambda t, i: ops.unsorted_segment_sum(t, i, 4),
            [rand((6, 3, 2), 71, -9, 9, np.int32), ids],
        )
    )
    cases.append(
        Case(
            "unsorted_segment_sum/ids-rank2",
            lambda t, i: ops.unsorted_segment_sum(t, i, 3),
            [rand((2, 4, 3), 72), np.array([[0, 2, 2, 1], [0, 0, 5, 2]], np.int32)],
        )
    )
    cases.append(
        Case(
            "unsorted_segment_sum/special-values",
            lambda t, i: ops.unsorted_segment_sum(t, i, 4),
            [FLOAT_EDGES[:12].reshape(6, 2), np.array([0, 0, 1, 2, 3, 3], np.int32)],  # inf + -inf is NaN
        )
    )
    cases.append(
        Case(
            "unsorted_segment_sum/no-segments", lambda t, i: ops.unsorted_segment_sum(t, i, 0), [rand((6, 4), 73), ids]
        )
    )
    cases.append(
        Case(
            "unsorted_segment_sum/large",
            lambda t, i: ops.unsorted_segment_sum(t, i, 150),
            [rand((400, 70), 74), rand((400,), 75, 0, 150, np.int32)],
            rtol=1e-4,
            atol=1e-5,
        )
    )
    cases.append(
        grad_case(
            "unsorted_segment_sum/grad",
            lambda t: ops.unsorted_segment_sum(t, ops.tensor(ids), 5),
            rand((6, 4), 76),
            (5, 4),
            77,
        )
    )

    # tile, pad, reverse, broadcast_to
    for dtype, x in typed_inputs((2, 3, 4), 78).items():
        cases.append(Case(f"tile/{dtype}", lambda t: ops.tile(t, (2, 1, 3)), [x]))
        cases.append(Case(f"pad/{dtype}", lambda t: ops.pad(t, [(1, 0), (0, 2), (2, 1)], 1), [x]))
        cases.append(Case(f"reverse/{dtype}", lambda t: ops.reverse(t, (0, 2)), [x]))
        cases.append(Case(f"broadcast_to/{dtype}", lambda t: ops.broadcast_to(t, (3, 2, 3, 4)), [x]))
    cases.append(Case("tile/inner-only", lambda t: ops.tile(t, (1, 1, 5)), [x3]))
    cases.append(Case("tile/zero-reps", lambda t: ops.tile(t, (2, 0, 1)), [x3]))
    cases.append(Case("tile/size1-axis", lambda t: ops.tile(t, (3, 2)), [rand((1, 5), 79)]))
    cases.append(Case("tile/large", lambda t: ops.tile(t, (3, 2)), [rand((100, 129), 80)]))
    # 4.2M outputs: more than 65535 workgroups of 64, so the grid wraps into y
    cases.append(Case("tile/grid-wraps-into-y", lambda t: ops.tile(t, (683, 1)), [rand((3, 2050), 86)]))
    cases.append(Case("pad/float-value", lambda t: ops.pad(t, [(0, 0), (3, 3), (0, 0)], -2.5), [x3]))
    for value in (np.nan, -np.inf, -0.0):
        cases.append(Case(f"pad/value-{value}", lambda t, v=value: ops.pad(t, [(1, 1), (0, 2)], float(v)), [x3[0]]))
    cases.append(Case("pad/int32-extreme", lambda t: ops.pad(t, [(2, 0)], -(2**31)), [INT_EDGES]))
    cases.append(Case("pad/before-only", lambda t: ops.pad(t, [(0, 1), (2, 0), (0, 0)], 3), [x3]))
    cases.append(Case("pad/empty-input", lambda t: ops.pad(t, [(1, 2), (0, 0)], 7), [rand((0, 3), 81)]))
    cases.append(Case("pad/large", lambda t: ops.pad(t, [(5, 6), (0, 3)]), [large]))
    cases.append(grad_case("pad/grad", lambda t: ops.pad(t, [(1, 1), (0, 2), (3, 0)]), x3, (5, 7, 10), 82))
    cases.append(Case("reverse/all", ops.reverse, [x3]))
    cases.append(Case("reverse/large", lambda t: ops.reverse(t, 1), [large]))
    cases.append(grad_case("reverse/grad", lambda t: ops.reverse(t, (1, 2)), x3, (3, 5, 7), 83))
    cases.append(Case("broadcast_to/rank3", lambda t: ops.broadcast_to(t, (4, 3, 5)), [rand((3, 1), 24)]))
    cases.append(Case("broadcast_to/special-values", lambda t: ops.broadcast_to(t, (3, 15)), [FLOAT_EDGES]))
    cases.append(Case("broadcast_to/size0", lambda t: ops.broadcast_to(t, (0, 4)), [rand((1, 4), 84)]))
    cases.append(Case("broadcast_to/large", lambda t: ops.broadcast_to(t, (3, 300, 257)), [rand((300, 1), 85)]))
    return cases


CASES = _cases()
