"""masked_softmax and the linear-chain CRF (crf_log_likelihood, its gradient, crf_decode) on numpy and webgpu:
against numpy formulas and brute-force enumeration of every tag sequence, finite differences, clear errors."""

import itertools

import numpy as np
import pytest

import py_engine as pe
from py_engine import DTypeError, ShapeError
from tests.gradcheck import check_gradients


def reference_masked_softmax(x, mask, axis=-1):
    x = np.asarray(x, np.float64)
    keep = np.broadcast_to(mask, x.shape)
    shifted = np.where(keep, x, -np.inf)
    m = np.max(shifted, axis=axis, keepdims=True)
    e = np.where(keep, np.exp(shifted - np.where(np.isfinite(m), m, 0)), 0)
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1)


# ---- masked_softmax ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "mask_shape", "axis"),
    [
        ((4, 9), (4, 9), -1),
        ((3, 5, 7), (5, 7), -1),  # the mask lacks the leading axis
        ((2, 3, 4, 4), (2, 1, 1, 4), -1),  # attention scores with a padding mask
        ((6, 5), (6, 1), 0),
        ((3, 130, 2), (3, 130, 1), 1),  # rows longer than a workgroup, not the last axis
    ],
)
def test_masked_softmax_matches_numpy(each_backend, rng, shape, mask_shape, axis):
    x = rng.normal(size=shape).astype(np.float32)
    mask = rng.random(mask_shape) < 0.6
    y = pe.masked_softmax(x, mask, axis)
    assert y.shape == shape and y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), reference_masked_softmax(x, mask, axis), rtol=1e-5, atol=1e-7)
    assert (y.numpy()[~np.broadcast_to(mask, shape)] == 0).all()  # exactly zero, not tiny


def test_masked_rows_are_zeros_never_nan(each_backend):
    x = np.array([[1.0, 2.0, 3.0], [np.nan, 5.0, -np.inf], [-np.inf, -np.inf, 0.0], [4.0, 4.0, 4.0]], np.float32)
    mask = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 0], [1, 0, 1]], bool)
    got = pe.masked_softmax(x, mask).numpy()
    want = [[0, 0, 0], [0, 1, 0], [0, 0, 0], [0.5, 0, 0.5]]  # NaN under the mask is ignored; only -inf kept: zeros
    np.testing.assert_allclose(got, want, atol=1e-7)
    assert not np.isnan(got).any()


def test_a_mask_may_be_int_or_float(each_backend):
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    want = pe.masked_softmax(x, np.array([[True, False, True]])).numpy()
    np.testing.assert_array_equal(pe.masked_softmax(x, np.array([[3, 0, -1]], np.int32)).numpy(), want)
    np.testing.assert_array_equal(pe.masked_softmax(x, pe.tensor([[0.5, 0.0, 2.0]])).numpy(), want)


def test_masked_softmax_gradient_matches_finite_differences(each_backend):
    mask = pe.tensor(np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], bool))
    x = np.array([[0.3, -1.2, 0.8, 0.1], [1.0, 2.0, -1.0, 0.5], [-0.7, 0.4, 1.5, -0.2]])
    check_gradients(lambda t: pe.masked_softmax(t, mask), x)
    pe.dispose(mask)


def test_masked_softmax_errors_name_the_shapes():
    with pytest.raises(ShapeError, match=r"mask of shape \(3, 4\) does not broadcast to the logits' shape \(2, 4\)"):
        pe.masked_softmax(np.zeros((2, 4)), np.ones((3, 4), bool))
    with pytest.raises(ShapeError, match=r"reshape it to \[B, 1, 1, T\]"):
        pe.masked_softmax(np.zeros((2, 3, 4, 4)), np.ones((2, 4), bool))
    with pytest.raises(ShapeError, match="scalar"):
        pe.masked_softmax(1.0, True)
    with pytest.raises(ShapeError, match="axis 2 is out of range"):
        pe.masked_softmax(np.zeros((2, 4)), np.ones((2, 4), bool), axis=2)


# ---- the CRF against brute force ---------------------------------------------------------------

B, T, K = 3, 4, 3
LENGTHS = np.array([4, 0, 2], np.int32)  # T, 0 and in between


def crf_problem(seed=0):
    rng = np.random.default_rng(seed)
    emissions = rng.normal(size=(B, T, K)).astype(np.float32)
    transitions = rng.normal(size=(K, K)).astype(np.float32)
    tags = rng.integers(0, K, (B, T)).astype(np.int32)
    return emissions, tags, transitions


def path_score(emissions, transitions, path):
    score = sum(float(emissions[t, y]) for t, y in enumerate(path))
    return score + sum(float(transitions[a, b]) for a, b in itertools.pairwise(path))


