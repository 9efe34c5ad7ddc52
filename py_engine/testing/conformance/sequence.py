"""Conformance cases: masked_softmax and the linear-chain CRF (crf_log_likelihood with its gradient, which runs
CRFMarginals, and crf_decode).

Edge cases: fully masked rows, rows whose kept logits are all -inf, NaN under the mask, rows longer than a
workgroup and more rows than one grid dimension holds; sequences of length 0 and T, one tag, one step, more
tags than a workgroup has threads, forbidden (-inf) transitions, long sequences.
"""

import numpy as np

from ... import ops
from ...autograd import grad, grads
from .case import FLOAT_EDGES, Case, rand, with_edges

NEG_INF = np.float32(-np.inf)


def _softmax_rows():
    """Rows of 9 logits with their masks: plain, fully masked, -inf kept, only -inf kept, NaN under the mask."""
    x = rand((6, 9), 1)
    mask = rand((6, 9), 2, dtype=bool)
    mask[1] = False
    x[2, [0, 3]] = NEG_INF
    mask[2, [0, 3, 4]] = True
    x[3] = NEG_INF
    mask[3, :4] = True
    x[4, 2] = np.nan
    mask[4, 2] = False
    mask[4, 5] = True
    return x, mask


def _masked_softmax_cases():
    x, mask = _softmax_rows()
    edges = with_edges(rand((6, 20), 3), FLOAT_EDGES)
    attention = rand((2, 3, 4, 4), 4)
    padding = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool).reshape(2, 1, 1, 4)
    cases = [
        Case("masked_softmax/rows", ops.masked_softmax, [x, mask]),
        Case("masked_softmax/special-values", ops.masked_softmax, [edges, rand((6, 20), 5, dtype=bool)]),
        Case(
            "masked_softmax/leading-axes-missing", ops.masked_softmax, [rand((3, 5, 7), 6), rand((5, 7), 7, dtype=bool)]
        ),
        Case("masked_softmax/attention-padding", ops.masked_softmax, [attention, padding]),
        Case(
            "masked_softmax/axis0",
            lambda t, m: ops.masked_softmax(t, m, 0),
            [rand((6, 5), 8), rand((6, 1), 9, dtype=bool)],
        ),
        Case(
            "masked_softmax/middle-axis-long",
            lambda t, m: ops.masked_softmax(t, m, 1),
            [rand((3, 70, 4), 10), rand((3, 70, 1), 11, dtype=bool)],
        ),
        Case("masked_softmax/long-rows", ops.masked_softmax, [rand((5, 1000), 12), rand((5, 1000), 13, dtype=bool)]),
        Case("masked_softmax/int32-mask", ops.masked_softmax, [rand((4, 6), 14), rand((4, 6), 15, 0, 3, np.int32)]),
        Case(
            "masked_softmax/float-mask", ops.masked_softmax, [rand((4, 6), 16), rand((4, 6), 17, 0, 2, np.int32) * 0.5]
        ),
        Case(
            "masked_softmax/rows-past-one-grid-dimension",
            ops.masked_softmax,
            [rand((66000, 2), 18), rand((66000, 2), 19, dtype=bool)],
        ),
        Case("masked_softmax/no-rows", ops.masked_softmax, [rand((0, 4), 20), rand((0, 4), 21, dtype=bool)]),
        Case("masked_softmax/empty-rows", ops.masked_softmax, [rand((3, 0), 22), rand((3, 0), 23, dtype=bool)]),
        Case(
            "masked_softmax/grad",
            lambda t, m, w: grad(lambda u: ops.sum(ops.masked_softmax(u, m) * w))(t),
            [x, mask, rand((6, 9), 24)],
            atol=1e-5,
        ),
    ]
    return cases


def _crf(batch, steps, tags, seed, lengths=None):
    """[emissions, tags, transitions, lengths] for a CRF case."""
    rng = np.random.default_rng(seed)
    emissions = rng.normal(size=(batch, steps, tags)).astype(np.float32)
    transitions = rng.normal(size=(tags, tags)).astype(np.float32)
    gold = rng.integers(0, tags, (batch, steps)).astype(np.int32)
    if lengths is None:
        lengths = rng.integers(0, steps + 1, batch)
    return [emissions, gold, transitions, np.asarray(lengths, np.int32)]


def _forbidden(seed):
    """Transitions 0 -> 1 and 2 -> 2 are impossible (-inf); the gold paths avoid them except in sequence 1."""
    emissions, _, transitions, lengths = _crf(3, 5, 3, seed, [5, 4, 2])
    transitions[0, 1] = transitions[2, 2] = NEG_INF
    gold = np.array([[0, 0, 2, 1, 1], [1, 2, 2, 0, 0], [2, 0, 0, 0, 0]], np.int32)  # sequence 1: 2 -> 2
    return [emissions, gold, transitions, lengths]


CRF_INPUTS = {
    "lengths-0-to-T": _crf(3, 5, 4, 1, [5, 0, 3]),
    "random-lengths": _crf(6, 7, 5, 2),
    "one-tag": _crf(3, 4, 1, 3, [4, 2, 0]),
    "one-step": _crf(4, 1, 3, 4, [1, 0, 1, 1]),
    "tags-past-one-workgroup": _crf(2, 6, 70, 5, [6, 4]),
    "forbidden-transitions": _forbidden(6),
    "long": _crf(4, 60, 5, 7, [60, 33, 1, 59]),
}


def _crf_cases():
    tol = {"rtol": 1e-4, "atol": 1e-4}
    cases = []
    for label, inputs in CRF_INPUTS.items():
        emissions, gold, transitions, lengths = inputs
        cases.append(Case(f"crf_log_likelihood/{label}", ops.crf_log_likelihood, inputs, **tol))
        cases.append(
            Case(
                f"crf_log_likelihood/grad-{label}",
                lambda e, y, a, n: grads(lambda e, a: ops.sum(ops.crf_log_likelihood(e, y, a, n)))(e, a),
                inputs,
                **tol,
            )
        )
        cases.append(Case(f"crf_decode/{label}", ops.crf_decode, [emissions, transitions, lengths], **tol))
    emissions, gold, transitions, _ = CRF_INPUTS["random-lengths"]
    cases += [
        Case(
            "crf_log_likelihood/no-lengths",
            lambda e, y, a: ops.crf_log_likelihood(e, y, a),
            [emissions, gold, transitions],
            **tol,
        ),
        Case("crf_decode/no-lengths", lambda e, a: ops.crf_decode(e, a), [emissions, transitions], **tol),
        Case("crf_decode/no-sequences", ops.crf_decode, _crf(0, 3, 2, 8, [])[::2]),
        Case(
            "crf_decode/ties-go-to-the-lower-tag",
            ops.crf_decode,
            [np.zeros((2, 4, 70), np.float32), np.zeros((70, 70), np.float32)],
        ),
        Case("crf_log_likelihood/no-steps", ops.crf_log_likelihood, _crf(2, 0, 3, 9, [0, 0])),
    ]
    return cases


CASES = _masked_softmax_cases() + _crf_cases()
