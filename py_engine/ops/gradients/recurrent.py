"""Gradients of the ops in py_engine/ops/recurrent.py: one backward kernel over the whole sequence, then
recurrent_kernel's gradient as one matmul over all steps."""

from ...engine import ENGINE
from ...kernel_registry import register_gradient
from ..linalg import matmul
from ..shape import concat, reshape


def _previous_h(h0, hseq):
    """[batch, time, units]: the h each step started from (h0, then the outputs but the last)."""
    batch, time, units = hseq.shape
    first = reshape(h0, (batch, 1, units))
    return first if time == 1 else concat([first, hseq[:, :-1]], axis=1)


def _weight_grad(inputs, grads):
    """sum over batch and time of inputs^T @ grads: one matmul over every step."""
    batch, time = inputs.shape[:2]
    rows = batch * time
    return matmul(reshape(inputs, (rows, inputs.shape[2])), reshape(grads, (rows, grads.shape[2])), transpose_a=True)


def _lstm_grad(dseq, ins, outs, attrs):
    xw, state0, rk, mask = ins
    (seq,) = outs
    dz, dstate0 = ENGINE.run_kernel("LSTMSequenceGrad", (xw, state0, rk, mask, seq, dseq), attrs)
    units = rk.shape[0]
    return dz, dstate0, _weight_grad(_previous_h(state0[:, :units], seq[:, :, :units]), dz), None


def _gru_grad(dys, ins, outs, attrs):
    _, h0, rk, mask = ins
    hseq, gates = outs
    da, dh0 = ENGINE.run_kernel("GRUSequenceGrad", (h0, rk, mask, hseq, gates, dys[0]), attrs)
    units = rk.shape[0]
    h_previous = _previous_h(h0, hseq)
    dk_zr = _weight_grad(h_previous, da[:, :, : 2 * units])
    dk_h = _weight_grad(gates[:, :, units : 2 * units] * h_previous, da[:, :, 2 * units :])
    return da, dh0, concat([dk_zr, dk_h], axis=1), None


def _simple_rnn_grad(dhseq, ins, outs, attrs):
    _, h0, rk, mask = ins
    (hseq,) = outs
    da, dh0 = ENGINE.run_kernel("SimpleRNNSequenceGrad", (rk, mask, hseq, dhseq), attrs)
    return da, dh0, _weight_grad(_previous_h(h0, hseq), da), None


register_gradient("LSTMSequence", _lstm_grad)
register_gradient("GRUSequence", _gru_grad)
register_gradient("SimpleRNNSequence", _simple_rnn_grad)
