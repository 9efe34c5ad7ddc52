"""Conformance cases: reductions (sum, mean, prod, max, min, all, any, argmax, argmin, logsumexp, moments),
softmax, log_softmax, cumsum, top_k and their gradients.

Cases named "...-gpu" run the webgpu kernels as they run on a real GPU (256-thread workgroups and the GPU's
variant choice), whatever adapter this is: both variants of every kernel get checked on a CPU adapter too.
"""

import numpy as np

from ... import ops
from ...autograd import grad
from .case import FLOAT_EDGES, INT_EDGES, Case, as_gpu, rand, with_edges

NAN_ROWS = np.array([[1.0, np.nan, 3.0, np.nan], [-np.inf, 2.0, 5.0, 5.0], [np.inf, np.inf, 0.0, -1.0]], np.float32)
# rows where the infinities meet (inf - inf), signed zeros only, and NaN among infinities
SPECIAL_ROWS = np.array(
    [[np.inf, -np.inf, 1.0, 2.0], [-0.0, 0.0, -0.0, 0.0], [np.nan, np.inf, -np.inf, 0.0], [-0.0, -0.0, -0.0, -0.0]],
    np.float32,
)
AXES = {"all": None, "axis1": 1, "negative": -1, "non-adjacent": (0, 2), "axis0": 0}
LARGE = (300, 1000)  # 300 000 elements: several chunks and passes when reduced at once


