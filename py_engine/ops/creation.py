"""Tensors made from values, constants, ranges and random numbers (seedable)."""

__all__ = [
    "arange",
    "eye",
    "fill",
    "linspace",
    "one_hot",
    "ones",
    "ones_like",
    "random_normal",
    "random_uniform",
    "scalar",
    "set_seed",
    "tensor",
    "truncated_normal",
    "zeros",
    "zeros_like",
]

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .operands import as_temporary, host_array, release, run, scalar, tensor


def _shape(op, shape):
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ShapeError(f"{op}: shape {shape} has a negative dimension")
    return shape


def _number(op, value, dtype, name="value"):
    """(value as a plain Python number of `dtype`, dtype); dtype None: the value's own."""
    arr, dtype = host_array(value, dtype, op)
    if arr.ndim:
        raise ShapeError(f"{op}: {name} must be a single number, got a value of shape {arr.shape}")
    return arr.item(), dtype


def fill(shape, value, dtype=None) -> Tensor:
    """A tensor of `shape` with every element `value` (dtype: the value's own unless given)."""
    shape = _shape("fill", shape)
    value, dtype = _number("fill", value, dtype)
    return run("Fill", (), {"shape": shape, "value": value, "dtype": dtype})


def zeros(shape, dtype=dtypes.float32) -> Tensor:
    return fill(shape, 0, dtype)


def ones(shape, dtype=dtypes.float32) -> Tensor:
    return fill(shape, 1, dtype)


def _like(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x.shape, x.dtype


def zeros_like(x, dtype=None) -> Tensor:
    shape, own = _like("zeros_like", x)
    return fill(shape, 0, dtype or own)


def ones_like(x, dtype=None) -> Tensor:
    shape, own = _like("ones_like", x)
    return fill(shape, 1, dtype or own)


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """Like numpy.arange; float32 when any argument is a float, else int32."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    arr = np.arange(start, stop, step)
    return ENGINE.from_numpy(*host_array(arr, dtype, "arange"))


def linspace(start, stop, num) -> Tensor:
    if int(num) < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    return ENGINE.from_numpy(*host_array(np.linspace(start, stop, int(num)), dtypes.float32, "linspace"))


def eye(num_rows, num_columns=None, dtype=dtypes.float32) -> Tensor:
    if num_rows < 0 or (num_columns is not None and num_columns < 0):
        raise ShapeError(f"eye: sizes must be >= 0, got {num_rows} x {num_columns}")
    return ENGINE.from_numpy(*host_array(np.eye(num_rows, num_columns), dtype, "eye"))


def one_hot(indices, depth, on_value=1, off_value=0, dtype=dtypes.float32) -> Tensor:
    """indices (int32) -> a tensor with a new last axis of size `depth`; out-of-range indices give all off."""
    dtype = dtypes.normalize(dtype, "one_hot")
    on_value = _number("one_hot", on_value, dtype, "on_value")[0]
    off_value = _number("one_hot", off_value, dtype, "off_value")[0]
    if int(depth) < 0:
        raise ValueError(f"one_hot: depth must be >= 0, got {depth}")
    temps = []
    indices = as_temporary(indices, "one_hot", temps)
    if indices.dtype != dtypes.int32:
        release(temps)
        raise DTypeError(f"one_hot: indices must be int32, got {indices.dtype}")
    attrs = {"depth": int(depth), "on_value": on_value, "off_value": off_value, "dtype": dtype}
    return run("OneHot", (indices,), attrs, temps)


# ---- random -------------------------------------------------------------------------------------

# Made on first use: numpy.random loads eight compiled modules (about 50 ms of a page's start in Pyodide)
_rng = None


def set_seed(seed) -> None:
    """One global seed, like Keras's set_random_seed: the generator that random ops, weight initializers, dropout and
    fit's shuffles use when they get no seed of their own starts again from `seed` (an int >= 0; None: from the OS),
    so a program that calls it first gives the same weights, masks and batches on every run."""
    global _rng
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"set_seed: seed must be an int >= 0 or None, got {seed!r}")
    _rng = np.random.default_rng(seed)


def random_generator(seed):
    """The numpy generator for a seed: pe.set_seed's shared one when seed is None."""
    global _rng
    if seed is not None:
        return np.random.default_rng(seed)
    if _rng is None:
        _rng = np.random.default_rng()
    return _rng


def _random(op, shape, dtype, draw, allowed=(dtypes.float32,)):
    shape = _shape(op, shape)
    dtype = dtypes.normalize(dtype, op)
    if dtype not in allowed:
        raise DTypeError(f"{op}: dtype {dtype} is not supported, expected {' or '.join(allowed)}")
    # a fresh value: a captured function (pe.capture, e.g. a training step with dropout) draws anew per replay
    return ENGINE.fresh_tensors(lambda: [host_array(draw(shape), dtype, op)[0]])[0]


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None) -> Tensor:
    return _random("random_normal", shape, dtype, lambda s: random_generator(seed).normal(mean, stddev, s))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=dtypes.float32, seed=None) -> Tensor:
    """Values in [minval, maxval); integers when dtype is int32."""
    if maxval <= minval:
        raise ValueError(f"random_uniform: maxval {maxval} must be greater than minval {minval}")

    def draw(s):
        rng = random_generator(seed)
        if dtypes.normalize(dtype) == dtypes.int32:
            return rng.integers(minval, maxval, s)
        x = (minval + (maxval - minval) * rng.random(s)).astype(np.float32)
        return np.minimum(x, np.nextafter(np.float32(maxval), np.float32(minval)))  # rounding must not reach maxval

    return _random("random_uniform", shape, dtype, draw, (dtypes.float32, dtypes.int32))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None) -> Tensor:
    """Normal values, redrawn until each lies within two standard deviations of the mean."""

    def draw(s):
        rng = random_generator(seed)
        x = rng.standard_normal(s)
        bad = np.abs(x) > 2
        while bad.any():
            x[bad] = rng.standard_normal(int(bad.sum()))
            bad = np.abs(x) > 2
        return mean + stddev * x

    return _random("truncated_normal", shape, dtype, draw)
