"""The three dtypes a tensor can have, and how they combine (bool < int32 < float32)."""

import numpy as np

float32, int32, bool_ = "float32", "int32", "bool"
DTYPES = (float32, int32, bool_)
NUMPY = {float32: np.dtype(np.float32), int32: np.dtype(np.int32), bool_: np.dtype(np.bool_)}
ITEMSIZE = {float32: 4, int32: 4, bool_: 1}
_RANK = {bool_: 0, int32: 1, float32: 2}
_BY_KIND = {"f": float32, "i": int32, "u": int32, "b": bool_}


def normalize(dtype, op="tensor"):
    """Accept 'float32', np.float32, np.dtype, float, int, bool; return one of DTYPES."""
    if dtype in _RANK:
        return dtype
    if dtype is float:
        return float32
    if dtype is int:
        return int32
    if dtype is bool:
        return bool_
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        kind = None
    if kind in _BY_KIND:
        return _BY_KIND[kind]
    raise TypeError(f"{op}: unsupported dtype {dtype!r}; use one of {', '.join(DTYPES)}")


def of_numpy(np_dtype):
    """The engine dtype a numpy array of this dtype is stored as (float64 -> float32, int64 -> int32)."""
    try:
        return _BY_KIND[np_dtype.kind]
    except KeyError:
        raise TypeError(f"cannot make a tensor from numpy dtype {np_dtype}; use numbers or booleans") from None


def upcast(a, b):
    return a if _RANK[a] >= _RANK[b] else b


def is_float(dtype):
    return dtype == float32