def _reduction_cases():
    cases, odd = [], rand((3, 5, 7), 1)
    for name in ["sum", "mean", "prod", "max", "min"]:
        fn = getattr(ops, name)
        for label, axis in AXES.items():
            cases.append(Case(f"{name}/{label}", lambda t, fn=fn, axis=axis: fn(t, axis), [odd], rtol=1e-5, atol=1e-5))
        cases.append(Case(f"{name}/keepdims", lambda t, fn=fn: fn(t, (0, 2), keepdims=True), [odd], atol=1e-5))
        cases.append(Case(f"{name}/size1", lambda t, fn=fn: fn(t, (0, 2)), [rand((1, 4, 1), 2)]))
        cases.append(Case(f"{name}/scalar", fn, [np.array(2.5, np.float32)]))
        cases.append(Case(f"{name}/nan", lambda t, fn=fn: fn(t, 1), [NAN_ROWS]))
        for label, axis in {"special-values": 1, "special-values-axis0": 0, "special-values-all": None}.items():
            cases.append(Case(f"{name}/{label}", lambda t, fn=fn, axis=axis: fn(t, axis), [SPECIAL_ROWS]))
        edges_large = with_edges(rand((300, 257), 11, 0.5, 1.5), FLOAT_EDGES)
        cases.append(Case(f"{name}/special-values-large", lambda t, fn=fn: fn(t, 0), [edges_large], rtol=1e-4))
        cases.append(
            Case(f"{name}/special-values-large-gpu", as_gpu(lambda t, fn=fn: fn(t, 1)), [edges_large], rtol=1e-4)
        )
        for n in (7, 8, 17, 129, 300):  # the wasm module's sums along a row in numpy's pairwise order
            x = rand((3, n), 40 + n, -3, 3)
            cases.append(Case(f"{name}/rows-of-{n}", lambda t, fn=fn: fn(t, -1), [x], rtol=1e-5, atol=1e-5))
        cases.append(Case(f"{name}/odd-rows", lambda t, fn=fn: fn(t, 1), [rand((70, 130), 3, 0.5, 1.5)], rtol=1e-4))
        if name not in ("max", "min"):  # those reject empty axes
            cases.append(Case(f"{name}/size0-axis", lambda t, fn=fn: fn(t, 0), [rand((0, 3), 4)]))
        cases.append(Case(f"{name}/size0-rows", lambda t, fn=fn: fn(t, 1), [rand((0, 3), 4)]))
        low, high = (0.995, 1.005) if name == "prod" else (-2.0, 2.0)
        large = rand(LARGE, 5, low, high)
        for label, axis in {"large-all": None, "large-axis0": 0, "large-axis1": 1}.items():
            f = lambda t, fn=fn, axis=axis: fn(t, axis)  # noqa: E731
            cases.append(Case(f"{name}/{label}", f, [large], rtol=1e-4, atol=1e-4))
            cases.append(Case(f"{name}/{label}-gpu", as_gpu(f), [large], rtol=1e-4, atol=1e-4))
        cases.append(Case(f"{name}/short-rows-gpu", as_gpu(lambda t, fn=fn: fn(t, 1)), [rand((500, 9), 6)]))
        if name != "mean":
            ints = rand((4, 9, 5), 7, -9, 9, np.int32)  # prod wraps around as numpy's int32 does
            for label, axis in {"int32": (0, 2), "int32-all": None}.items():
                cases.append(Case(f"{name}/{label}", lambda t, fn=fn, axis=axis: fn(t, axis), [ints]))
            cases.append(Case(f"{name}/int32-edges", lambda t, fn=fn: fn(t, 1), [INT_EDGES.reshape(3, 3)]))
            big = rand((3, 2000), 8, -(2**30), 2**30, np.int32)  # sums wrap around too
            cases.append(Case(f"{name}/int32-large", lambda t, fn=fn: fn(t, 1), [big]))
            cases.append(Case(f"{name}/int32-large-gpu", as_gpu(lambda t, fn=fn: fn(t, 1)), [big]))
    nan_far = rand((5000,), 19)  # a NaN in one chunk wins over every other chunk
    nan_far[3210] = np.nan
    for fn in [ops.sum, ops.max, ops.min, ops.argmax, ops.argmin]:
        f = lambda t, fn=fn: fn(t, None)  # noqa: E731
        cases.append(Case(f"{fn.__name__}/nan-across-chunks", f, [nan_far]))
        cases.append(Case(f"{fn.__name__}/nan-across-chunks-gpu", as_gpu(f), [nan_far]))
    cases.append(Case("sum/bool", lambda t: ops.sum(t, 0), [rand((6, 5), 9, dtype=bool)]))
    cases.append(Case("mean/int32", lambda t: ops.mean(t, 1), [rand((4, 9), 10, -9, 9, np.int32)]))

    for name in ["all", "any"]:
        fn = getattr(ops, name)
        one_differs = np.full((40, 33), name == "all")  # all: one False; any: one True
        one_differs[3, 7] = name != "all"
        for label, axis in {"all": None, "axis0": 0, "negative": -1}.items():
            cases.append(Case(f"{name}/{label}", lambda t, fn=fn, axis=axis: fn(t, axis), [one_differs]))
        mixed = rand((3, 4, 5), 12, dtype=bool)
        cases.append(Case(f"{name}/non-adjacent", lambda t, fn=fn: fn(t, (0, 2), keepdims=True), [mixed]))
        cases.append(Case(f"{name}/float", lambda t, fn=fn: fn(t, 1), [np.array([[0.0, 2.0], [0.0, 0.0]], np.float32)]))
        # only 0 and -0 are false: NaN and the infinities are true, as a cast to bool says
        truthy = np.array([[-0.0, 0.0], [np.nan, -0.0], [np.inf, -np.inf], [-0.0, 1e-7], [np.nan, np.nan]], np.float32)
        cases.append(Case(f"{name}/special-values", lambda t, fn=fn: fn(t, 1), [truthy]))
        cases.append(Case(f"{name}/int32-edges", lambda t, fn=fn: fn(t, 1), [INT_EDGES.reshape(3, 3)]))
        cases.append(Case(f"{name}/scalar", fn, [np.array(False)]))
        cases.append(Case(f"{name}/size0-axis", lambda t, fn=fn: fn(t, 0), [np.zeros((0, 3), bool)]))
        large = np.full((3000, 4), name == "all")
        large[2999, 1] = name != "all"
        cases.append(Case(f"{name}/large", lambda t, fn=fn: fn(t, 0), [large]))
        cases.append(Case(f"{name}/large-gpu", as_gpu(lambda t, fn=fn: fn(t)), [large]))

    for name in ["argmax", "argmin"]:
        fn = getattr(ops, name)
        for label, axis in {"all": None, "axis0": 0, "axis1": 1, "negative": -1}.items():
            cases.append(Case(f"{name}/{label}", lambda t, fn=fn, axis=axis: fn(t, axis), [rand((3, 5, 7), 14)]))
        ties = rand((6, 70), 15, -2, 2, np.int32)  # many ties: the first index wins
        cases.append(Case(f"{name}/int32-ties", lambda t, fn=fn: fn(t, 1), [ties]))
        cases.append(Case(f"{name}/int32-ties-gpu", as_gpu(lambda t, fn=fn: fn(t, 1)), [ties]))
        cases.append(Case(f"{name}/nan", lambda t, fn=fn: fn(t, 1), [NAN_ROWS]))
        cases.append(Case(f"{name}/special-values", lambda t, fn=fn: fn(t, 1), [SPECIAL_ROWS]))
        cases.append(Case(f"{name}/special-values-axis0", lambda t, fn=fn: fn(t, 0), [SPECIAL_ROWS]))
        cases.append(Case(f"{name}/int32-edges", lambda t, fn=fn: fn(t, 0), [INT_EDGES.reshape(3, 3)]))
        cases.append(Case(f"{name}/scalar", lambda t, fn=fn: fn(t, None), [np.array(3.0, np.float32)]))
        cases.append(Case(f"{name}/size1", lambda t, fn=fn: fn(t, 0), [rand((1, 4), 16)]))
        large = rand(LARGE, 17)
        for label, axis in {"large-all": None, "large-axis0": 0, "large-axis1": 1}.items():
            f = lambda t, fn=fn, axis=axis: fn(t, axis)  # noqa: E731
            cases.append(Case(f"{name}/{label}", f, [large]))
            cases.append(Case(f"{name}/{label}-gpu", as_gpu(f), [large]))
        flat_ties = np.zeros((5000,), np.float32)  # the flat index of the first of equal extremes, across chunks
        flat_ties[[4321, 777, 4000]] = 3.0 if name == "argmax" else -3.0
        cases.append(Case(f"{name}/ties-across-chunks", lambda t, fn=fn: fn(t, None), [flat_ties]))
        cases.append(Case(f"{name}/ties-across-chunks-gpu", as_gpu(lambda t, fn=fn: fn(t, None)), [flat_ties]))

    cases.append(Case("logsumexp/non-adjacent", lambda t: ops.logsumexp(t, (0, 2)), [rand((3, 5, 7), 18, -5, 5)]))
    cases.append(Case("logsumexp/keepdims", lambda t: ops.logsumexp(t, 1, keepdims=True), [rand((4, 70), 19)]))
    cases.append(Case("logsumexp/size0", lambda t: ops.logsumexp(t, 0), [rand((0, 3), 20)]))
    cases.append(Case("logsumexp/special-values", lambda t: ops.logsumexp(t, 1), [SPECIAL_ROWS]))
    cases.append(Case("logsumexp/size1", lambda t: ops.logsumexp(t, 0), [rand((1, 5), 20)]))
    cases.append(Case("moments/special-values", lambda t: ops.moments(t, 1), [SPECIAL_ROWS]))
    cases.append(Case("moments/size1", lambda t: ops.moments(t, 0), [rand((1, 5), 22)]))
    cases.append(Case("logsumexp/large", lambda t: ops.logsumexp(t), [rand(LARGE, 21)], rtol=1e-4))
    cases.append(Case("logsumexp/large-gpu", as_gpu(lambda t: ops.logsumexp(t, 0)), [rand(LARGE, 21)], rtol=1e-4))
    cases.append(Case("moments/non-adjacent", lambda t: ops.moments(t, (0, 2)), [rand((3, 5, 7), 22)], atol=1e-5))
    cases.append(Case("moments/keepdims", lambda t: ops.moments(t, -1, keepdims=True), [rand((5, 66), 23)]))
    cases.append(Case("moments/large", lambda t: ops.moments(t), [rand(LARGE, 24)], rtol=1e-4, atol=1e-4))
    cases.append(
        Case("moments/large-gpu", as_gpu(lambda t: ops.moments(t, 1)), [rand(LARGE, 24)], rtol=1e-4, atol=1e-5)
    )
    return cases


