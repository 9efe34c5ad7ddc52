"""Whole-sequence recurrent ops: lstm_sequence, gru_sequence, simple_rnn_sequence, one kernel each, with gradients.

The recurrent layers compute the input projection of every step with one matmul (xw = x @ kernel + bias,
[batch, time, gates * units]) and hand the recurrence to one of these ops: its kernel loops over time itself
(on webgpu one dispatch per step for LSTM and SimpleRNN, two for GRU), so an LSTM costs a few dispatches per
step, not one op per gate. Gates follow Keras's layout: LSTM i, f, c, o; GRU z, r, h (reset_after=False, the
GRU TF.js 4.22 runs). `mask` [batch, time] (float32, 1 = a real step) skips steps, carrying the state, as
TF.js's rnn() does. Each op is one node on the tape: its gradient (ops/gradients/recurrent.py) runs one backward
kernel over the whole sequence, then recurrent_kernel's gradient is one matmul over all steps.
"""

__all__ = ["gru_sequence", "lstm_sequence", "simple_rnn_sequence"]

from ..engine import ENGINE
from ..errors import ShapeError
from .creation import ones
from .nn import float_input
from .operands import release

ACTIVATIONS = ("tanh", "sigmoid", "hard_sigmoid", "relu", "relu6", "linear", "softsign", "softplus", "elu", "selu")


def _check(op, xw, state0, recurrent_kernel, mask, gates, state_width, activations):
    """(xw, state0, recurrent_kernel, mask, temporaries) as float32 tensors of matching shapes."""
    for name, value in activations.items():
        if value not in ACTIVATIONS:
            raise ValueError(f"{op}: {name} must be one of {', '.join(ACTIVATIONS)}; got {value!r}")
    temps = []
    try:
        xw = float_input(op, xw, temps, "xw")
        rk = float_input(op, recurrent_kernel, temps, "recurrent_kernel")
        state0 = float_input(op, state0, temps, "initial state")
        if xw.rank != 3:
            raise ShapeError(f"{op}: xw must be [batch, time, {gates} * units], got shape {xw.shape}")
        batch, time, width = xw.shape
        if time == 0:
            raise ShapeError(f"{op}: xw {xw.shape} has no time steps; a recurrent layer needs at least one")
        units = rk.shape[0] if rk.rank == 2 else -1
        if rk.shape != (units, gates * units) or width != gates * units:
            raise ShapeError(
                f"{op}: recurrent_kernel must be [units, {gates} * units] and xw [batch, time, {gates} * units]; "
                f"got recurrent_kernel {rk.shape} and xw {xw.shape}"
            )
        if state0.shape != (batch, state_width * units):
            raise ShapeError(
                f"{op}: the initial state must be [batch, {state_width * units}] for xw {xw.shape} and {units} units; "
                f"got {state0.shape}"
            )
        if mask is None:
            mask = ones((batch, time))
            temps.append(mask)
        else:
            mask = float_input(op, mask, temps, "mask")
            if mask.shape != (batch, time):
                raise ShapeError(f"{op}: mask must be [batch, time] = {[batch, time]}, got {mask.shape}")
        return xw, state0, rk, mask, temps
    except BaseException:
        release(temps)
        raise


def _run(op, kernel, gates, state_width, xw, state0, recurrent_kernel, mask, activations):
    xw, state0, rk, mask, temps = _check(op, xw, state0, recurrent_kernel, mask, gates, state_width, activations)
    try:
        return ENGINE.run_kernel(kernel, (xw, state0, rk, mask), activations)
    finally:
        release(temps)


def lstm_sequence(xw, state0, recurrent_kernel, mask=None, activation="tanh", recurrent_activation="sigmoid"):
    """The LSTM's states at every step, [batch, time, 2 * units]: h in [..., :units], c in [..., units:].

    xw: [batch, time, 4 * units], x @ kernel + bias with gates i, f, c, o; state0: [batch, 2 * units], the initial
    h and c side by side; recurrent_kernel: [units, 4 * units]; mask: [batch, time] or None (every step is real).
    """
    activations = {"activation": activation, "recurrent_activation": recurrent_activation}
    return _run("lstm_sequence", "LSTMSequence", 4, 2, xw, state0, recurrent_kernel, mask, activations)


def gru_sequence(xw, h0, recurrent_kernel, mask=None, activation="tanh", recurrent_activation="sigmoid"):
    """The GRU's output h at every step, [batch, time, units] (reset_after=False: the reset gate scales h before
    recurrent_kernel's candidate part, as TF.js's GRU).

    xw: [batch, time, 3 * units], x @ kernel + bias with gates z, r, h; h0: [batch, units]; recurrent_kernel:
    [units, 3 * units]; mask: [batch, time] or None.
    """
    activations = {"activation": activation, "recurrent_activation": recurrent_activation}
    hseq, _gates = _run("gru_sequence", "GRUSequence", 3, 1, xw, h0, recurrent_kernel, mask, activations)
    return hseq


def simple_rnn_sequence(xw, h0, recurrent_kernel, mask=None, activation="tanh"):
    """The SimpleRNN's output h = activation(xw_t + h @ recurrent_kernel) at every step, [batch, time, units]."""
    activations = {"activation": activation}
    return _run("simple_rnn_sequence", "SimpleRNNSequence", 1, 1, xw, h0, recurrent_kernel, mask, activations)
