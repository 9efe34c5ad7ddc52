"""Turning user values into tensors, dtype promotion, and the shared input checks of ops."""

import numbers

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..engine.host import host_array
from ..errors import ShapeError
from ..tensor import Tensor

PYTHON_NUMBERS = (float, int, bool)


def tensor(values, dtype=None, shape=None) -> Tensor:
    """A new tensor holding a copy of `values`, optionally reshaped to `shape`."""
    if isinstance(values, Tensor):
        arr, dtype = host_array(values.numpy(), dtype or values.dtype)
    else:
        arr, dtype = host_array(values, dtype)
    if shape is not None:
        shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
        try:
            arr = arr.reshape(shape)
        except ValueError:
            raise ShapeError(f"tensor: {arr.size} values cannot fill shape {shape}") from None
    return ENGINE.from_numpy(arr, dtype)


def scalar(value, dtype=None) -> Tensor:
    if np.ndim(value) != 0:
        raise ShapeError(f"scalar: expected a single number, got a value of shape {np.shape(value)}")
    return tensor(value, dtype)


def cast(x, dtype):
    dtype = dtypes.normalize(dtype, "cast")
    if x.dtype == dtype:
        return ENGINE.view(x, x.shape)
    return ENGINE.run_kernel("Cast", (x,), {"dtype": dtype})


def _number_dtype(x, other):
    """A Python number takes the other operand's dtype unless that would lose information."""
    if isinstance(x, (bool, np.bool_)):
        return other
    if isinstance(x, numbers.Integral):
        return dtypes.int32 if other == dtypes.bool_ else other
    return dtypes.float32


def binary_operands(op, a, b):
    """(a, b, temporaries): two tensors of one dtype, converting other values and upcasting as needed."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype == b.dtype:
        return a, b, []
    temps = []
    if isinstance(a, Tensor) and _is_number(b):
        b = _number_temporary(b, op, temps, _number_dtype(b, a.dtype))
    elif isinstance(b, Tensor) and _is_number(a):
        a = _number_temporary(a, op, temps, _number_dtype(a, b.dtype))
    else:
        a, b = as_temporary(a, op, temps), as_temporary(b, op, temps)
    if a.dtype != b.dtype:
        dt = dtypes.upcast(a.dtype, b.dtype)
        a, b = as_temporary(a, op, temps, dt), as_temporary(b, op, temps, dt)
    return a, b, temps


def _is_number(x):
    return type(x) in PYTHON_NUMBERS or isinstance(x, numbers.Number)  # the abstract check costs ~5x the type test


def _number_temporary(x, op, temps, dtype):
    """A Python number as a one-element tensor for one op (on a GPU backend it may stay on the host: a uniform)."""
    t = ENGINE.from_number(*host_array(x, dtype, op))
    temps.append(t)
    return t


def as_temporary(x, op, temps, dtype=None):
    """x as a tensor of `dtype` (default: its own); a tensor made here is appended to `temps`."""
    if isinstance(x, Tensor):
        if dtype is None or x.dtype == dtype:
            return x
        t = cast(x, dtype)
    else:
        t = ENGINE.from_numpy(*host_array(x, dtype, op))
    temps.append(t)
    return t


def release(temps):
    for t in temps:
        ENGINE.dispose_tensor(t)


def run(name, inputs, attrs=None, temps=()):
    """Run a kernel, then release the temporaries the op made from non-tensor arguments."""
    try:
        return ENGINE.run_kernel(name, inputs, attrs)
    finally:
        release(temps)
