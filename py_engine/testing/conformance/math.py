"""Conformance cases: elementwise ops, cast, clip, where, fused elementwise rules, and the activations' and clip's
gradients (ActivationGrad, ClipByValueGrad)."""

import numpy as np

from ... import ops
from ...autograd import grads
from ...ops import elementwise_rules
from .case import BROADCAST_PAIRS, FLOAT_EDGES, INT_EDGES, SHAPES, Case, rand, with_edges

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-7, 80.0, -80.0], np.float32)

# op -> (input range, also run on int32?)
UNARY = {
    "neg": ((-3, 3), True),
    "abs": ((-3, 3), True),
    "exp": ((-3, 3), False),
    "log": ((0.01, 5), False),
    "log1p": ((-0.9, 5), False),
    "sqrt": ((0, 5), False),
    "rsqrt": ((0.1, 5), False),
    "square": ((-3, 3), True),
    "reciprocal": ((0.5, 5), False),
    "relu": ((-3, 3), True),
    "relu6": ((-8, 8), True),
    "elu": ((-3, 3), False),
    "sigmoid": ((-10, 10), False),
    "tanh": ((-10, 10), False),
    "softplus": ((-10, 10), False),
    "erf": ((-5, 5), False),
    "sin": ((-4, 4), False),
    "cos": ((-4, 4), False),
    "floor": ((-3, 3), False),
    "ceil": ((-3, 3), False),
    "round": ((-3, 3), False),
    "sign": ((-3, 3), True),
    "is_nan": ((-3, 3), True),
    "is_inf": ((-3, 3), True),
    "is_finite": ((-3, 3), True),
    "tan": ((-1.4, 1.4), False),
    "asin": ((-1, 1), False),
    "acos": ((-1, 1), False),
    "atan": ((-10, 10), False),
    "sinh": ((-5, 5), False),
    "cosh": ((-5, 5), False),
    "asinh": ((-10, 10), False),
    "acosh": ((1, 10), False),
    "atanh": ((-1, 1), False),
    "expm1": ((-3, 3), False),
    "selu": ((-3, 3), False),
}
# Edge values for each op: NaN, the infinities and signed zeros wherever numpy's result is the definition. WGSL
# only promises sin and cos on [-pi, pi] (below), so theirs stay there, with NaN, the infinities and zeros.
TRIG_EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -3.0], np.float32)
UNARY_EDGES = {name: TRIG_EDGES if name in ("sin", "cos", "tan") else SPECIAL for name in UNARY}

