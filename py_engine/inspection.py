"""pe.inspect(t): a tensor's statistics computed where it lives, read back once (TensorFlow.js users print
min/max/mean from dataSync(), which copies the whole tensor to the CPU)."""

from dataclasses import dataclass

import numpy as np

from . import dtypes, ops
from .autograd import stop_recording
from .engine import ENGINE
from .tensor import Tensor

_SPLIT = 65536  # an int32 travels as two float32 halves, each exact (a float32 holds integers up to 2**24)


@dataclass(frozen=True)
class TensorStats:
    """shape, dtype, size; min, max, mean and std (population) over the finite values, None when there are
    none; nan_count and inf_count. Integers and bools give exact int min and max; bools count True as 1."""

    shape: tuple
    dtype: str
    size: int
    min: object
    max: object
    mean: object
    std: object
    nan_count: int
    inf_count: int

    def __repr__(self):
        def show(v):
            return "n/a" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)

        values = " ".join(f"{k}={show(getattr(self, k))}" for k in ("min", "max", "mean", "std"))
        shape = ", ".join(map(str, self.shape))
        return f"<{self.dtype}[{shape}] {values} nan={self.nan_count} inf={self.inf_count}>"

    def to_dict(self):
        return dict(self.__dict__)


def _exact(n):
    """An int32 scalar tensor as two float32 scalars, its high and low 16 bits (both exact)."""
    return [ops.cast(ops.floor_div(n, _SPLIT), dtypes.float32), ops.cast(ops.mod(n, _SPLIT), dtypes.float32)]


def _joined(high, low):
    return int(high) * _SPLIT + int(low)


def _device_stats(x):
    """One float32 vector with everything inspect reports; see _decode for its layout."""
    if x.dtype == dtypes.float32:
        finite = ops.less(ops.abs(x), float("inf"))  # NaN is not less than anything
        count = ops.sum(finite)
        divisor = ops.maximum(ops.cast(count, dtypes.float32), 1.0)
        average = ops.sum(ops.where(finite, x, 0.0)) / divisor
        spread = ops.sqrt(ops.sum(ops.where(finite, ops.square(x - average), 0.0)) / divisor)
        low = ops.min(ops.where(finite, x, float("inf")))
        high = ops.max(ops.where(finite, x, float("-inf")))
        parts = [low, high, average, spread, *_exact(count), *_exact(ops.sum(ops.not_equal(x, x)))]
    else:
        ints = ops.cast(x, dtypes.int32)
        values = ops.cast(ints, dtypes.float32)
        average = ops.mean(values)
        spread = ops.sqrt(ops.mean(ops.square(values - average)))
        parts = [*_exact(ops.min(ints)), *_exact(ops.max(ints)), average, spread]
    return ops.stack(parts)


def _decode(host, dtype, size):
    """(min, max, mean, std, finite count, nan count) from _device_stats's vector."""
    if dtype == dtypes.float32:
        low, high, average, spread = (float(v) for v in host[:4])
        count, nans = _joined(*host[4:6]), _joined(*host[6:8])
        return low, high, average, spread, count, nans
    return _joined(*host[:2]), _joined(*host[2:4]), float(host[4]), float(host[5]), size, 0


def inspect(t):
    """shape, dtype, min, max, mean, std, nan_count and inf_count of tensor t, computed on t's device and
    read back in one readback (none for an empty tensor). Prints as one line."""
    if not isinstance(t, Tensor):
        raise TypeError(f"inspect: expected a Tensor, got {type(t).__name__}")
    t._live_buffer()
    if t.size == 0:
        return TensorStats(t.shape, t.dtype, 0, None, None, None, None, 0, 0)
    with stop_recording(), ENGINE.scope():
        host = np.asarray(ENGINE.read(_device_stats(t)), np.float64)
    low, high, average, spread, count, nans = _decode(host, t.dtype, t.size)
    if count == 0:
        low = high = average = spread = None
    return TensorStats(t.shape, t.dtype, t.size, low, high, average, spread, nans, t.size - count - nans)


__all__ = ["TensorStats", "inspect"]
