"""Finite-difference gradient checks for ops."""

import numpy as np

import py_engine as pe


def check_gradients(f, *arrays, eps=1e-3, rtol=1e-2, atol=5e-3, seed=0):
    """Compare pe.grads of sum(f(*xs) * w), w random, with central differences on each input.

    Inputs must keep clear of kinks (relu at 0, ties in max) by more than eps.
    Also checks that computing the gradients leaves no tensor behind.
    """
    arrays = [np.asarray(a, np.float32) for a in arrays]
    xs = [pe.tensor(a) for a in arrays]
    probe = f(*xs)
    w_host = np.random.default_rng(seed).normal(size=probe.shape).astype(np.float32)
    pe.dispose(probe)
    w = pe.tensor(w_host)

    def loss(*ts):
        return (f(*ts) * w).sum()

    before = pe.memory().num_tensors
    analytic = pe.grads(loss)(*xs)
    assert pe.memory().num_tensors == before + len(xs), "the gradient computation leaked tensors"

    def loss_at(host):
        ts = [pe.tensor(a) for a in host]
        value = pe.tidy(lambda: loss(*ts)).item()
        pe.dispose(ts)
        return np.float64(value)

    for i, a in enumerate(arrays):
        numeric = np.zeros(a.shape, np.float64)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (loss_at(plus) - loss_at(minus)) / (2 * eps)
        np.testing.assert_allclose(analytic[i].numpy(), numeric, rtol=rtol, atol=atol, err_msg=f"input {i}")
    pe.dispose([xs, w, analytic])
