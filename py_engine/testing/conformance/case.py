"""A conformance case and the input shapes every family exercises."""

from dataclasses import dataclass, field

import numpy as np

from ...engine import ENGINE


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


def as_gpu(fn):
    """fn with the webgpu backend choosing kernels as on a real GPU; unchanged on numpy.

    Cases wrapped in it check the GPU variants (workgroup memory, tiles) on a CPU adapter too.
    """

    def run(*tensors):
        backend = ENGINE.active()
        on_cpu = getattr(backend, "on_cpu", None)
        if on_cpu is None:
            return fn(*tensors)
        backend.on_cpu = False
        try:
            return fn(*tensors)
        finally:
            backend.on_cpu = on_cpu

    return run