def enumerate_crf(emissions, tags, transitions, lengths):
    """By enumerating every tag sequence of each length: log-likelihood, d/d emissions and d/d transitions of
    the summed log-likelihood (gold counts - expected counts), the best path and its score."""
    loglik, d_emissions = np.zeros(B), np.zeros((B, T, K))
    d_transitions, best = np.zeros((K, K)), []
    for b, n in enumerate(lengths):
        paths = list(itertools.product(range(K), repeat=int(n)))
        scores = np.array([path_score(emissions[b], transitions, p) for p in paths])
        probs = np.exp(scores - np.logaddexp.reduce(scores))
        loglik[b] = path_score(emissions[b], transitions, tags[b, :n]) - np.logaddexp.reduce(scores)
        for t in range(n):
            d_emissions[b, t, tags[b, t]] += 1
        for t in range(1, n):
            d_transitions[tags[b, t - 1], tags[b, t]] += 1
        for p, prob in zip(paths, probs):
            for t, y in enumerate(p):
                d_emissions[b, t, y] -= prob
            for u, v in itertools.pairwise(p):
                d_transitions[u, v] -= prob
        top = int(np.argmax(scores))
        best.append((list(paths[top]) + [0] * (T - n), scores[top] if n else 0.0))
    return loglik, d_emissions, d_transitions, best


def test_crf_log_likelihood_and_gradients_equal_enumeration(each_backend):
    emissions, tags, transitions = crf_problem()
    loglik, d_emissions, d_transitions, _ = enumerate_crf(emissions, tags, transitions, LENGTHS)
    got = pe.crf_log_likelihood(emissions, tags, transitions, LENGTHS)
    assert got.shape == (B,) and got.dtype == "float32"
    np.testing.assert_allclose(got.numpy(), loglik, rtol=1e-5, atol=1e-5)
    assert got.numpy()[1] == 0  # an empty sequence
    e, a = pe.tensor(emissions), pe.tensor(transitions)
    ge, ga = pe.grads(lambda e, a: pe.crf_log_likelihood(e, tags, a, LENGTHS).sum())(e, a)
    np.testing.assert_allclose(ge.numpy(), d_emissions, atol=1e-5)
    np.testing.assert_allclose(ga.numpy(), d_transitions, atol=1e-5)
    pe.dispose([got, e, a, ge, ga])


def test_crf_decode_returns_the_best_sequence(each_backend):
    emissions, _, transitions = crf_problem(1)
    best = enumerate_crf(emissions, np.zeros((B, T), np.int32), transitions, LENGTHS)[3]
    path, scores = pe.crf_decode(emissions, transitions, LENGTHS)
    assert path.dtype == "int32" and path.shape == (B, T) and scores.shape == (B,)
    np.testing.assert_array_equal(path.numpy(), [p for p, _ in best])
    np.testing.assert_allclose(scores.numpy(), [s for _, s in best], rtol=1e-6, atol=1e-6)


def test_decoding_ties_go_to_the_lower_tag(each_backend):
    emissions = np.zeros((2, 3, 4), np.float32)
    emissions[1, :, 2:] = 1.0  # tags 2 and 3 tie at every step
    path, scores = pe.crf_decode(emissions, np.zeros((4, 4), np.float32))
    np.testing.assert_array_equal(path.numpy(), [[0, 0, 0], [2, 2, 2]])
    np.testing.assert_array_equal(scores.numpy(), [0.0, 3.0])


def test_lengths_default_to_every_step(each_backend):
    emissions, tags, transitions = crf_problem(2)
    full = np.full(B, T, np.int32)
    np.testing.assert_allclose(
        pe.crf_log_likelihood(emissions, tags, transitions).numpy(),
        pe.crf_log_likelihood(emissions, tags, transitions, full).numpy(),
    )
    np.testing.assert_array_equal(
        pe.crf_decode(emissions, transitions)[0].numpy(), pe.crf_decode(emissions, transitions, full)[0].numpy()
    )


def test_tags_past_a_length_are_ignored(each_backend):
    emissions, tags, transitions = crf_problem(3)
    padded = tags.copy()
    padded[2, 2:] = -1  # padding after the length-2 sequence
    np.testing.assert_array_equal(
        pe.crf_log_likelihood(emissions, padded, transitions, LENGTHS).numpy(),
        pe.crf_log_likelihood(emissions, tags, transitions, LENGTHS).numpy(),
    )


def test_forbidden_transitions_give_minus_inf_not_nan(each_backend):
    emissions, _, transitions = crf_problem(4)
    transitions[0, 1] = -np.inf
    tags = np.array([[0, 1, 1, 1], [0, 0, 0, 0], [2, 2, 0, 0]], np.int32)  # sequence 0 uses 0 -> 1
    lengths = np.array([4, 3, 2], np.int32)
    loglik = pe.crf_log_likelihood(emissions, tags, transitions, lengths).numpy()
    assert loglik[0] == -np.inf and np.isfinite(loglik[1:]).all()
    e = pe.tensor(emissions)
    ge = pe.grad(lambda e: pe.crf_log_likelihood(e, tags[1:], transitions, lengths[1:]).sum())(
        pe.slice(e, (1, 0, 0), (2, T, K))
    )
    assert np.isfinite(ge.numpy()).all()
    path = pe.crf_decode(emissions, transitions, lengths)[0].numpy()
    assert all((a, b) != (0, 1) for row, n in zip(path, lengths) for a, b in itertools.pairwise(row[:n]))
    pe.dispose([e, ge])


