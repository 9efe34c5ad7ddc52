"""Gradients of the ops in py_engine/ops/shape.py."""

import math

from ...kernel_registry import register_gradient
from ..creation import arange, zeros_like
from ..math import clip_by_value, logical_and, where
from ..reduce import sum as reduce_sum
from ..shape import gather, pad, reshape, reverse, scatter_nd, transpose, unsorted_segment_sum
from ..shape import slice as slice_op
from .math import unbroadcast


def _concat_grad(dy, ins, outs, attrs):
    axis, begin, grads = attrs["axis"], [0] * dy.rank, []
    for x in ins:
        grads.append(slice_op(dy, begin, x.shape))
        begin[axis] += x.shape[axis]
    return grads


def _tile_grad(dy, ins, outs, attrs):
    x = ins[0]
    blocks = tuple(d for pair in zip(attrs["reps"], x.shape) for d in pair)  # (r0, d0, r1, d1, ...)
    return reduce_sum(reshape(dy, blocks), tuple(range(0, 2 * x.rank, 2)))


def _gather_grad(dy, ins, outs, attrs):
    """Scatter-add dy back: each batch entry b owns rows b*n..b*n+n-1 of one flat segment sum."""
    x, indices = ins
    axis, batch_dims, n = attrs["axis"], attrs["batch_dims"], x.shape[attrs["axis"]]
    b, p, q = (math.prod(s) for s in (x.shape[:batch_dims], x.shape[batch_dims:axis], x.shape[axis + 1 :]))
    m = math.prod(indices.shape[batch_dims:])
    ids = reshape(indices, (b, m))
    if b > 1:
        ids = ids + reshape(arange(b) * n, (b, 1))
    rows = reshape(transpose(reshape(dy, (b, p, m, q)), (0, 2, 1, 3)), (b * m, p, q))
    g = unsorted_segment_sum(rows, reshape(ids, (b * m,)), b * n)
    return reshape(transpose(reshape(g, (b, n, p, q)), (0, 2, 1, 3)), x.shape), None


def _gather_nd_grad(dy, ins, outs, attrs):
    return scatter_nd(ins[1], dy, ins[0].shape), None


def _segment_sum_grad(dy, ins, outs, attrs):
    x, ids = ins
    n = attrs["num_segments"]
    if n == 0:
        return zeros_like(x), None
    valid = reshape(logical_and(ids >= 0, ids < n), ids.shape + (1,) * (x.rank - ids.rank))
    return where(valid, gather(dy, clip_by_value(ids, 0, n - 1)), 0.0), None


register_gradient("BroadcastTo", lambda dy, ins, outs, attrs: unbroadcast(dy, ins[0].shape))
register_gradient("Reshape", lambda dy, ins, outs, attrs: reshape(dy, attrs["shape"]))
register_gradient(
    "Transpose", lambda dy, ins, outs, attrs: transpose(dy, sorted(range(dy.rank), key=attrs["perm"].__getitem__))
)
register_gradient("Concat", _concat_grad)
register_gradient(
    "Slice",
    lambda dy, ins, outs, attrs: pad(
        dy, [(b, d - b - s) for b, s, d in zip(attrs["begin"], attrs["size"], ins[0].shape)]
    ),
)
register_gradient("Pad", lambda dy, ins, outs, attrs: slice_op(dy, [b for b, _ in attrs["paddings"]], ins[0].shape))
register_gradient("Reverse", lambda dy, ins, outs, attrs: reverse(dy, attrs["axis"]))
register_gradient("Tile", _tile_grad)
register_gradient("Gather", _gather_grad)
register_gradient("GatherNd", _gather_nd_grad)
register_gradient("UnsortedSegmentSum", _segment_sum_grad)
