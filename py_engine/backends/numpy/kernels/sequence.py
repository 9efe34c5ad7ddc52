"""Sequence kernels on numpy: masked softmax and a linear-chain CRF (forward algorithm, marginals, Viterbi).

CRF inputs: emissions [B, T, K], tags [B, T] int32, transitions [K, K] (transitions[i, j] scores tag i
followed by tag j), lengths [B] int32 in [0, T]. Steps at or past a sequence's length are ignored and
every per-step output is 0 there. The forward-backward sums run in float64 (the reference); Viterbi
runs in float32 in the same order as the WGSL kernel, so both pick the same path on near ties.
"""

import numpy as np

from ....kernel_registry import register_kernel


def _masked_softmax(logits, mask, axis):
    keep = np.broadcast_to(mask, logits.shape)
    if logits.size == 0:
        return np.zeros(logits.shape, np.float32)
    x = np.where(keep, logits, np.float32(-np.inf))
    m = np.maximum.reduce(x, axis, keepdims=True)
    empty = m == -np.inf  # every position masked, or every kept logit -inf: the row is zeros
    e = np.where(keep, np.exp(x - np.where(empty, np.float32(0), m)), np.float32(0))
    return np.where(keep & ~empty, e / np.add.reduce(e, axis, keepdims=True), np.float32(0))


def _logsumexp(v, axis):
    """log(sum(exp(v))) along axis; -inf (not NaN) where every term is -inf."""
    m = np.maximum.reduce(v, axis, keepdims=True)
    shift = np.where(m == -np.inf, 0.0, m)
    return np.squeeze(np.log(np.add.reduce(np.exp(v - shift), axis, keepdims=True)) + shift, axis)


def _alive(lengths, steps):
    return np.arange(steps)[None, :] < lengths[:, None]  # [B, T]: the steps inside each sequence


def _last_step(values, lengths):
    """values[b, lengths[b] - 1] ([B, K]); rows of empty sequences hold values[b, 0] (callers ignore them)."""
    last = np.maximum(lengths - 1, 0)
    return values[np.arange(values.shape[0]), last]


def _log_partition(alphas, lengths):
    if alphas.shape[1] == 0:
        return np.zeros(alphas.shape[0])
    return np.where(lengths > 0, _logsumexp(_last_step(alphas, lengths), 1), 0.0)


def _crf_log_likelihood(emissions, tags, transitions, lengths):
    """(gold path score - log partition [B], forward log-probabilities alphas [B, T, K])."""
    e, a = emissions.astype(np.float64), transitions.astype(np.float64)
    steps = e.shape[1]
    alive = _alive(lengths, steps)
    alphas = np.zeros(e.shape)
    if steps:
        alphas[:, 0] = e[:, 0]
    for t in range(1, steps):
        alphas[:, t] = _logsumexp(alphas[:, t - 1, :, None] + a[None], 1) + e[:, t]
    alphas = np.where(alive[..., None], alphas, 0.0)
    gold_tags = np.where(alive, tags, 0)  # tags past a length may be anything
    unary = np.take_along_axis(e, gold_tags[..., None], 2)[..., 0]
    gold = np.add.reduce(np.where(alive, unary, 0.0), 1)
    if steps > 1:
        pairs = a[gold_tags[:, :-1], gold_tags[:, 1:]]
        gold += np.add.reduce(np.where(alive[:, 1:], pairs, 0.0), 1)
    return (gold - _log_partition(alphas, lengths)).astype(np.float32), alphas.astype(np.float32)


def _crf_marginals(emissions, transitions, lengths, alphas):
    """(P(tag k at step t) [B, T, K], expected count of each transition i -> j per sequence [B, K, K])."""
    e, a, alpha = emissions.astype(np.float64), transitions.astype(np.float64), alphas.astype(np.float64)
    batch, steps, tags = e.shape
    alive = _alive(lengths, steps)
    log_z = _log_partition(alpha, lengths)[:, None]
    betas = np.zeros(e.shape)  # beta at the last step of a sequence (and past it) is 0
    for t in range(steps - 2, -1, -1):
        ahead = _logsumexp(a[None] + (e[:, t + 1] + betas[:, t + 1])[:, None, :], 2)
        betas[:, t] = np.where(alive[:, t + 1, None], ahead, 0.0)
    unary = np.where(alive[..., None], np.exp(alpha + betas - log_z[..., None]), 0.0)
    pairwise = np.zeros((batch, tags, tags))
    for t in range(1, steps):
        log_p = alpha[:, t - 1, :, None] + a[None] + (e[:, t] + betas[:, t])[:, None, :] - log_z[..., None]
        pairwise += np.where(alive[:, t, None, None], np.exp(log_p), 0.0)
    return unary.astype(np.float32), pairwise.astype(np.float32)


def _crf_decode(emissions, transitions, lengths):
    """Viterbi: (best tags [B, T], their score [B], backpointers [B, T, K], best score ending in each tag
    [B, T, K]); ties go to the lower tag."""
    batch, steps = emissions.shape[:2]
    alive = _alive(lengths, steps)
    lattice = np.zeros(emissions.shape, np.float32)
    backpointers = np.zeros(emissions.shape, np.int32)
    if steps:
        lattice[:, 0] = emissions[:, 0]
    for t in range(1, steps):
        candidates = lattice[:, t - 1, :, None] + transitions[None]  # [B, from, to]
        backpointers[:, t] = np.argmax(candidates, 1)
        lattice[:, t] = np.maximum.reduce(candidates, 1) + emissions[:, t]
    lattice = np.where(alive[..., None], lattice, np.float32(0))
    backpointers = np.where(alive[..., None], backpointers, 0).astype(np.int32)
    path = np.zeros((batch, steps), np.int32)
    scores = np.zeros(batch, np.float32)
    for b in range(batch):
        n = int(lengths[b])
        if n == 0:
            continue
        best = int(np.argmax(lattice[b, n - 1]))
        scores[b] = lattice[b, n - 1, best]
        for t in range(n - 1, -1, -1):
            path[b, t] = best
            best = int(backpointers[b, t, best])
    return path, scores, backpointers, lattice


register_kernel("MaskedSoftmax", "numpy", _masked_softmax)
register_kernel("CRFLogLikelihood", "numpy", _crf_log_likelihood)
register_kernel("CRFMarginals", "numpy", _crf_marginals)
register_kernel("CRFDecode", "numpy", _crf_decode)