BINARY = ["add", "sub", "mul", "div", "floor_div", "mod", "pow", "maximum", "minimum", "squared_difference"]
BINARY += ["prelu", "atan2", "div_no_nan"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


# WGSL only promises sin and cos to an absolute error of 2^-11 (about 5e-4) on [-pi, pi], and
# SwiftShader's are that coarse (1e-4 seen); every other op is held to float32 rounding.
ATOL = {"sin": 1e-3, "cos": 1e-3, "tan": 1e-3}


def _cases():
    cases = []
    for name, ((lo, hi), ints) in UNARY.items():
        fn = getattr(ops, name)
        for label, shape in SHAPES.items():
            cases.append(Case(f"{name}/{label}", fn, [rand(shape, 1, lo, hi)], rtol=2e-5, atol=ATOL.get(name, 2e-6)))
        if ints:
            cases.append(Case(f"{name}/int32", fn, [rand((7, 9), 2, -9, 9, np.int32)]))
        if ints:  # the int32 extremes too: abs, neg and square wrap around as numpy's int32 does
            cases.append(Case(f"{name}/int32-edges", fn, [with_edges(rand((70, 3), 2, -9, 9, np.int32), INT_EDGES)]))
    for name, edges in UNARY_EDGES.items():
        atol = ATOL.get(name, 2e-6)
        cases.append(Case(f"{name}/special-values", getattr(ops, name), [edges], rtol=2e-5, atol=atol))
        large = with_edges(rand((300, 257), 3, *UNARY[name][0]), edges)
        cases.append(Case(f"{name}/special-values-large", getattr(ops, name), [large], rtol=2e-5, atol=atol))
    # the wasm module's own ln: next to 1 (ln near 0), across the normal exponents (a GPU flushes subnormals: those
    # are test_wasm_backend's), sqrt(1/2)'s neighbours
    spread = np.concatenate(
        [1 + rand((64,), 12, -1e-3, 1e-3), np.exp(rand((64,), 13, -87, 88)), [0.70710677, 0.7071068]]
    )
    cases.append(Case("log/across-exponents", ops.log, [spread.astype(np.float32)], rtol=2e-5, atol=2e-6))
    cases.append(Case("round/halves", ops.round, [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)]))
    for label, shape in SHAPES.items():
        cases.append(Case(f"logical_not/{label}", ops.logical_not, [rand(shape, 3, dtype=bool)]))

    for name in BINARY:
        fn = getattr(ops, name)
        for label, (sa, sb) in BROADCAST_PAIRS.items():
            a, b = rand(sa, 4), rand(sb, 5)
            if name in ("div", "floor_div", "mod"):
                b = np.where(np.abs(b) < 0.25, 0.5, b).astype(np.float32)
            if name == "pow":
                a = np.abs(a) + 0.1
            cases.append(Case(f"{name}/{label}", fn, [a, b], rtol=1e-4 if name == "pow" else 2e-5, atol=1e-5))
        ia, ib = rand((6, 7), 6, -20, 20, np.int32), rand((7,), 7, -5, 5, np.int32)
        if name == "pow":
            ia, ib = rand((6, 7), 6, -4, 4, np.int32), rand((7,), 7, -2, 5, np.int32)
        cases.append(Case(f"{name}/int32", fn, [ia, ib]))  # integer division by zero gives 0, as numpy
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5], np.float32)
    for name in BINARY:  # every pair of edge values, both ways round
        a, b = specials.reshape(-1, 1), specials.reshape(1, -1)
        cases.append(Case(f"{name}/special-values", getattr(ops, name), [a, b], rtol=1e-4, atol=1e-6))
        large = with_edges(rand((300, 257), 25, 0.5, 3), specials), with_edges(rand((257,), 26, 0.5, 3), specials, 1)
        cases.append(Case(f"{name}/special-values-large", getattr(ops, name), list(large), rtol=1e-4, atol=1e-5))
    int_edges = np.array([0, 1, -1, 3, -3, 2**31 - 1, -(2**31)], np.int32)
    for name in ["add", "sub", "mul", "floor_div", "mod", "maximum", "minimum"]:  # int32 wraps as numpy's does
        cases.append(Case(f"{name}/int32-edges", getattr(ops, name), [int_edges.reshape(-1, 1), int_edges]))
    for name in COMPARE:
        fn = getattr(ops, name)
        cases.append(Case(f"{name}/broadcast", fn, [rand((4, 5), 8, -2, 2, np.int32), rand((5,), 9, -2, 2, np.int32)]))
        cases.append(Case(f"{name}/float-nan", fn, [SPECIAL.reshape(-1, 1), SPECIAL.reshape(1, -1)]))
        cases.append(Case(f"{name}/int32-edges", fn, [INT_EDGES.reshape(-1, 1), INT_EDGES]))
        for label, (sa, sb) in BROADCAST_PAIRS.items():
            a, b = with_edges(rand(sa, 27, -2, 2), SPECIAL), with_edges(rand(sb, 28, -2, 2), SPECIAL, 1)
            cases.append(Case(f"{name}/{label}", fn, [np.round(a), np.round(b)]))  # whole numbers: many equal pairs
    cases.append(Case("bitwise_and/int32-edges", ops.bitwise_and, [INT_EDGES.reshape(-1, 1), INT_EDGES]))
    cases.append(
        Case(
            "bitwise_and/large",
            ops.bitwise_and,
            [rand((300, 257), 47, -1000, 1000, np.int32), rand((257,), 48, 0, 64, np.int32)],
        )
    )
    both = np.array([False, True])
    for name in ["equal", "not_equal", "logical_and", "logical_or"]:
        fn = getattr(ops, name)
        cases.append(Case(f"{name}/truth-table", fn, [both.reshape(2, 1), both]))
        for label, (sa, sb) in BROADCAST_PAIRS.items():
            cases.append(Case(f"{name}/bool-{label}", fn, [rand(sa, 10, dtype=bool), rand(sb, 11, dtype=bool)]))

    _number_operand_cases(cases, specials)

    cond, a, b = rand((2, 3, 4), 14, dtype=bool), rand((3, 1), 15), rand((4,), 16)
    cases.append(Case("where/broadcast3", ops.where, [cond, a, b]))
    cases.append(
        Case("where/int32", ops.where, [cond, rand((2, 3, 4), 17, -9, 9, np.int32), rand((4,), 18, -9, 9, np.int32)])
    )
    cases.append(Case("where/special-values", ops.where, [rand(SPECIAL.shape, 14, dtype=bool), SPECIAL, SPECIAL[::-1]]))
    for label, (sa, sb) in BROADCAST_PAIRS.items():
        picks = [rand(sa, 29, dtype=bool), with_edges(rand(sa, 30), SPECIAL), with_edges(rand(sb, 31), SPECIAL, 1)]
        cases.append(Case(f"where/{label}", ops.where, picks))
        cases.append(Case(f"where/cond-{label}", ops.where, [rand(sb, 32, dtype=bool), rand(sa, 33), rand(sb, 34)]))
    _cast_cases(cases)
    cases.append(Case("clip_by_value/float", lambda t: ops.clip_by_value(t, -0.5, 1.25), [rand((40, 9), 20)]))
    cases.append(Case("clip_by_value/nan", lambda t: ops.clip_by_value(t, -0.5, 1.25), [SPECIAL]))
    cases.append(Case("clip_by_value/int32", lambda t: ops.clip_by_value(t, -2, 3), [rand((9,), 21, -9, 9, np.int32)]))
    cases.append(Case("clip_by_value/int32-edges", lambda t: ops.clip_by_value(t, -(2**31), 5), [INT_EDGES]))
    cases.append(Case("clip_by_value/equal-bounds", lambda t: ops.clip_by_value(t, 0.5, 0.5), [SPECIAL]))
    for label, shape in SHAPES.items():
        x = with_edges(rand(shape, 20), FLOAT_EDGES)
        cases.append(Case(f"clip_by_value/{label}", lambda t: ops.clip_by_value(t, -0.5, 1.25), [x]))
        cases.append(Case(f"leaky_relu/{label}", lambda t: ops.leaky_relu(t, 0.1), [x]))
    _gradient_cases(cases)
    cases.append(Case("leaky_relu/alpha-above-one", lambda t: ops.leaky_relu(t, 1.5), [FLOAT_EDGES]))
    cases.append(Case("leaky_relu/alpha-zero", lambda t: ops.leaky_relu(t, 0.0), [FLOAT_EDGES]))
    _fused_cases(cases)
    return cases