def test_crf_gradient_matches_finite_differences(each_backend):
    emissions, tags, transitions = crf_problem(5)
    check_gradients(lambda e, a: pe.crf_log_likelihood(e, tags, a, LENGTHS), emissions, transitions, eps=1e-2)


def test_many_tags_in_one_workgroup_per_sequence(each_backend, rng):
    """70 tags: more than the 64 threads each sequence gets on webgpu."""
    emissions = rng.normal(size=(2, 5, 70)).astype(np.float32)
    transitions = rng.normal(size=(70, 70)).astype(np.float32) * 0.1
    tags = rng.integers(0, 70, (2, 5)).astype(np.int32)
    e = emissions.astype(np.float64)
    alpha = e[:, 0]
    for t in range(1, 5):
        alpha = np.logaddexp.reduce(alpha[:, :, None] + transitions[None], axis=1) + e[:, t]
    gold = [path_score(e[b], transitions.astype(np.float64), tags[b]) for b in range(2)]
    want = np.array(gold) - np.logaddexp.reduce(alpha, axis=1)
    np.testing.assert_allclose(pe.crf_log_likelihood(emissions, tags, transitions).numpy(), want, rtol=1e-5)


# ---- errors ------------------------------------------------------------------------------------


def test_crf_errors_say_what_does_not_fit():
    emissions, tags, transitions = crf_problem()
    with pytest.raises(ShapeError, match=r"emissions must be \[batch, steps, tags\] \(rank 3\), got shape \(4, 3\)"):
        pe.crf_log_likelihood(emissions[0], tags, transitions)
    with pytest.raises(ShapeError, match=r"transitions must be \[tags, tags\] = \(3, 3\).*got shape \(3, 4\)"):
        pe.crf_decode(emissions, np.zeros((3, 4), np.float32))
    with pytest.raises(ShapeError, match=r"tags must be \[batch, steps\] = \(3, 4\).*got shape \(3, 5\)"):
        pe.crf_log_likelihood(emissions, np.zeros((3, 5), np.int32), transitions)
    with pytest.raises(ShapeError, match=r"lengths must be \[batch\] = \(3,\).*got shape \(2,\)"):
        pe.crf_decode(emissions, transitions, [1, 2])
    with pytest.raises(ShapeError, match="no tags"):
        pe.crf_decode(np.zeros((2, 3, 0), np.float32), np.zeros((0, 0), np.float32))


def test_crf_errors_name_bad_values_of_arrays_and_tensors():
    emissions, tags, transitions = crf_problem()
    bad = tags.copy()
    bad[2, 1] = 3
    with pytest.raises(ValueError, match=r"tags\[2, 1\] = 3 is outside \[0, 3\)"):
        pe.crf_log_likelihood(emissions, bad, transitions, LENGTHS)
    bad_tensor = pe.tensor(bad)
    with pytest.raises(ValueError, match=r"tags\[2, 1\] = 3 is outside"):
        pe.crf_log_likelihood(emissions, bad_tensor, transitions, pe.tensor(LENGTHS))
    with pytest.raises(ValueError, match=r"lengths\[1\] = 5 is outside \[0, 4\]"):
        pe.crf_decode(emissions, transitions, [4, 5, 0])
    with pytest.raises(ValueError, match=r"lengths\[0\] = -1 is outside"):
        pe.crf_log_likelihood(emissions, tags, transitions, pe.tensor([-1, 0, 0], dtype="int32"))
    pe.dispose(bad_tensor)


def test_crf_errors_name_wrong_dtypes():
    emissions, tags, transitions = crf_problem()
    with pytest.raises(DTypeError, match="tags must be int32, got a float32 tensor"):
        pe.crf_log_likelihood(emissions, pe.tensor(tags, dtype="float32"), transitions)
    with pytest.raises(DTypeError, match="tags must be int32"):
        pe.crf_log_likelihood(emissions, tags.astype(np.float32), transitions)
    with pytest.raises(DTypeError, match="emissions must be float32, got a int32 tensor"):
        pe.crf_decode(pe.tensor(np.zeros((1, 2, 2), np.int32)), transitions[:2, :2])
    with pytest.raises(DTypeError, match="lengths must be int32"):
        pe.crf_decode(emissions, transitions, [1.5, 2.0, 0.0])


def test_crf_ops_leave_only_their_results():
    emissions, tags, transitions = crf_problem()
    lengths = pe.tensor(LENGTHS)
    before = pe.memory().num_tensors
    pe.crf_log_likelihood(emissions, tags, transitions, lengths)
    pe.crf_decode(emissions, transitions, lengths)
    assert pe.memory().num_tensors == before + 3  # loglik, path and scores: no alphas, lattice or temporaries