def _softmax_cases():
    cases = []
    for name in ["softmax", "log_softmax"]:
        fn = getattr(ops, name)
        x = rand((3, 5, 7), 30, -4, 4)
        for label, axis in {"last": -1, "axis0": 0, "middle": 1}.items():
            cases.append(Case(f"{name}/{label}", lambda t, fn=fn, axis=axis: fn(t, axis), [x], atol=1e-6))
        cases.append(Case(f"{name}/size1", lambda t, fn=fn: fn(t, 0), [rand((1, 5), 31)]))
        cases.append(Case(f"{name}/size0", fn, [rand((0, 3), 32)]))
        cases.append(Case(f"{name}/size0-axis", lambda t, fn=fn: fn(t, 0), [rand((0, 3), 32)]))
        cases.append(Case(f"{name}/rank1", fn, [rand((70,), 33, -30, 30)]))
        cases.append(Case(f"{name}/large-range", fn, [np.array([[1000.0, 0.0, -1000.0, 999.0]], np.float32)]))
        large = rand(LARGE, 34, -5, 5)
        for label, axis in {"large-axis0": 0, "large-axis1": 1}.items():
            f = lambda t, fn=fn, axis=axis: fn(t, axis)  # noqa: E731
            cases.append(Case(f"{name}/{label}", f, [large], rtol=1e-4, atol=1e-6))
            cases.append(Case(f"{name}/{label}-gpu", as_gpu(f), [large], rtol=1e-4, atol=1e-6))
        long_row = rand((2, 5000), 35, -5, 5)
        cases.append(Case(f"{name}/long-rows", fn, [long_row], rtol=1e-4, atol=1e-7))
        cases.append(Case(f"{name}/short-rows-gpu", as_gpu(fn), [rand((300, 5), 36)], atol=1e-6))
    for n in (1, 2, 3, 4, 5, 9, 13):  # the wasm module's rows: whole vectors and the last 1-3 values
        cases.append(Case(f"softmax/rows-of-{n}", ops.softmax, [rand((6, n), 37 + n, -20, 20)]))
    # numpy's own rules: a NaN spreads over its row, +inf gives NaN, a row of -inf gives NaN
    specials = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 0.0, 1.0]])
    cases.append(Case("softmax/special-values", ops.softmax, [specials.astype(np.float32)]))
    cases.append(Case("log_softmax/special-values", ops.log_softmax, [specials.astype(np.float32)]))
    cases.append(Case("softmax/signed-zeros", ops.softmax, [SPECIAL_ROWS[1:2]]))
    cases.append(
        Case("softmax/special-values-gpu", as_gpu(lambda t: ops.softmax(t, 0)), [specials.T.astype(np.float32)])
    )
    return cases


