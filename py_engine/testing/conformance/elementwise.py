"""Conformance cases: elementwise ops, cast, clip, where, fill, one_hot, broadcast_to."""

import numpy as np

from ... import ops
from .case import BROADCAST_PAIRS, SHAPES, Case, rand

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
    "sin": ((-4, 4), False),
    "cos": ((-4, 4), False),
    "floor": ((-3, 3), False),
    "ceil": ((-3, 3), False),
    "round": ((-3, 3), False),
    "sign": ((-3, 3), True),
    "is_nan": ((-3, 3), True),
}
# Special values where numpy's result is the definition (not every op is defined for inf/nan here).
UNARY_SPECIAL = [
    "neg",
    "abs",
    "exp",
    "sqrt",
    "square",
    "relu",
    "relu6",
    "sigmoid",
    "tanh",
    "floor",
    "ceil",
    "round",
    "sign",
    "is_nan",
    "softplus",
]

BINARY = ["add", "sub", "mul", "div", "floor_div", "mod", "pow", "maximum", "minimum", "squared_difference"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


# WGSL only promises sin and cos to an absolute error of 2^-11 (about 5e-4) on [-pi, pi], and
# SwiftShader's are that coarse (1e-4 seen); every other op is held to float32 rounding.
ATOL = {"sin": 1e-3, "cos": 1e-3}


def _cases():
    cases = []
    for name, ((lo, hi), ints) in UNARY.items():
        fn = getattr(ops, name)
        for label, shape in SHAPES.items():
            cases.append(Case(f"{name}/{label}", fn, [rand(shape, 1, lo, hi)], rtol=2e-5, atol=ATOL.get(name, 2e-6)))
        if ints:
            cases.append(Case(f"{name}/int32", fn, [rand((7, 9), 2, -9, 9, np.int32)]))
    for name in UNARY_SPECIAL:
        cases.append(Case(f"{name}/special-values", getattr(ops, name), [SPECIAL], rtol=2e-5, atol=2e-6))
    cases.append(Case("round/halves", ops.round, [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)]))
    cases.append(Case("logical_not/bool", ops.logical_not, [rand((5, 7), 3, dtype=bool)]))

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
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, 2.0, -3.0], np.float32)
    for name in ["add", "mul", "div", "maximum", "minimum", "pow", "mod", "floor_div"]:
        a, b = specials.reshape(6, 1), specials.reshape(1, 6)
        cases.append(Case(f"{name}/special-values", getattr(ops, name), [a, b], rtol=1e-4, atol=1e-6))
    for name in COMPARE:
        fn = getattr(ops, name)
        cases.append(Case(f"{name}/broadcast", fn, [rand((4, 5), 8, -2, 2, np.int32), rand((5,), 9, -2, 2, np.int32)]))
        cases.append(Case(f"{name}/float-nan", fn, [SPECIAL.reshape(-1, 1), SPECIAL.reshape(1, -1)]))
    cases.append(Case("equal/bool", ops.equal, [rand((9,), 10, dtype=bool), rand((9,), 11, dtype=bool)]))
    for name in ["logical_and", "logical_or"]:
        cases.append(
            Case(f"{name}/broadcast", getattr(ops, name), [rand((3, 4), 12, dtype=bool), rand((4,), 13, dtype=bool)])
        )

    cond, a, b = rand((2, 3, 4), 14, dtype=bool), rand((3, 1), 15), rand((4,), 16)
    cases.append(Case("where/broadcast3", ops.where, [cond, a, b]))
    cases.append(
        Case("where/int32", ops.where, [cond, rand((2, 3, 4), 17, -9, 9, np.int32), rand((4,), 18, -9, 9, np.int32)])
    )
    for src in (np.float32, np.int32, bool):
        for dst in ("float32", "int32", "bool"):
            x = rand((5, 6), 19, -4, 4, src) if src is not bool else rand((5, 6), 19, dtype=bool)
            cases.append(Case(f"cast/{np.dtype(src).name}-to-{dst}", lambda t, dst=dst: ops.cast(t, dst), [x]))
    cases.append(Case("clip_by_value/float", lambda t: ops.clip_by_value(t, -0.5, 1.25), [rand((40, 9), 20)]))
    cases.append(Case("clip_by_value/nan", lambda t: ops.clip_by_value(t, -0.5, 1.25), [SPECIAL]))
    cases.append(Case("clip_by_value/int32", lambda t: ops.clip_by_value(t, -2, 3), [rand((9,), 21, -9, 9, np.int32)]))
    cases.append(Case("leaky_relu/odd", lambda t: ops.leaky_relu(t, 0.1), [rand((3, 5, 7), 22)]))
    cases.append(Case("fill/float", lambda: ops.fill((3, 70), 2.5)))
    cases.append(Case("fill/int32-empty", lambda: ops.fill((0, 4), 7, "int32")))
    cases.append(Case("fill/bool", lambda: ops.fill((5,), True, "bool")))
    cases.append(Case("zeros_like/int32", ops.zeros_like, [rand((4, 4), 23, -3, 3, np.int32)]))
    cases.append(Case("one_hot/float", lambda i: ops.one_hot(i, 5), [np.array([[0, 4], [2, 9]], np.int32)]))
    cases.append(
        Case("one_hot/int32-on-off", lambda i: ops.one_hot(i, 3, 7, -1, "int32"), [np.array([2, -1, 0], np.int32)])
    )
    cases.append(Case("broadcast_to/rank3", lambda t: ops.broadcast_to(t, (4, 3, 5)), [rand((3, 1), 24)]))
    return cases


CASES = _cases()
