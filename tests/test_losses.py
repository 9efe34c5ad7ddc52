"""Losses: values against TF.js 4.22's formulas written in numpy (with its clipping), on numpy and webgpu;
finite-difference gradients; check / check_labels errors; get(); no tensor left behind."""

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import DTypeError, ShapeError
from py_engine.train import losses
from tests.gradcheck import check_gradients

# ---- TF.js's formulas (tfjs-layers/src/losses.ts), float64 after float32 clipping -------------------------

LO, HI = np.float32(1e-7), np.float32(1 - 1e-7)  # TF.js clips to [epsilon, 1 - epsilon] in float32


def clip(p):
    return np.clip(np.asarray(p, np.float32), LO, HI).astype(np.float64)


def np_mse(t, p):
    return np.mean(np.square(np.float64(p) - t), -1)


def np_mae(t, p):
    return np.mean(np.abs(np.float64(p) - t), -1)


def np_huber(t, p, delta=1.0):  # Keras's formula (TF.js layers has no Huber)
    e = np.float64(p) - t
    return np.mean(np.where(np.abs(e) <= delta, 0.5 * e * e, delta * np.abs(e) - 0.5 * delta * delta), -1)


def np_sigmoid_ce_with_logits(z, x):  # max(x, 0) - x z + log(1 + exp(-|x|))
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def np_bce(t, p):
    y = clip(p)
    return np.mean(np_sigmoid_ce_with_logits(t, np.log(y / (1 - y))), -1)


def np_bce_logits(t, x):
    return np.mean(np_sigmoid_ce_with_logits(t, np.float64(x)), -1)


def np_cce(t, p):
    p = np.asarray(p, np.float32)
    return -np.sum(t * np.log(clip(p / p.sum(-1, keepdims=True))), -1)


def np_log_softmax(x):
    x = np.float64(x)
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def np_cce_logits(t, x):
    return -np.sum(t * np_log_softmax(x), -1)


def np_one_hot(labels, p):
    flat = np.floor(np.asarray(labels, np.float64)).astype(int).ravel()
    return np.eye(p.shape[-1])[flat].reshape(p.shape)


def np_scce(labels, p):
    return np_cce(np_one_hot(labels, p), clip(p).astype(np.float32))


def np_scce_logits(labels, x):
    return np_cce_logits(np_one_hot(labels, x), x)


# ---- data: interior values, extreme probabilities (exact 0 and 1), exact 0.5 ----------------------------

rng = np.random.default_rng(7)
PROBS = np.concatenate(
    [
        rng.uniform(0.05, 1.0, (4, 4)),
        [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]],
    ]
).astype(np.float32)  # (7, 4): rows need not sum to 1 (categorical normalises them)
ONE_HOT = np.eye(4, dtype=np.float32)[[2, 0, 3, 1, 0, 1, 1]]  # row 4 predicts class 1 with p = 1: wrong at 1e-7
LABELS = np.array([2, 0, 3, 1, 0, 1, 1], np.int32)
BINARY_TRUE = (rng.uniform(size=(7, 4)) > 0.5).astype(np.float32)
LOGITS = rng.normal(0, 3, (7, 4)).astype(np.float32)
LOGITS[0] = [40.0, -40.0, 0.0, 0.0]  # large logits: the stable forms must not overflow
REGRESSION_TRUE = rng.normal(0, 2, (7, 4)).astype(np.float32)