def _every_step(x, y, s):
    """A rule that runs every step kernel ops.elementwise_rules allows; its last output comes from the scalar alone."""
    a = x + y * s
    b = elementwise_rules.maximum(x - y, elementwise_rules.minimum(x, y)) / s
    c = elementwise_rules.relu6(x) - elementwise_rules.relu(y)
    return a, elementwise_rules.sqrt(elementwise_rules.abs(-a)) + elementwise_rules.square(b), s * s, c


def _fused_cases(cases):
    """fuse_elementwise: every step kernel, several outputs, a scalar, at every size and on the edge values."""
    fused = lambda x, y, s: elementwise_rules.fuse_elementwise(_every_step, [x, y], s)  # noqa: E731
    for label, shape in SHAPES.items():
        x, y = with_edges(rand(shape, 60), FLOAT_EDGES), rand(shape, 61, 0.5, 3)
        cases.append(Case(f"fuse_elementwise/{label}", fused, [x, y, np.array([1.5], np.float32)]))
    edges = np.resize(FLOAT_EDGES, (len(FLOAT_EDGES), len(FLOAT_EDGES)))
    cases.append(Case("fuse_elementwise/special-values", fused, [edges, edges.T.copy(), np.array([-0.0], np.float32)]))


def _gradient_cases(cases):
    """d/dx of sum(f(x) * w), where w gives every element its own dy: edge values (NaN, the infinities, signed zeros,
    relu6's 0 and 6, clip's bounds) in x, and in dy too (NaN * 0 stays NaN, as the derivative written in ops gives)."""
    x = with_edges(rand((5, 70), 40, -8, 8), np.concatenate([FLOAT_EDGES, [6.0, -0.5, 1.25]]).astype(np.float32))
    w = with_edges(rand((5, 70), 41), FLOAT_EDGES, 1)
    for name, op in [(name, getattr(ops, name)) for name in ("relu", "relu6", "elu", "sigmoid", "tanh")]:
        fn = grads(lambda t, w, op=op: (op(t) * w).sum())
        # computed from the activation's output: its own error (forward cases: rtol 2e-5) grows in 1 - y * y
        close = {} if name.startswith("relu") else {"rtol": 1e-4, "atol": 1e-4}
        cases.append(Case(f"{name}/grad", lambda t, w, fn=fn: fn(t, w)[0], [x, w], **close))
    clip = grads(lambda t, w: (ops.clip_by_value(t, -0.5, 1.25) * w).sum())
    cases.append(Case("clip_by_value/grad", lambda t, w: clip(t, w)[0], [x, w]))
    for name in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "selu"):
        lo, hi = UNARY[name][0]
        inside = rand((5, 70), 42, lo + 0.01, hi - 0.01)  # away from the ends, where the derivative is infinite
        op = getattr(ops, name)
        fn = grads(lambda t, w, op=op: (op(t) * w).sum())
        rtol = 1e-3 if name == "tan" else 1e-4  # 1 + tan^2 grows the forward's error (SwiftShader's tan: 1.4e-4)
        cases.append(Case(f"{name}/grad", lambda t, w, fn=fn: fn(t, w)[0], [inside, rand((5, 70), 43)], rtol, 1e-4))
    for name in ("prelu", "atan2", "div_no_nan"):
        op = getattr(ops, name)
        fn = grads(lambda a, b, w, op=op: (op(a, b) * w).sum())
        a, b = rand((5, 70), 44), rand((70,), 45)
        b[::7] = 0.0  # div_no_nan's zeros
        cases.append(Case(f"{name}/grad", lambda a, b, w, fn=fn: fn(a, b, w), [a, b, rand((5, 70), 46)], 1e-4, 1e-4))


