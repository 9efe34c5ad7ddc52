"""Turning user values into tensors, dtype promotion, and the shared input checks of ops."""

import numbers

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor

_I32 = np.iinfo(np.int32)


def host_array(value, dtype=None, op="tensor"):
    """A fresh numpy array of an engine dtype holding `value` (number, bool, nested list, ndarray)."""
    if dtype is not None:
        dtype = dtypes.normalize(dtype, op)
        if type(value) in (float, int, bool) and not (type(value) is int and not _I32.min <= value <= _I32.max):
            return np.array(value, dtypes.NUMPY[dtype]), dtype  # fast path: `x * 2` makes one of these per op
    try:
        arr = np.array(value, copy=True)
    except ValueError as e:
        raise ShapeError(f"{op}: the nested lists do not form a rectangular array ({e})") from None
    if arr.dtype.kind not in "fiub":
        raise DTypeError(
            f"{op}: cannot make a tensor of {type(value).__name__} values ({arr.dtype}); use numbers or bools"
        )
    out_of_range = arr.dtype.kind in "iu" and arr.size and (arr.max() > _I32.max or arr.min() < _I32.min)
    if out_of_range and dtype != dtypes.float32:
        raise DTypeError(f"{op}: integer values outside the int32 range; pass dtype='float32'")
    target = dtype or dtypes.of_numpy(arr.dtype)
    if target == dtypes.int32 and arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise DTypeError(f"{op}: NaN or infinity cannot be stored as int32; use dtype='float32'")
    return arr.astype(dtypes.NUMPY[target], copy=False), target


def tensor(values, dtype=None, shape=None):
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


def scalar(value, dtype=None):
    if np.ndim(value) != 0:
        raise ShapeError(f"scalar: expected a single number, got a value of shape {np.shape(value)}")
    return tensor(value, dtype)


def as_tensor(value, dtype=None, op="op"):
    """(tensor, is_temporary). Tensors pass through (cast if `dtype` differs); other values are converted."""
    if isinstance(value, Tensor):
        if dtype is None or dtypes.normalize(dtype, op) == value.dtype:
            return value, False
        return cast(value, dtype), True
    arr, dt = host_array(value, dtype, op)
    return ENGINE.from_numpy(arr, dt), True


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
    if isinstance(a, Tensor) and isinstance(b, numbers.Number):
        b = as_temporary(b, op, temps, _number_dtype(b, a.dtype))
    elif isinstance(b, Tensor) and isinstance(a, numbers.Number):
        a = as_temporary(a, op, temps, _number_dtype(a, b.dtype))
    a, b = as_temporary(a, op, temps), as_temporary(b, op, temps)
    if a.dtype != b.dtype:
        dt = dtypes.upcast(a.dtype, b.dtype)
        a, b = as_temporary(a, op, temps, dt), as_temporary(b, op, temps, dt)
    return a, b, temps


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
