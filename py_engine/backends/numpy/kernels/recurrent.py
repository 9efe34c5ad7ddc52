"""Recurrent sequence kernels on numpy: a whole LSTM / GRU / SimpleRNN sequence per kernel, and its backward pass.

Every kernel takes the input projection of all steps at once (xw = x @ kernel + bias, [batch, time, gates * units],
gates in Keras's order: LSTM i, f, c, o; GRU z, r, h) and loops over time itself, so the recurrent part h @
recurrent_kernel is the only work per step. mask [batch, time] is float32: where it is 0 the step is skipped and
the state carried (TF.js's rnn()). The backward kernels return the gradient with respect to xw (the gates'
pre-activations) for every step plus the initial state's; recurrent_kernel's gradient is one matmul over all steps,
done by the op's gradient. The webgpu kernels (backends/webgpu/kernels/recurrent.py) follow these step for step.
"""

import numpy as np

from ....kernel_registry import register_kernel


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


SELU_SCALE, SELU_ALPHA = np.float32(1.0507009873554805), np.float32(1.6732632423543772)

# Each activation, and its derivative written in terms of its output y (so only activations whose derivative is one)
ACTIVATIONS = {
    "tanh": (np.tanh, lambda y: 1 - y * y),
    "sigmoid": (_sigmoid, lambda y: y * (1 - y)),
    "hard_sigmoid": (
        lambda x: np.clip(0.2 * x + 0.5, 0, 1),
        lambda y: np.where((y > 0) & (y < 1), np.float32(0.2), np.float32(0)),
    ),
    "relu": (lambda x: np.maximum(x, 0), lambda y: (y > 0).astype(np.float32)),
    "relu6": (lambda x: np.clip(x, 0, 6), lambda y: ((y > 0) & (y < 6)).astype(np.float32)),
    "linear": (lambda x: x, np.ones_like),
    "softsign": (lambda x: x / (1 + np.abs(x)), lambda y: np.square(1 - np.abs(y))),
    "softplus": (lambda x: np.logaddexp(np.float32(0), x), lambda y: -np.expm1(-y)),
    "elu": (lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), lambda y: np.where(y > 0, 1, y + 1)),
    "selu": (
        lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
        lambda y: np.where(y > 0, SELU_SCALE, y + SELU_SCALE * SELU_ALPHA).astype(np.float32),
    ),
}


def _previous(seq, first, t):
    return first if t == 0 else seq[:, t - 1]


def _steps(mask, t):
    return mask[:, t, None] != 0


# ---- LSTM: state and output sequence packed as [batch, time, 2 * units] (h then c), initial state [batch, 2 * units]


def _lstm_gates(xw_t, h, rk, activation, recurrent_activation):
    units = h.shape[1]
    z = xw_t + h @ rk
    act, ract = ACTIVATIONS[activation][0], ACTIVATIONS[recurrent_activation][0]
    return ract(z[:, :units]), ract(z[:, units : 2 * units]), act(z[:, 2 * units : 3 * units]), ract(z[:, 3 * units :])


def _lstm_sequence(xw, state0, rk, mask, activation, recurrent_activation):
    batch, time = xw.shape[:2]
    units = rk.shape[0]
    seq = np.empty((batch, time, 2 * units), np.float32)
    state = state0
    for t in range(time):
        h, c = state[:, :units], state[:, units:]
        i, f, g, o = _lstm_gates(xw[:, t], h, rk, activation, recurrent_activation)
        c_new = f * c + i * g
        new = np.concatenate([o * ACTIVATIONS[activation][0](c_new), c_new], axis=1)
        state = np.where(_steps(mask, t), new, state)
        seq[:, t] = state
    return seq


def _lstm_sequence_grad(xw, state0, rk, mask, seq, dseq, activation, recurrent_activation):
    batch, time = xw.shape[:2]
    units = rk.shape[0]
    act, act_d = ACTIVATIONS[activation]
    ract_d = ACTIVATIONS[recurrent_activation][1]
    dz = np.zeros(xw.shape, np.float32)
    dh = np.zeros((batch, units), np.float32)
    dc = np.zeros((batch, units), np.float32)
    for t in reversed(range(time)):
        previous = _previous(seq, state0, t)
        h, c = previous[:, :units], previous[:, units:]
        dh, dc = dh + dseq[:, t, :units], dc + dseq[:, t, units:]
        i, f, g, o = _lstm_gates(xw[:, t], h, rk, activation, recurrent_activation)
        ac = act(f * c + i * g)
        dc_new = dc + dh * o * act_d(ac)
        dz_t = np.concatenate(
            [dc_new * g * ract_d(i), dc_new * c * ract_d(f), dc_new * i * act_d(g), dh * ac * ract_d(o)], axis=1
        )
        step = _steps(mask, t)
        dz[:, t] = np.where(step, dz_t, 0)
        dh = np.where(step, dz_t @ rk.T, dh)
        dc = np.where(step, dc_new * f, dc)
    return dz, np.concatenate([dh, dc], axis=1)


