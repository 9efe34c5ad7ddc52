"""Gradients of the ops in py_engine/ops/sequence.py."""

from ... import dtypes
from ...engine import ENGINE
from ...kernel_registry import register_gradient
from ..creation import arange, one_hot, zeros_like
from ..linalg import matmul
from ..math import cast, less
from ..reduce import sum as reduce_sum
from ..shape import reshape
from ..shape import slice as slice_op

F32 = dtypes.float32
I32 = dtypes.int32


def _masked_softmax_grad(dy, ins, outs, attrs):
    y = outs[0]  # 0 where masked, so masked positions get no gradient
    return y * (dy - reduce_sum(dy * y, attrs["axis"], keepdims=True)), None


register_gradient("MaskedSoftmax", _masked_softmax_grad)


def _crf_log_likelihood_grad(dys, ins, outs, attrs):
    """d/d emissions = gold one-hot - unary marginals; d/d transitions = gold transition counts - expected
    ones (pairwise marginals summed over the steps), each sequence weighted by its dy."""
    dy = dys[0]
    emissions, tags, transitions, lengths = ins
    batch, steps, num_tags = emissions.shape
    unary, pairwise = ENGINE.run_kernel("CRFMarginals", (emissions, transitions, lengths, outs[1]))
    inside = cast(less(reshape(arange(steps, dtype=I32), (1, steps)), reshape(lengths, (batch, 1))), F32)
    gold = one_hot(tags, num_tags) * reshape(inside, (batch, steps, 1))
    if steps > 1:
        earlier = slice_op(gold, (0, 0, 0), (batch, steps - 1, num_tags))
        later = slice_op(gold, (0, 1, 0), (batch, steps - 1, num_tags))
        gold_pairs = matmul(earlier, later, transpose_a=True)
    else:
        gold_pairs = zeros_like(pairwise)
    weight = reshape(dy, (batch, 1, 1))
    return (gold - unary) * weight, None, reduce_sum((gold_pairs - pairwise) * weight, 0), None


register_gradient("CRFLogLikelihood", _crf_log_likelihood_grad)
