"""Shape kernels on numpy."""

import math

import numpy as np

from ....kernel_registry import register_kernel


def slice_view(x, begin, size):
    """x[begin[a] : begin[a] + size[a] for each axis a], a view of x."""
    return x[tuple(slice(b, b + s) for b, s in zip(begin, size))]


def broadcast_to(x, shape):
    return np.broadcast_to(x, shape)


register_kernel("BroadcastTo", "numpy", broadcast_to)
register_kernel("Transpose", "numpy", lambda x, perm: np.transpose(x, perm))
register_kernel("Concat", "numpy", lambda *xs, axis: np.concatenate(xs, axis))
register_kernel("Slice", "numpy", slice_view)
register_kernel("Tile", "numpy", lambda x, reps: np.tile(x, reps))
register_kernel("Reverse", "numpy", lambda x, axis: np.flip(x, axis))


def _pad(x, paddings, constant_value):
    """np.pad's constant padding written out: np.pad's own checks and per-axis passes took 0.2 ms on a row of fit's
    epoch table in Pyodide, as long as a small step's kernels."""
    out = np.full([d + before + after for d, (before, after) in zip(x.shape, paddings)], constant_value, x.dtype)
    out[tuple(slice(before, before + d) for d, (before, _) in zip(x.shape, paddings))] = x
    return out


register_kernel("Pad", "numpy", _pad)


def _gather(x, indices, axis, batch_dims):
    """out[b..., p..., i..., q...] = x[b..., p..., indices[b..., i...], q...]."""
    n = x.shape[axis]
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        raise IndexError(
            f"gather: index {indices[bad].flat[0]} is out of range for axis {axis} of size {n} (valid: 0..{n - 1})"
        )
    if batch_dims == 0:
        return np.take(x, indices, axis)
    b, p, q = (math.prod(s) for s in (x.shape[:batch_dims], x.shape[batch_dims:axis], x.shape[axis + 1 :]))
    m = math.prod(indices.shape[batch_dims:])
    xs, ids = x.reshape(b, p, n, q), indices.reshape(b, m)
    out = xs[np.arange(b)[:, None, None], np.arange(p)[None, :, None], ids[:, None, :]]
    return out.reshape(x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis + 1 :])


def gather_nd(x, indices):
    """out[b...] = x[indices[b..., 0], ..., indices[b..., k - 1]] (the op sends k >= 1)."""
    k = indices.shape[-1]
    bad = ((indices < 0) | (indices >= np.array(x.shape[:k]))).any(-1)
    if bad.any():
        raise IndexError(
            f"gather_nd: index {indices[bad][0].tolist()} is out of range for the first {k} axes of x, "
            f"of sizes {list(x.shape[:k])}"
        )
    return x[tuple(np.moveaxis(indices, -1, 0))]


def _unsorted_segment_sum(data, segment_ids, num_segments):
    """Rows of data (segment_ids.shape leading axes) summed by id; ids outside 0..num_segments-1 are dropped."""
    rest = data.shape[segment_ids.ndim :]
    out = np.zeros((num_segments, *rest), data.dtype)
    ids, rows = segment_ids.reshape(-1), data.reshape(segment_ids.size, *rest)
    keep = (ids >= 0) & (ids < num_segments)
    np.add.at(out, ids[keep], rows[keep])
    return out


register_kernel("Gather", "numpy", _gather)
register_kernel("GatherNd", "numpy", gather_nd)
register_kernel("UnsortedSegmentSum", "numpy", _unsorted_segment_sum)
