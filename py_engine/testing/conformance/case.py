"""A conformance case and the input shapes every family exercises."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    id: str  # unique, e.g. "add/broadcast-row"
    fn: object  # fn(*tensors) -> tensor or tuple of tensors
    inputs: list = field(default_factory=list)  # numpy arrays (their dtypes pick the tensor dtypes)
    rtol: float = 1e-5
    atol: float = 1e-6


def rand(shape, seed, low=-2.0, high=2.0, dtype=np.float32):
    """Deterministic inputs: uniform floats, or ints in [low, high)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(int(low), int(high), shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    return rng.uniform(low, high, shape).astype(dtype)


# Shapes that every elementwise-like family covers: scalars, size 1 and 0, sizes that are not
# multiples of the workgroup size (64), and inputs large enough for many workgroups.
SHAPES = {
    "scalar": (),
    "one": (1,),
    "empty": (0, 3),
    "odd": (3, 5, 7),
    "large": (300, 257),
}
# Pairs of shapes that broadcast against each other.
BROADCAST_PAIRS = {
    "row": ((4, 5), (5,)),
    "column": ((4, 1), (1, 6)),
    "scalar-lhs": ((), (3, 4)),
    "rank3": ((2, 1, 5), (3, 1)),
    "size0": ((0, 4), (1, 4)),
    "large": ((513, 130), (130,)),
}
