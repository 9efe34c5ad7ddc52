"""The three dtypes a tensor can have, and how they combine (bool < int32 < float32)."""

import numpy as np

from .errors import DTypeError

float32, int32, bool_ = "float32", "int32", "bool"
DTYPES = (float32, int32, bool_)
NUMPY = {float32: np.dtype(np.float32), int32: np.dtype(np.int32), bool_: np.dtype(np.bool_)}
ITEMSIZE = {float32: 4, int32: 4, bool_: 1}
_RANK = {bool_: 0, int32: 1, float32: 2}
_BY_KIND = {"f": float32, "i": int32, "u": int32, "b": bool_}


def normalize(dtype, op="tensor"):
    """Accept 'float32', 'int32', 'bool', their numpy dtypes, float, int, bool and None; return one of DTYPES.

    Any other dtype (float64, float16, int64, uint8, ...) is refused, as TensorFlow.js refuses it ("Unknown data
    type"): a tensor asked for in float64 and silently made float32 would compute in a precision nobody asked for.
    Values are another matter: numpy float64 and int64 arrays given as data are stored as float32 and int32, as
    TF.js stores JavaScript's float64 numbers as float32.
    """
    if dtype in _RANK:
        return dtype
    if dtype is float or dtype is None:  # None: the default, as TF.js's undefined
        return float32
    if dtype is int:
        return int32
    if dtype is bool:
        return bool_
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    for name, supported in NUMPY.items():
        if np_dtype == supported:
            return name
    shown = np_dtype.name if np_dtype is not None and not isinstance(dtype, str) else dtype
    closest = _BY_KIND.get(np_dtype.kind, float32) if np_dtype is not None else float32
    raise DTypeError(
        f"{op}: unsupported dtype {shown!r}; a tensor is float32, int32 or bool, as in TensorFlow.js (which has no "
        f"float64, float16 or int64 either): pass dtype={closest!r} (numpy float64 or int64 data given without a "
        "dtype is stored as float32 or int32)"
    )


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


def widen_float16(values):
    """A float16 array's values as float32 (every half is one exactly): numpy's astype. TF.js's float16-quantized
    weights are widened here as a model loads; the wasm backend puts its module's SIMD pass in its place, which gives
    the same bits (backends/wasm/kernels/math.py), where numpy in Pyodide converts one value at a time."""
    return values.astype(np.float32)