def _cumsum_cases():
    cases, x = [], rand((3, 5, 7), 40)
    for label, axis in {"axis0": 0, "middle": 1, "negative": -1}.items():
        for exclusive in (False, True):
            for reverse in (False, True):
                kind = f"{label}{'-exclusive' if exclusive else ''}{'-reverse' if reverse else ''}"
                f = lambda t, a=axis, e=exclusive, r=reverse: ops.cumsum(t, a, e, r)  # noqa: E731
                cases.append(Case(f"cumsum/{kind}", f, [x], atol=1e-5))
    cases.append(Case("cumsum/int32", lambda t: ops.cumsum(t, 1, True), [rand((4, 9), 41, -9, 9, np.int32)]))
    big = rand((3, 3000), 42, -(2**30), 2**30, np.int32)  # wraps around as numpy's int32 does
    cases.append(Case("cumsum/int32-wrap", lambda t: ops.cumsum(t, 1), [big]))
    cases.append(Case("cumsum/int32-wrap-gpu", as_gpu(lambda t: ops.cumsum(t, 1, True, True)), [big]))
    cases.append(Case("cumsum/bool", lambda t: ops.cumsum(t, 0), [rand((6, 4), 43, dtype=bool)]))
    cases.append(Case("cumsum/size1", lambda t: ops.cumsum(t, 0), [rand((1, 6), 44)]))
    cases.append(Case("cumsum/size0", lambda t: ops.cumsum(t, 1), [rand((0, 3), 45)]))
    cases.append(Case("cumsum/nan", lambda t: ops.cumsum(t, 1, False, True), [NAN_ROWS]))
    for exclusive in (False, True):
        f = lambda t, e=exclusive: ops.cumsum(t, 1, e)  # noqa: E731
        cases.append(Case(f"cumsum/special-values{'-exclusive' if exclusive else ''}", f, [SPECIAL_ROWS]))
    cases.append(Case("cumsum/int32-edges", lambda t: ops.cumsum(t, 1), [INT_EDGES.reshape(3, 3)]))
    edges_large = with_edges(rand((300, 257), 48, 0, 1), FLOAT_EDGES)
    cases.append(Case("cumsum/special-values-large", lambda t: ops.cumsum(t, 0), [edges_large], rtol=1e-4))
    cases.append(Case("cumsum/special-values-large-gpu", as_gpu(lambda t: ops.cumsum(t, 1)), [edges_large], rtol=1e-4))
    positive = rand(LARGE, 46, 0, 1)  # sums that grow, so that rtol means something
    for label, f in {
        "large-axis0": lambda t: ops.cumsum(t, 0),
        "large-axis1": lambda t: ops.cumsum(t, 1, True, True),
    }.items():
        cases.append(Case(f"cumsum/{label}", f, [positive], rtol=1e-4))
        cases.append(Case(f"cumsum/{label}-gpu", as_gpu(f), [positive], rtol=1e-4))
    long_rows = rand((3, 9000), 47, 0, 1)
    cases.append(Case("cumsum/long-rows", lambda t: ops.cumsum(t, 1, True), [long_rows], rtol=1e-4))
    cases.append(Case("cumsum/long-rows-gpu", as_gpu(lambda t: ops.cumsum(t, -1, False, True)), [long_rows], rtol=1e-4))
    return cases