CASES = {  # name: (loss object, per-example function, numpy formula, y_true, y_pred)
    "mse": (losses.MeanSquaredError(), losses.mean_squared_error, np_mse, REGRESSION_TRUE, LOGITS),
    "mae": (losses.MeanAbsoluteError(), losses.mean_absolute_error, np_mae, REGRESSION_TRUE, LOGITS),
    "huber": (losses.Huber(), losses.huber, np_huber, REGRESSION_TRUE, LOGITS),
    "bce": (losses.BinaryCrossentropy(), losses.binary_crossentropy, np_bce, BINARY_TRUE, PROBS),
    "bce_logits": (
        losses.BinaryCrossentropy(from_logits=True),
        lambda t, p: losses.binary_crossentropy(t, p, from_logits=True),
        np_bce_logits,
        BINARY_TRUE,
        LOGITS,
    ),
    "cce": (losses.CategoricalCrossentropy(), losses.categorical_crossentropy, np_cce, ONE_HOT, PROBS),
    "cce_logits": (
        losses.CategoricalCrossentropy(from_logits=True),
        lambda t, p: losses.categorical_crossentropy(t, p, from_logits=True),
        np_cce_logits,
        ONE_HOT,
        LOGITS,
    ),
    "scce": (losses.SparseCategoricalCrossentropy(), losses.sparse_categorical_crossentropy, np_scce, LABELS, PROBS),
    "scce_logits": (
        losses.SparseCategoricalCrossentropy(from_logits=True),
        lambda t, p: losses.sparse_categorical_crossentropy(t, p, from_logits=True),
        np_scce_logits,
        LABELS,
        LOGITS,
    ),
}


def close(t, expected, rtol=1e-5, atol=1e-6):
    assert t.dtype == "float32", t.dtype
    got = t.numpy()
    assert got.shape == np.shape(expected), f"shape {got.shape}, expected {np.shape(expected)}"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_match_tfjs_formulas(each_backend, case):
    loss, fn, formula, y_true, y_pred = CASES[case]
    expected = formula(y_true, y_pred)
    close(fn(y_true, y_pred), expected)
    close(loss.per_example(pe.tensor(y_true), pe.tensor(y_pred)), expected)
    close(loss(y_true, y_pred), np.mean(expected))  # the batch mean, what fit minimises
    close(loss(y_true[:1], y_pred[:1]), np.mean(expected[:1]))  # a batch of one
    close(fn(y_true[:1], y_pred[:1]), expected[:1])


def test_extreme_probabilities_are_clipped_as_tfjs(each_backend):
    """p = 0 or 1 gives -log(1e-7) = 16.118 where wrong and ~1e-7 where right, never inf or NaN."""
    wrong = -np.log(np.float64(LO))
    right = -np.log(np.float64(HI))
    p = np.array([[0.0, 1.0, 0.0]], np.float32)
    close(losses.categorical_crossentropy([[1.0, 0.0, 0.0]], p), [wrong], rtol=1e-6)
    close(losses.categorical_crossentropy([[0.0, 1.0, 0.0]], p), [right], rtol=0, atol=5e-7)  # WGSL log: 2^-21 near 1
    close(losses.sparse_categorical_crossentropy([0], p), [wrong], rtol=1e-6)
    # sparse clips before it normalises (TF.js), so an all-zero row is uniform, not 0 / 0
    close(losses.sparse_categorical_crossentropy([2], [[0.0, 0.0, 0.0, 0.0]]), [np.log(4.0)], rtol=1e-6)
    expected = np_bce(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]], np.float32))  # both wrong, each clipped
    close(losses.binary_crossentropy([[1.0, 0.0]], [[0.0, 1.0]]), expected, rtol=1e-5)
    assert 15.9 < expected[0] < 16.2


def test_sparse_takes_int_or_float_labels_with_or_without_a_trailing_axis(each_backend):
    expected = np_scce(LABELS, PROBS)
    for labels in (LABELS, LABELS.astype(np.float32), LABELS[:, None], LABELS[:, None].astype(np.float32)):
        close(losses.sparse_categorical_crossentropy(labels, PROBS), expected)
        close(losses.sparse_categorical_crossentropy(pe.tensor(labels), pe.tensor(PROBS)), expected)


def test_labels_of_any_numeric_dtype(each_backend):
    t = BINARY_TRUE
    expected = np_bce(t, PROBS)
    for labels in (t.astype(np.int32), t.astype(bool), pe.tensor(t.astype(np.int32))):
        close(losses.binary_crossentropy(labels, PROBS), expected)
    close(losses.categorical_crossentropy(ONE_HOT.astype(np.int32), PROBS), np_cce(ONE_HOT, PROBS))


