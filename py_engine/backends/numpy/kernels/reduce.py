"""Reduction, softmax, cumsum, cumprod and top_k kernels on numpy."""

import numpy as np

from ....kernel_registry import register_kernel


def _acc(x):
    return np.float32 if x.dtype == np.float32 else np.int32


def reduce_mean(x, axis, keepdims):
    count = 1
    for a in axis:
        count *= x.shape[a]
    # sum / count, not np.mean: that warns on an empty axis, where the mean is NaN (0 / 0) as in TensorFlow
    return np.add.reduce(x, axis, np.float32, keepdims=keepdims) / np.float32(count)


def softmax(x, axis):
    if x.size == 0:
        return x.copy()
    e = np.exp(x - np.maximum.reduce(x, axis, keepdims=True))
    return e / np.add.reduce(e, axis, keepdims=True)


def _scan(ufunc):
    """Cumsum (np.add) or Cumprod (np.multiply): exclusive starts from the identity, reverse runs from the end."""

    def kernel(x, axis, exclusive, reverse):
        if reverse:
            x = np.flip(x, axis)
        out = ufunc.accumulate(x, axis, _acc(x))
        if exclusive:
            out = np.roll(out, 1, axis)
            np.moveaxis(out, axis, 0)[:1] = ufunc.identity
        return np.flip(out, axis) if reverse else out

    return kernel


def top_k(x, k):
    keys = -x if x.dtype == np.float32 else -x.astype(np.int64)  # exact negations (int32's minimum needs int64)
    n = x.shape[-1]
    if 0 < k < n // 8 and x.size == n:  # one long row (a detector's scores): sort only the entries that can win
        indices = _top_k_row(keys.reshape(-1), k).reshape(*x.shape[:-1], k)
    else:
        indices = np.argsort(keys, axis=-1, kind="stable")[..., :k]  # ties: the lower index first
    return np.take_along_axis(x, indices, -1), indices.astype(np.int32)


def _top_k_row(keys, k):
    """The first k of argsort(keys, stable) without sorting the whole row: the entries up to the k-th smallest key
    (all of its ties, in index order), sorted stably."""
    kth = np.partition(keys, k - 1)[k - 1]
    if kth != kth:  # fewer than k keys are not NaN: NaNs sort last, in index order, as the full sort does
        return np.argsort(keys, kind="stable")[:k]
    candidates = np.flatnonzero(keys <= kth)
    return candidates[np.argsort(keys[candidates], kind="stable")[:k]]


def reduce_sum(x, axis, keepdims):
    return np.add.reduce(x, axis, _acc(x), keepdims=keepdims)


def arg_max(x, axis):
    """The first index of the largest value along `axis` (None: into the flattened x); a NaN counts as the largest."""
    return np.argmax(x, axis=axis)


# ufunc.reduce, not np.sum & co (here and above): their NaN/overflow warnings would come from numpy's own modules,
# which the backend's warning filter (for its kernel modules) does not cover.
register_kernel("Sum", "numpy", reduce_sum)
register_kernel("Prod", "numpy", lambda x, axis, keepdims: np.multiply.reduce(x, axis, _acc(x), keepdims=keepdims))
register_kernel("Mean", "numpy", reduce_mean)
register_kernel("Max", "numpy", lambda x, axis, keepdims: np.maximum.reduce(x, axis, keepdims=keepdims))
register_kernel("Min", "numpy", lambda x, axis, keepdims: np.minimum.reduce(x, axis, keepdims=keepdims))
register_kernel("All", "numpy", lambda x, axis, keepdims: np.logical_and.reduce(x, axis, keepdims=keepdims))
register_kernel("Any", "numpy", lambda x, axis, keepdims: np.logical_or.reduce(x, axis, keepdims=keepdims))
register_kernel("ArgMax", "numpy", arg_max)
register_kernel("ArgMin", "numpy", lambda x, axis: np.argmin(x, axis=axis))
register_kernel("Softmax", "numpy", softmax)
register_kernel("Cumsum", "numpy", _scan(np.add))
register_kernel("Cumprod", "numpy", _scan(np.multiply))
register_kernel("TopK", "numpy", top_k)
