"""Sequence ops: masked softmax for padded sequences, and a linear-chain CRF (log-likelihood, Viterbi decoding).

The CRF scores a tag sequence y of length L as sum_t emissions[t, y_t] + sum_{t >= 1} transitions[y_{t-1}, y_t]
(transitions[i, j]: tag i followed by tag j; no start or end scores). crf_log_likelihood is that score minus
the log of the sum of exp(score) over every tag sequence of length L (the forward algorithm); its gradient
comes from forward-backward marginals (the CRFMarginals kernel): gold counts minus expected counts.
"""

__all__ = ["crf_decode", "crf_log_likelihood", "masked_softmax"]

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .check import axis_index
from .creation import fill
from .math import not_equal
from .operands import as_temporary, release

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_


def masked_softmax(logits, mask, axis=-1) -> Tensor:
    """softmax along `axis` over the positions where `mask` is true (nonzero); masked positions are exactly 0
    and a row with nothing kept (or only -inf kept) is all zeros, never NaN.

    `mask` (bool, int32 or float32) broadcasts against `logits` by NumPy's rules: the logits' shape, or that
    shape without leading axes, or with 1s where it repeats. A [B, T] padding mask of [B, H, T, T] attention
    scores is reshaped to [B, 1, 1, T] first (pe.reshape or pe.expand_dims twice).
    """
    temps = []
    try:
        x = as_temporary(logits, "masked_softmax", temps, F32)
        keep = as_temporary(mask, "masked_softmax", temps)
        if keep.dtype != BOOL:
            keep = not_equal(keep, 0)
            temps.append(keep)
        if x.rank == 0:
            raise ShapeError("masked_softmax: logits must have rank >= 1, got a scalar")
        fits = keep.rank <= x.rank and all(m in (1, d) for m, d in zip(keep.shape[::-1], x.shape[::-1]))
        if not fits:
            raise ShapeError(
                f"masked_softmax: a mask of shape {keep.shape} does not broadcast to the logits' shape {x.shape}; "
                "it must have that shape, or drop leading axes, or hold 1 where it repeats (a [B, T] padding mask "
                "of [B, H, T, T] scores: reshape it to [B, 1, 1, T])"
            )
        return ENGINE.run_kernel("MaskedSoftmax", (x, keep), {"axis": axis_index("masked_softmax", axis, x.rank)})
    finally:
        release(temps)


# ---- the CRF ----------------------------------------------------------------------------------


def _input(op, value, name, dtype, temps):
    """`value` as a tensor of `dtype`: tensors must have it already; numbers and arrays are converted."""
    if isinstance(value, Tensor):
        if value.dtype != dtype:
            raise DTypeError(f"{op}: {name} must be {dtype}, got a {value.dtype} tensor; cast it with pe.cast")
        return value
    kind = np.asarray(value).dtype.kind
    if dtype == I32 and kind not in "iu":
        raise DTypeError(f"{op}: {name} must be int32 (integers), got values of numpy dtype {np.asarray(value).dtype}")
    return as_temporary(value, op, temps, dtype)


def _crf_inputs(op, emissions, transitions, lengths, temps, validate=True):
    emissions = _input(op, emissions, "emissions", F32, temps)
    transitions = _input(op, transitions, "transitions", F32, temps)
    if emissions.rank != 3:
        raise ShapeError(f"{op}: emissions must be [batch, steps, tags] (rank 3), got shape {emissions.shape}")
    batch, steps, tags = emissions.shape
    if tags == 0:
        raise ShapeError(f"{op}: emissions of shape {emissions.shape} have no tags (the last axis is 0)")
    if transitions.shape != (tags, tags):
        raise ShapeError(
            f"{op}: transitions must be [tags, tags] = ({tags}, {tags}) for emissions of shape {emissions.shape}, "
            f"got shape {transitions.shape}"
        )
    if lengths is None:
        lengths = fill((batch,), steps, I32)
        temps.append(lengths)
        return emissions, transitions, lengths, np.full(batch, steps)
    given = lengths
    lengths = _input(op, lengths, "lengths", I32, temps)
    if lengths.shape != (batch,):
        raise ShapeError(
            f"{op}: lengths must be [batch] = ({batch},) for emissions of shape {emissions.shape}, "
            f"got shape {lengths.shape}"
        )
    if not validate:
        return emissions, transitions, lengths, None
    host = lengths.numpy() if isinstance(given, Tensor) else np.asarray(given)  # a tensor: one readback
    bad = np.flatnonzero((host < 0) | (host > steps))
    if bad.size:
        raise ValueError(f"{op}: lengths[{bad[0]}] = {host[bad[0]]} is outside [0, {steps}] (steps in emissions)")
    return emissions, transitions, lengths, host


def crf_log_likelihood(emissions, tags, transitions, lengths=None, validate=True) -> Tensor:
    """Log-likelihood of each gold tag sequence under a linear-chain CRF: [batch] float32.

    emissions [B, T, K] float32, tags [B, T] int32 in [0, K) (entries at or past a sequence's length are
    ignored), transitions [K, K] float32, lengths [B] int32 in [0, T] (None: every sequence has T steps;
    a length of 0 gives 0). Differentiable in emissions and transitions. Tags or lengths given as tensors
    are read back once to check their values (validate=False skips that, for values known to be in range, as
    in a training loop that checked its labels on the host, and skips checking values altogether); numpy arrays
    or lists need no readback.
    """
    op = "crf_log_likelihood"
    temps = []
    try:
        emissions, transitions, lengths, host_lengths = _crf_inputs(
            op, emissions, transitions, lengths, temps, validate
        )
        given = tags
        tags = _input(op, tags, "tags", I32, temps)
        if tags.shape != emissions.shape[:2]:
            raise ShapeError(
                f"{op}: tags must be [batch, steps] = {emissions.shape[:2]} for emissions of shape "
                f"{emissions.shape}, got shape {tags.shape}"
            )
        if validate:
            host_tags = tags.numpy() if isinstance(given, Tensor) else np.asarray(given)  # a tensor: one readback
            inside = np.arange(tags.shape[1])[None, :] < host_lengths[:, None]
            bad = np.argwhere(inside & ((host_tags < 0) | (host_tags >= emissions.shape[2])))
            if bad.size:
                b, t = bad[0]
                raise ValueError(
                    f"{op}: tags[{b}, {t}] = {host_tags[b, t]} is outside [0, {emissions.shape[2]}) "
                    f"({emissions.shape[2]} tags in emissions)"
                )
        loglik, alphas = ENGINE.run_kernel("CRFLogLikelihood", (emissions, tags, transitions, lengths))
        ENGINE.dispose_tensor(alphas)  # a gradient being recorded keeps its own reference
        return loglik
    finally:
        release(temps)


def crf_decode(emissions, transitions, lengths=None, validate=True) -> tuple[Tensor, Tensor]:
    """Viterbi decoding: (tags [B, T] int32, best_scores [B] float32), the highest-scoring tag sequence of each
    sequence and its score; tags past each length are 0 (and a length of 0 scores 0). Ties go to the lower tag.
    Inputs as in crf_log_likelihood; lengths given as a tensor are read back once to check them (unless
    validate=False).
    """
    op = "crf_decode"
    temps = []
    try:
        emissions, transitions, lengths, _ = _crf_inputs(op, emissions, transitions, lengths, temps, validate)
        path, scores, backpointers, lattice = ENGINE.run_kernel("CRFDecode", (emissions, transitions, lengths))
        ENGINE.dispose((backpointers, lattice))
        return path, scores
    finally:
        release(temps)