def test_from_logits_equals_the_probability_form_on_softmax_and_sigmoid():
    x = rng.normal(0, 1, (5, 3)).astype(np.float32)
    soft = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    t = np.eye(3, dtype=np.float32)[[0, 2, 1, 1, 0]]
    close(losses.categorical_crossentropy(t, x, from_logits=True), np_cce(t, soft), rtol=1e-5)
    close(losses.sparse_categorical_crossentropy([0, 2, 1, 1, 0], x, from_logits=True), np_cce(t, soft), rtol=1e-5)
    close(losses.binary_crossentropy(t, x, from_logits=True), np_bce(t, 1 / (1 + np.exp(-x))), rtol=1e-4)


def test_huber_delta():
    close(losses.huber(REGRESSION_TRUE, LOGITS, delta=2.5), np_huber(REGRESSION_TRUE, LOGITS, 2.5))
    close(losses.Huber(delta=0.5)(REGRESSION_TRUE, LOGITS), np.mean(np_huber(REGRESSION_TRUE, LOGITS, 0.5)))
    for bad in (0, -1.0, "1", None):
        with pytest.raises(ValueError, match="delta must be a positive number"):
            losses.Huber(delta=bad)


# ---- gradients ----------------------------------------------------------------------------------------

GRAD_PROBS = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)  # clear of the clipping bounds by far more than eps
GRAD_LOGITS = rng.normal(0, 2, (3, 4)).astype(np.float32)
GRAD_TRUE = rng.normal(0, 1, (3, 4)).astype(np.float32)
GRAD_TRUE[np.abs(GRAD_TRUE - GRAD_LOGITS) < 0.05] += 0.2  # mae: |y_pred - y_true| clear of its kink at 0
GRAD_CASES = {
    "mse": (losses.MeanSquaredError(), GRAD_TRUE, GRAD_LOGITS),
    "mae": (losses.MeanAbsoluteError(), GRAD_TRUE, GRAD_LOGITS),
    "huber": (losses.Huber(delta=1.0), GRAD_TRUE, GRAD_LOGITS),
    "bce": (losses.BinaryCrossentropy(), BINARY_TRUE[:3], GRAD_PROBS),
    "bce_logits": (losses.BinaryCrossentropy(from_logits=True), BINARY_TRUE[:3], GRAD_LOGITS),
    "cce": (losses.CategoricalCrossentropy(), ONE_HOT[:3], GRAD_PROBS),
    "cce_logits": (losses.CategoricalCrossentropy(from_logits=True), ONE_HOT[:3], GRAD_LOGITS),
    "scce": (losses.SparseCategoricalCrossentropy(), LABELS[:3], GRAD_PROBS),
    "scce_float_labels": (losses.SparseCategoricalCrossentropy(), LABELS[:3].astype(np.float32), GRAD_PROBS),
    "scce_logits": (losses.SparseCategoricalCrossentropy(from_logits=True), LABELS[:3], GRAD_LOGITS),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_finite_differences(case):
    loss, y_true, y_pred = GRAD_CASES[case]
    check_gradients(lambda p: loss.per_example(y_true, p), y_pred)
    check_gradients(lambda p: loss(y_true, p), y_pred)  # through the batch mean too
    check_gradients(lambda p: loss.per_example(y_true[:1], p), y_pred[:1])  # a batch of one


def _grad(loss, y_true, y_pred):
    g = pe.grad(lambda p: loss(y_true, p))(pe.tensor(y_pred))
    out = g.numpy()
    g.dispose()
    return out


def test_binary_gradient_is_right_at_one_half_and_zero_where_clipped():
    """At p = 0.5 the logit is exactly 0, where relu's and abs's gradients are not the slope: the loss must
    still give (p - t) / (p (1 - p)) / n. At p = 0 and 1 the clip stops the gradient, as in TF.js."""
    p = np.array([[0.5, 0.5, 0.0, 1.0]], np.float32)
    t = np.array([[1.0, 0.0, 1.0, 0.0]], np.float32)
    np.testing.assert_allclose(_grad(losses.BinaryCrossentropy(), t, p), [[-0.5, 0.5, 0.0, 0.0]], atol=1e-6)
    x = np.zeros((1, 2), np.float32)
    np.testing.assert_allclose(
        _grad(losses.BinaryCrossentropy(from_logits=True), [[1.0, 0.0]], x), [[-0.25, 0.25]], atol=1e-7
    )


def test_categorical_gradient_is_finite_at_extreme_probabilities():
    g = _grad(losses.CategoricalCrossentropy(), [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    assert np.isfinite(g).all()
    g = _grad(losses.CategoricalCrossentropy(from_logits=True), [[1.0, 0.0, 0.0]], [[80.0, -80.0, 0.0]])
    np.testing.assert_allclose(g, [[0.0, 0.0, 0.0]], atol=1e-6)


# ---- memory ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_loss_leaves_only_its_result(each_backend, case):
    loss, fn, _, y_true, y_pred = CASES[case]
    t, p = pe.tensor(y_true), pe.tensor(y_pred)
    for inputs in ((t, p), (y_true, y_pred)):
        for call in (loss, loss.per_example, fn):
            before = pe.memory()
            out = call(*inputs)
            after = pe.memory()
            assert after.num_tensors == before.num_tensors + 1, f"{case} {call}"
            assert after.num_bytes == before.num_bytes + out.size * 4, f"{case} {call}"
            out.dispose()
    assert pe.memory().num_tensors == 2
    pe.dispose([t, p])


def test_a_failing_loss_leaves_nothing():
    before = pe.memory().num_tensors
    with pytest.raises(ShapeError):
        losses.mean_squared_error(np.zeros((8,), np.float32), np.zeros((8, 1), np.float32))
    with pytest.raises(ShapeError):
        losses.sparse_categorical_crossentropy(np.zeros((8, 4), np.int32), np.ones((8, 4), np.float32))
    assert pe.memory().num_tensors == before


# ---- check and check_labels ------------------------------------------------------------------------------


def test_categorical_check_names_both_shapes_and_suggests_sparse():
    loss = losses.CategoricalCrossentropy()
    loss.check((8, 4), "float32", (None, 4))
    with pytest.raises(ShapeError, match=r"y_true of shape \(8, 3\).*y_pred of shape \(8, 4\).*sparse_categorical"):
        loss.check((8, 3), "float32", (8, 4))
    with pytest.raises(
        ShapeError,
        match=r"\(8,\) does not fit.*\(None, 4\).*labels \(shape \(8,\) or \(8, 1\)\) use sparse_categorical_crossentropy",
    ):
        loss.check((8,), "int32", (None, 4))
    with pytest.raises(ShapeError, match=r"one class.*always 0.*binary_crossentropy"):
        loss.check((8, 1), "float32", (None, 1))


def test_binary_check_names_the_last_axis():
    loss = losses.BinaryCrossentropy()
    loss.check((8, 1), "int32", (None, 1))
    loss.check((8, 1), "bool", (None, 1))
    with pytest.raises(ShapeError, match=r"last axis has 10 units.*y_true's has 1.*sparse_categorical"):
        loss.check((8, 1), "float32", (None, 10))
    with pytest.raises(ShapeError, match=r"reshape y_true to \(8, 1\)"):
        loss.check((8,), "float32", (None, 1))


def test_regression_check_refuses_broadcasting_labels():
    for loss in (losses.MeanSquaredError(), losses.MeanAbsoluteError(), losses.Huber()):
        loss.check((8, 2), "float64", (None, 2))
        with pytest.raises(ShapeError, match=rf"{loss.name}: y_true of shape \(8,\).*\(8, 1\).*reshape"):
            loss.check((8,), "float32", (None, 1))
        with pytest.raises(ShapeError, match=r"8 examples.*has 6"):
            loss.check((8, 2), "float32", (6, 2))


def test_sparse_check_refuses_labels_of_the_wrong_rank():
    loss = losses.SparseCategoricalCrossentropy()
    loss.check((8,), "int32", (None, 4))
    loss.check((8, 1), "float32", (None, 4))
    loss.check((8, 5), "int64", (None, 5, 3))
    with pytest.raises(ShapeError, match=r"\(8, 4\).*one integer class label per example.*look one-hot"):
        loss.check((8, 4), "float32", (None, 4))
    with pytest.raises(ShapeError, match=r"y_true of shape \(8, 2, 3\) does not fit y_pred of shape \(None, 4\)"):
        loss.check((8, 2, 3), "int32", (None, 4))


def test_check_refuses_non_numeric_labels():
    for loss in (losses.MeanSquaredError(), losses.SparseCategoricalCrossentropy()):
        with pytest.raises(DTypeError, match=rf"{loss.name}: y_true has dtype .*labels must be numbers"):
            loss.check((8,), np.dtype("U3"), (None, 4))


def test_check_labels_names_the_first_bad_label():
    loss = losses.SparseCategoricalCrossentropy()
    loss.check_labels(np.array([0, 3, 1, 2]), 4)
    loss.check_labels(np.array([[0.0], [3.0]]), 4)
    with pytest.raises(ValueError, match=r"label 4 at y_true\[2\] is outside \[0, 4\)"):
        loss.check_labels(np.array([0, 3, 4, -1]), 4)
    with pytest.raises(ValueError, match=r"label -1 at y_true\[1, 0\] is outside \[0, 3\)"):
        loss.check_labels(np.array([[0], [-1], [5]]), 3)
    with pytest.raises(ValueError, match=r"label 1.5 at y_true\[1\] is not an integer"):
        loss.check_labels(np.array([1.0, 1.5, 7.0], np.float32), 4)
    with pytest.raises(ValueError, match=r"label nan at y_true\[0\] is not an integer"):
        loss.check_labels(np.array([np.nan, 1.0]), 4)
    with pytest.raises(ValueError, match="num_classes must be a positive int"):
        loss.check_labels(np.array([0]), 0)
    assert not hasattr(losses.CategoricalCrossentropy(), "check_labels")  # only the sparse loss takes class labels


def test_checks_read_no_tensor(monkeypatch):
    """check and check_labels work on host values only (fit calls them before training)."""
    monkeypatch.setattr(pe.Tensor, "numpy", lambda self: pytest.fail("a check read a tensor back"))
    loss = losses.SparseCategoricalCrossentropy()
    loss.check((8,), "int32", (None, 4))
    loss.check_labels(np.arange(8) % 4, 4)


# ---- get, names, configs -----------------------------------------------------------------------------------

RESOLUTION = {  # identifier: (class, Keras name, TF.js name)
    "mse": (losses.MeanSquaredError, "mean_squared_error", "meanSquaredError"),
    "mean_squared_error": (losses.MeanSquaredError, "mean_squared_error", "meanSquaredError"),
    "meanSquaredError": (losses.MeanSquaredError, "mean_squared_error", "meanSquaredError"),
    "MeanSquaredError": (losses.MeanSquaredError, "mean_squared_error", "meanSquaredError"),
    "mae": (losses.MeanAbsoluteError, "mean_absolute_error", "meanAbsoluteError"),
    "mean_absolute_error": (losses.MeanAbsoluteError, "mean_absolute_error", "meanAbsoluteError"),
    "meanAbsoluteError": (losses.MeanAbsoluteError, "mean_absolute_error", "meanAbsoluteError"),
    "huber": (losses.Huber, "huber", None),
    "Huber": (losses.Huber, "huber", None),
    "binary_crossentropy": (losses.BinaryCrossentropy, "binary_crossentropy", "binaryCrossentropy"),
    "binaryCrossentropy": (losses.BinaryCrossentropy, "binary_crossentropy", "binaryCrossentropy"),
    "categorical_crossentropy": (losses.CategoricalCrossentropy, "categorical_crossentropy", "categoricalCrossentropy"),
    "categoricalCrossentropy": (losses.CategoricalCrossentropy, "categorical_crossentropy", "categoricalCrossentropy"),
    "sparse_categorical_crossentropy": (
        losses.SparseCategoricalCrossentropy,
        "sparse_categorical_crossentropy",
        "sparseCategoricalCrossentropy",
    ),
    "sparseCategoricalCrossentropy": (
        losses.SparseCategoricalCrossentropy,
        "sparse_categorical_crossentropy",
        "sparseCategoricalCrossentropy",
    ),
    losses.mean_squared_error: (losses.MeanSquaredError, "mean_squared_error", "meanSquaredError"),
    losses.mse: (losses.MeanSquaredError, "mean_squared_error", "meanSquaredError"),
    losses.sparse_categorical_crossentropy: (
        losses.SparseCategoricalCrossentropy,
        "sparse_categorical_crossentropy",
        "sparseCategoricalCrossentropy",
    ),
    losses.CategoricalCrossentropy: (
        losses.CategoricalCrossentropy,
        "categorical_crossentropy",
        "categoricalCrossentropy",
    ),
}


@pytest.mark.parametrize("identifier", list(RESOLUTION), ids=str)
def test_get_resolves_keras_tfjs_and_class_names(identifier):
    cls, name, tfjs_name = RESOLUTION[identifier]
    loss = losses.get(identifier)
    assert type(loss) is cls
    assert (loss.name, loss.tfjs_name) == (name, tfjs_name)
    assert loss.get_config()["name"] == name


def test_get_keeps_a_loss_and_wraps_a_function():
    loss = losses.CategoricalCrossentropy(from_logits=True)
    assert losses.get(loss) is loss
    assert loss.get_config() == {"name": "categorical_crossentropy", "from_logits": True}
    assert losses.Huber(2.0).get_config() == {"name": "huber", "delta": 2.0}
    assert losses.MeanSquaredError().get_config() == {"name": "mean_squared_error"}

    def squared_log_error(y_true, y_pred):
        return pe.mean(pe.square(pe.log1p(y_pred) - pe.log1p(y_true)), -1)

    wrapped = losses.get(squared_log_error)
    assert isinstance(wrapped, losses.Loss)
    assert (wrapped.name, wrapped.tfjs_name) == ("squared_log_error", None)
    t, p = np.full((4, 2), 1.0, np.float32), np.full((4, 2), 3.0, np.float32)
    close(wrapped.per_example(t, p), np.full(4, np.log(2.0) ** 2))
    close(wrapped(t, p), np.log(2.0) ** 2)

    def total_error(y_true, y_pred):  # a scalar already: its mean is itself
        return pe.sum(pe.abs(pe.tensor(y_pred) - y_true))

    close(losses.get(total_error)(t, p), 16.0)


def test_a_custom_loss_must_give_float32_losses():
    def count_wrong(y_true, y_pred):
        return pe.sum(pe.cast(pe.not_equal(pe.tensor(y_true), pe.tensor(y_pred)), "int32"), -1)

    before = pe.memory().num_tensors
    with pytest.raises(TypeError, match=r"loss count_wrong: must return a float32 tensor.*int32"):
        losses.get(count_wrong)(np.zeros((2, 2)), np.ones((2, 2)))
    assert pe.memory().num_tensors == before


def test_get_refuses_unknown_names_listing_the_known_ones():
    with pytest.raises(
        ValueError, match=r"unknown loss 'softmax_crossentropy'; known losses: .*categoricalCrossentropy.*mse"
    ):
        losses.get("softmax_crossentropy")
    with pytest.raises(TypeError, match="expected a loss name, a Loss or a function"):
        losses.get(3)
