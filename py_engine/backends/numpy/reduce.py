"""Reduction, softmax, cumsum and top_k kernels on numpy."""

import numpy as np

from ...kernels import register_kernel


def _acc(x):
    return np.float32 if x.dtype == np.float32 else np.int32


def _softmax(x, axis):
    if x.size == 0:
        return x.copy()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=_acc(x))
    if exclusive:
        out = np.roll(out, 1, axis)
        np.moveaxis(out, axis, 0)[:1] = 0
    return np.flip(out, axis) if reverse else out


def _top_k(x, k):
    keys = -x.astype(np.float64 if x.dtype == np.float32 else np.int64)
    indices = np.argsort(keys, axis=-1, kind="stable")[..., :k]  # ties: the lower index first
    return np.take_along_axis(x, indices, -1), indices.astype(np.int32)


register_kernel("Sum", "numpy", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims, dtype=_acc(x)))
register_kernel("Prod", "numpy", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims, dtype=_acc(x)))
register_kernel("Mean", "numpy", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32))
register_kernel("Max", "numpy", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims))
register_kernel("Min", "numpy", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims))
register_kernel("All", "numpy", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims))
register_kernel("Any", "numpy", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims))
register_kernel("ArgMax", "numpy", lambda x, axis: np.argmax(x, axis=axis))
register_kernel("ArgMin", "numpy", lambda x, axis: np.argmin(x, axis=axis))
register_kernel("Softmax", "numpy", _softmax)
register_kernel("Cumsum", "numpy", _cumsum)
register_kernel("TopK", "numpy", _top_k)
