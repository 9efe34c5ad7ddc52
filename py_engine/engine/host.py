"""User values (numbers, bools, nested lists, numpy arrays) as fresh numpy arrays of an engine dtype."""

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError

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
