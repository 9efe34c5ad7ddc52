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


# Edge values: signed zeros, NaN, the infinities, and ordinary values next to them. Denormals are left
# out: WGSL on SwiftShader and llvmpipe may flush them to zero, which exact (bool, int) results would see.
FLOAT_EDGES = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-7, -1e-7, 80.0, -80.0], np.float32
)
INT_EDGES = np.array([0, 1, -1, 7, -7, 2**30, -(2**30), 2**31 - 1, -(2**31)], np.int32)


def with_edges(array, values, seed=0):
    """A copy of `array` with `values` written at spread-out positions: every value (three times where there is
    room), so a large array meets them past its first workgroup too."""
    out = np.array(array, copy=True)
    flat = out.reshape(-1)
    if flat.size:
        positions = np.random.default_rng(seed).choice(flat.size, min(flat.size, 3 * len(values)), replace=False)
        flat[positions] = np.resize(values, positions.size)
    return out


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
    "row-values": ((6, 7), (6, 1)),  # one value per row: a probability divided by its row's sum
    "row-values-lhs": ((5, 1), (5, 9)),
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