def _cumprod_cases():
    """Running products: factors near 1 so that long rows neither overflow nor vanish (rtol then means something)."""
    cases, x = [], rand((3, 5, 7), 70, 0.5, 1.5)
    for label, axis in {"axis0": 0, "negative": -1}.items():
        for exclusive in (False, True):
            for reverse in (False, True):
                kind = f"{label}{'-exclusive' if exclusive else ''}{'-reverse' if reverse else ''}"
                f = lambda t, a=axis, e=exclusive, r=reverse: ops.cumprod(t, a, e, r)  # noqa: E731
                cases.append(Case(f"cumprod/{kind}", f, [x], rtol=1e-5))
    cases.append(Case("cumprod/int32", lambda t: ops.cumprod(t, 1, True), [rand((4, 9), 71, -3, 4, np.int32)]))
    cases.append(
        Case("cumprod/int32-wrap-gpu", as_gpu(lambda t: ops.cumprod(t, 1)), [rand((3, 300), 72, -9, 9, np.int32)])
    )
    cases.append(Case("cumprod/bool", lambda t: ops.cumprod(t, 0), [rand((6, 4), 73, dtype=bool)]))
    cases.append(Case("cumprod/size0", lambda t: ops.cumprod(t, 1), [rand((0, 3), 74)]))
    cases.append(Case("cumprod/scalar-axis-size1", lambda t: ops.cumprod(t, 0), [rand((1, 6), 75)]))
    cases.append(Case("cumprod/special-values", lambda t: ops.cumprod(t, 1, True), [SPECIAL_ROWS]))
    near_one = rand((300, 257), 76, 0.99, 1.01)
    for label, f in {
        "large-axis0": lambda t: ops.cumprod(t, 0),
        "large-axis1": lambda t: ops.cumprod(t, 1, True, True),
    }.items():
        cases.append(Case(f"cumprod/{label}", f, [near_one], rtol=1e-4))
        cases.append(Case(f"cumprod/{label}-gpu", as_gpu(f), [near_one], rtol=1e-4))
    return cases


