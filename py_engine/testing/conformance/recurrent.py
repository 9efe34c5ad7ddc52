"""Conformance cases: lstm_sequence, gru_sequence, simple_rnn_sequence (LSTMSequence, GRUSequence,
SimpleRNNSequence) and their gradients (the ...Grad kernels).

Shapes from one unit and one step to batch * units over several workgroups; masks that skip the first step,
the last step, a middle run and a whole row (the state is carried, and the backward pass carries its gradient
past them); every activation; an empty batch.
"""

import numpy as np

from ...autograd import grads
from ...ops import tensor
from ...ops.recurrent import ACTIVATIONS, gru_sequence, lstm_sequence, simple_rnn_sequence
from .case import Case, rand

TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
# (label, batch, time, units)
SHAPES = [("one-unit-one-step", 1, 1, 1), ("small", 3, 6, 5), ("many-workgroups", 4, 3, 70), ("batch0", 0, 3, 2)]
# op, gates, initial state width (in units), whether it has a recurrent activation
OPS = {
    "lstm_sequence": (lstm_sequence, 4, 2, True),
    "gru_sequence": (gru_sequence, 3, 1, True),
    "simple_rnn_sequence": (simple_rnn_sequence, 1, 1, False),
}


def _mask(batch, time, seed):
    """Real steps mostly; row 0 skips its first and last steps, row 1 a middle run, row 2 everything."""
    mask = (np.random.default_rng(seed).random((batch, time)) < 0.8).astype(np.float32)
    if batch > 2 and time > 2:
        mask[0, [0, -1]] = 0
        mask[1, 1:3] = 0
        mask[2] = 0
    return mask


def _op(fn, mask, activations):
    return lambda xw, s0, rk: fn(xw, s0, rk, tensor(mask), **activations)


def _grad(fn, mask, weights, activations):
    """Gradients of sum(op(...) * w) with respect to xw, the initial state and recurrent_kernel."""

    def run(xw, s0, rk):
        m, w = tensor(mask), tensor(weights)
        return tuple(grads(lambda a, b, c: (fn(a, b, c, m, **activations) * w).sum())(xw, s0, rk))

    return run


def _inputs(gates, width, batch, time, units, seed):
    scale = 1 / np.sqrt(max(units, 1))  # keeps the gates out of saturation whatever the size
    return [
        rand((batch, time, gates * units), seed, -1.5, 1.5),
        rand((batch, width * units), seed + 1, -1, 1),
        rand((units, gates * units), seed + 2, -scale, scale),
    ]


def _cases():
    cases = []
    for k, (name, (fn, gates, width, recurrent)) in enumerate(OPS.items()):
        # each activation in each role: (tanh, sigmoid), (sigmoid, hard_sigmoid), ...
        pairs = [(a, ACTIVATIONS[(i + 1) % len(ACTIVATIONS)] if recurrent else None) for i, a in enumerate(ACTIVATIONS)]
        for n, (label, batch, time, units) in enumerate(SHAPES):
            seed = 5000 + 100 * k + 10 * n
            activation, recurrent_activation = ("tanh", "sigmoid") if n % 2 == 0 else ("relu", "hard_sigmoid")
            activations = {"activation": activation}
            if recurrent:
                activations["recurrent_activation"] = recurrent_activation
            inputs, mask = _inputs(gates, width, batch, time, units, seed), _mask(batch, time, seed + 3)
            cases.append(Case(f"{name}/{label}", _op(fn, mask, activations), inputs, **TOLERANCE))
            out_width = width * units if fn is lstm_sequence else units
            weights = rand((batch, time, out_width), seed + 4)
            cases.append(Case(f"{name}/grad-{label}", _grad(fn, mask, weights, activations), inputs, **TOLERANCE))
        for n, (activation, recurrent_activation) in enumerate(pairs):  # with gradients
            seed = 6000 + 100 * k + 5 * n
            activations = {"activation": activation}
            if recurrent:
                activations["recurrent_activation"] = recurrent_activation
            inputs, mask = _inputs(gates, width, 2, 4, 3, seed), _mask(2, 4, seed + 3)
            label = "-".join(filter(None, (activation, recurrent_activation)))
            cases.append(Case(f"{name}/{label}", _op(fn, mask, activations), inputs, **TOLERANCE))
            weights = rand((2, 4, width * 3 if fn is lstm_sequence else 3), seed + 4)
            cases.append(Case(f"{name}/grad-{label}", _grad(fn, mask, weights, activations), inputs, **TOLERANCE))
    return cases


CASES = _cases()