def _number_operand_cases(cases, specials):
    """A Python number as either operand (`x * 2.0`, `1 - x`): on webgpu it is a uniform, not an uploaded tensor."""
    for name in [*BINARY, *COMPARE]:
        fn = getattr(ops, name)
        for number in [2.0, -0.0, 0.5, float("nan"), float("inf"), -3.0]:
            right, left = (lambda t, n=number, f=fn: f(t, n)), (lambda t, n=number, f=fn: f(n, t))
            cases.append(Case(f"{name}/number-{number}-right", right, [specials], rtol=1e-4, atol=1e-6))
            cases.append(Case(f"{name}/number-{number}-left", left, [specials], rtol=1e-4, atol=1e-6))
        ints = rand((3, 5), 35, -9, 9, np.int32)
        cases.append(Case(f"{name}/number-int", lambda t, f=fn: f(t, 3), [ints]))
        cases.append(Case(f"{name}/number-int-left", lambda t, f=fn: f(-4, t), [ints]))
    mask = rand((4, 3), 36, dtype=bool)
    for name in ["logical_and", "logical_or", "equal", "not_equal"]:
        fn = getattr(ops, name)
        cases.append(Case(f"{name}/number-bool", lambda t, f=fn: (f(t, True), f(False, t)), [mask]))
    cases.append(Case("where/numbers", lambda c, x: ops.where(c, x, 0.0), [mask, rand((4, 3), 37)]))
    cases.append(Case("mul/number-upcast", lambda t: t * 1.5, [rand((4,), 38, -9, 9, np.int32)]))


def _cast_cases(cases):
    """Every pair of dtypes, on the edge values each source allows, at every size."""
    float_to_int = np.array([0.0, -0.0, 0.5, -0.5, 2.9, -2.9, 1e-7, 16777217.0, -1e9, 2e9], np.float32)
    edges = {
        # NaN, the infinities and values past int32 have no int32 (numpy warns and gives INT_MIN)
        ("float32", "int32"): float_to_int,
        ("float32", "float32"): FLOAT_EDGES,
        ("float32", "bool"): FLOAT_EDGES,  # only 0 and -0 are False; NaN is True
        ("int32", "float32"): INT_EDGES,
        ("int32", "int32"): INT_EDGES,
        ("int32", "bool"): INT_EDGES,
    }
    for src in ("float32", "int32", "bool"):
        for dst in ("float32", "int32", "bool"):
            fn = lambda t, dst=dst: ops.cast(t, dst)  # noqa: E731
            name = f"cast/{src}-to-{dst}"
            x = rand((5, 6), 19, -4, 4, src) if src != "bool" else rand((5, 6), 19, dtype=bool)
            cases.append(Case(name, fn, [x]))
            values = edges.get((src, dst), np.array([False, True]))
            cases.append(Case(f"{name}-edges", fn, [values]))
            for label, shape in SHAPES.items():
                base = rand(shape, 36, -4, 4, src) if src != "bool" else rand(shape, 36, dtype=bool)
                cases.append(Case(f"{name}-{label}", fn, [with_edges(base, values)]))


CASES = _cases()