def _top_k_cases():
    cases = []
    x = rand((3, 5, 7), 50)
    for k in (0, 1, 3, 7):
        cases.append(Case(f"top_k/k{k}", lambda t, k=k: ops.top_k(t, k), [x]))
    cases.append(Case("top_k/rank1", lambda t: ops.top_k(t, 4), [rand((70,), 51)]))
    cases.append(Case("top_k/size0-rows", lambda t: ops.top_k(t, 2), [rand((0, 5), 52)]))
    cases.append(Case("top_k/size0-row", lambda t: ops.top_k(t, 0), [rand((3, 0), 52)]))
    ties = rand((5, 40), 53, -3, 3, np.int32)  # ties: the lower index first
    for k in (3, 40):
        cases.append(Case(f"top_k/int32-ties-k{k}", lambda t, k=k: ops.top_k(t, k), [ties]))
        cases.append(Case(f"top_k/int32-ties-k{k}-gpu", as_gpu(lambda t, k=k: ops.top_k(t, k)), [ties]))
    nan = np.array([[1.0, np.nan, 3.0, -np.inf, np.nan, np.inf, 3.0, -0.0, 0.0]], np.float32)  # NaN last
    for k in (4, 9):
        cases.append(Case(f"top_k/nan-k{k}", lambda t, k=k: ops.top_k(t, k), [nan]))
        cases.append(Case(f"top_k/nan-k{k}-gpu", as_gpu(lambda t, k=k: ops.top_k(t, k)), [nan]))
    cases.append(Case("top_k/int32-edges", lambda t: ops.top_k(t, 5), [INT_EDGES.reshape(1, 9)]))
    cases.append(Case("top_k/special-values", lambda t: ops.top_k(t, 4), [SPECIAL_ROWS]))
    edges_rows = with_edges(rand((3, 300), 57), FLOAT_EDGES)
    cases.append(Case("top_k/special-values-long", lambda t: ops.top_k(t, 50), [edges_rows]))
    cases.append(Case("top_k/special-values-long-gpu", as_gpu(lambda t: ops.top_k(t, 50)), [edges_rows]))
    long_ties = rand((4, 1500), 55, -3, 3, np.int32)  # rows past the bitonic sort's limit
    cases.append(Case("top_k/int32-ties-long", lambda t: ops.top_k(t, 6), [long_ties]))
    cases.append(Case("top_k/int32-ties-long-gpu", as_gpu(lambda t: ops.top_k(t, 6)), [long_ties]))
    long_nan = rand((2, 1100), 56)
    long_nan[:, ::7] = np.nan
    cases.append(Case("top_k/nan-long", lambda t: ops.top_k(t, 900), [long_nan]))
    # past the wasm kernel's SMALL: a detector's one long row of scores, mostly zeros (ties) with the special values,
    # a row in ascending order (every value enters the heap), and rows of NaN but for a few numbers
    scores = with_edges(
        np.where(rand((1, 20000), 58) > 1.9, rand((1, 20000), 59, 0, 1), 0).astype(np.float32), FLOAT_EDGES
    )
    cases.append(Case("top_k/long-row-of-scores", lambda t: ops.top_k(t, 100), [scores]))
    cases.append(Case("top_k/ascending", lambda t: ops.top_k(t, 64), [np.arange(8192, dtype=np.float32)[None]]))
    few = np.full((2, 3000), np.nan, np.float32)
    few[:, [5, 1700, 2999]] = [[1.0, -0.0, 0.0], [2.0, np.inf, 2.0]]
    cases.append(Case("top_k/nan-but-a-few", lambda t: ops.top_k(t, 10), [few]))
    sizes = {"large-k5": ((300, 257), 5), "sort-1024": ((20, 1000), 1000), "long-rows": ((3, 3000), 20)}
    for label, (shape, k) in sizes.items():
        data = rand(shape, 54)
        cases.append(Case(f"top_k/{label}", lambda t, k=k: ops.top_k(t, k), [data]))
        cases.append(Case(f"top_k/{label}-gpu", as_gpu(lambda t, k=k: ops.top_k(t, k)), [data]))
    return cases


def _gradient_cases():
    def grad_case(label, f, x, out_shape, **tolerance):
        """d(sum(f(x) * w))/dx, w random of f's output shape: the backward pass runs on the backend."""
        w = rand(out_shape, 60, 0.5, 1.5)
        return Case(f"{label}/grad", lambda t, w: grad(f)(t, dy=w), [x, w], **tolerance)

    x = rand((4, 5, 6), 61)
    distinct = np.random.default_rng(62).permutation(120).astype(np.float32).reshape(4, 5, 6) / 10  # no ties
    return [
        grad_case("sum", lambda t: ops.sum(t, (0, 2)), x, (5,)),
        grad_case("mean", lambda t: ops.mean(t, 1, keepdims=True), x, (4, 1, 6)),
        grad_case("prod", lambda t: ops.prod(t, 2), x, (4, 5), atol=1e-5),
        grad_case("max", lambda t: ops.max(t, (0, 2)), distinct, (5,)),
        grad_case("min", lambda t: ops.min(t, -1), distinct, (4, 5)),
        grad_case("logsumexp", lambda t: ops.logsumexp(t, 1), x, (4, 6)),
        grad_case("moments", lambda t: ops.moments(t, 1)[1], x, (4, 6)),
        grad_case("softmax", lambda t: ops.softmax(t, 1), x, x.shape),
        grad_case("log_softmax", ops.log_softmax, x, x.shape),
        grad_case("cumsum", lambda t: ops.cumsum(t, 1, True, False), x, x.shape),
        grad_case("cumprod", lambda t: ops.cumprod(t, 1, False, True), x + 3.0, x.shape, rtol=1e-4),
        grad_case("top_k", lambda t: ops.top_k(t, 3)[0], distinct, (4, 5, 3)),
        grad_case("softmax-large", lambda t: ops.softmax(t, 0), rand(LARGE, 63), LARGE, rtol=1e-4, atol=1e-6),
    ]


CASES = _reduction_cases() + _softmax_cases() + _cumsum_cases() + _cumprod_cases() + _top_k_cases() + _gradient_cases()