# ---- GRU (reset_after=False, as TF.js): hh = act(xh + (r * h) @ rk_h); h' = z * h + (1 - z) * hh.
# Besides the outputs it returns the gates [batch, time, 3 * units] (z, r, hh after their activations).


def _gru_sequence(xw, h0, rk, mask, activation, recurrent_activation):
    batch, time = xw.shape[:2]
    units = rk.shape[0]
    act, ract = ACTIVATIONS[activation][0], ACTIVATIONS[recurrent_activation][0]
    hseq = np.empty((batch, time, units), np.float32)
    gates = np.empty(xw.shape, np.float32)
    h = h0
    for t in range(time):
        zr = ract(xw[:, t, : 2 * units] + h @ rk[:, : 2 * units])
        z, r = zr[:, :units], zr[:, units:]
        hh = act(xw[:, t, 2 * units :] + (r * h) @ rk[:, 2 * units :])
        gates[:, t] = np.concatenate([zr, hh], axis=1)
        h = np.where(_steps(mask, t), z * h + (1 - z) * hh, h)
        hseq[:, t] = h
    return hseq, gates


def _gru_sequence_grad(h0, rk, mask, hseq, gates, dhseq, activation, recurrent_activation):
    batch, time = hseq.shape[:2]
    units = rk.shape[0]
    act_d, ract_d = ACTIVATIONS[activation][1], ACTIVATIONS[recurrent_activation][1]
    da = np.zeros(gates.shape, np.float32)
    dh = np.zeros((batch, units), np.float32)
    for t in reversed(range(time)):
        h = _previous(hseq, h0, t)
        dh = dh + dhseq[:, t]
        z, r, hh = gates[:, t, :units], gates[:, t, units : 2 * units], gates[:, t, 2 * units :]
        da_z = dh * (h - hh) * ract_d(z)
        da_h = dh * (1 - z) * act_d(hh)
        dq = da_h @ rk[:, 2 * units :].T
        da_r = dq * h * ract_d(r)
        da_zr = np.concatenate([da_z, da_r], axis=1)
        step = _steps(mask, t)
        da[:, t] = np.where(step, np.concatenate([da_zr, da_h], axis=1), 0)
        dh = np.where(step, dh * z + dq * r + da_zr @ rk[:, : 2 * units].T, dh)
    return da, dh


# ---- SimpleRNN: h' = act(xw + h @ rk)


def _simple_rnn_sequence(xw, h0, rk, mask, activation):
    time = xw.shape[1]
    act = ACTIVATIONS[activation][0]
    hseq = np.empty(xw.shape, np.float32)
    h = h0
    for t in range(time):
        h = np.where(_steps(mask, t), act(xw[:, t] + h @ rk), h)
        hseq[:, t] = h
    return hseq


def _simple_rnn_sequence_grad(rk, mask, hseq, dhseq, activation):
    batch, time, units = hseq.shape
    act_d = ACTIVATIONS[activation][1]
    da = np.zeros(hseq.shape, np.float32)
    dh = np.zeros((batch, units), np.float32)
    for t in reversed(range(time)):
        dh = dh + dhseq[:, t]
        da_t = dh * act_d(hseq[:, t])
        step = _steps(mask, t)
        da[:, t] = np.where(step, da_t, 0)
        dh = np.where(step, da_t @ rk.T, dh)
    return da, dh


register_kernel("LSTMSequence", "numpy", _lstm_sequence)
register_kernel("LSTMSequenceGrad", "numpy", _lstm_sequence_grad)
register_kernel("GRUSequence", "numpy", _gru_sequence)
register_kernel("GRUSequenceGrad", "numpy", _gru_sequence_grad)
register_kernel("SimpleRNNSequence", "numpy", _simple_rnn_sequence)
register_kernel("SimpleRNNSequenceGrad", "numpy", _simple_rnn_sequence_grad)
