"""Metrics: values against numpy on numpy and webgpu (ties in argmax: the first index wins, as TF.js's argMax),
top-k, shape errors, get()'s resolution of "accuracy" as TF.js's compile, no tensor left behind."""

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import ShapeError
from py_engine.train import losses, metrics


def np_binary_accuracy(t, p, threshold=0.5):  # TF.js: mean(equal(y_true, cast(y_pred > threshold)), -1)
    return np.mean(np.float64(t) == (np.float64(p) > threshold), -1)


def np_categorical_accuracy(t, p):  # np.argmax also takes the first index on ties
    return (np.argmax(t, -1) == np.argmax(p, -1)).astype(np.float64)


def np_in_top_k(p, targets, k):  # tf.math.in_top_k: fewer than k classes score strictly higher than the target
    target_score = np.take_along_axis(p, targets[..., None], -1)
    return ((p > target_score).sum(-1) < k).astype(np.float64)


def close(t, expected):
    assert t.dtype == "float32", t.dtype
    got = t.numpy()
    assert got.shape == np.shape(expected), f"shape {got.shape}, expected {np.shape(expected)}"
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


rng = np.random.default_rng(3)
# Rows 0-2 tie for the maximum: the first index wins. Row 3 has a tie below the maximum.
SCORES = np.array(
    [
        [0.4, 0.4, 0.2, 0.0],
        [0.1, 0.3, 0.3, 0.3],
        [0.25, 0.25, 0.25, 0.25],
        [0.1, 0.6, 0.15, 0.15],
        *rng.uniform(size=(4, 4)),
    ],
    np.float32,
)
CLASSES = np.array([1, 1, 0, 2, 3, 0, 1, 2], np.int32)
ONE_HOT = np.eye(4, dtype=np.float32)[CLASSES]


def test_binary_accuracy(each_backend):
    t = (rng.uniform(size=(6, 3)) > 0.5).astype(np.float32)
    p = rng.uniform(size=(6, 3)).astype(np.float32)
    p[0] = [0.5, 0.5000001, 0.4999999]  # exactly 0.5 is not above the threshold
    close(metrics.binary_accuracy(t, p), np_binary_accuracy(t, p))
    close(metrics.binary_accuracy(t.astype(np.int32), p), np_binary_accuracy(t, p))
    close(metrics.binary_accuracy(pe.tensor(t.astype(bool)), pe.tensor(p)), np_binary_accuracy(t, p))
    close(metrics.binary_accuracy(t, p, threshold=0.7), np_binary_accuracy(t, p, 0.7))
    close(metrics.binary_accuracy(t[:1], p[:1]), np_binary_accuracy(t[:1], p[:1]))  # a batch of one


def test_categorical_accuracy_first_index_wins_ties(each_backend):
    expected = np_categorical_accuracy(ONE_HOT, SCORES)
    np.testing.assert_array_equal(expected[:4], [0, 1, 1, 0])  # rows 0-2: the tied class of lowest index
    close(metrics.categorical_accuracy(ONE_HOT, SCORES), expected)
    close(metrics.categorical_accuracy(ONE_HOT.astype(np.int32), pe.tensor(SCORES)), expected)
    close(metrics.categorical_accuracy([[0, 1, 0, 0]], [[0.4, 0.4, 0.2, 0.0]]), [0.0])
    close(metrics.categorical_accuracy([[1, 0, 0, 0]], [[0.4, 0.4, 0.2, 0.0]]), [1.0])


def test_sparse_categorical_accuracy(each_backend):
    expected = np_categorical_accuracy(ONE_HOT, SCORES)
    for labels in (CLASSES, CLASSES[:, None], CLASSES.astype(np.float32), pe.tensor(CLASSES[:, None])):
        close(metrics.sparse_categorical_accuracy(labels, SCORES), expected)
    close(metrics.sparse_categorical_accuracy([1], [[0.4, 0.4, 0.2, 0.0]]), [0.0])  # the tie goes to class 0
    close(metrics.sparse_categorical_accuracy([0.5], [[0.4, 0.4]]), [0.0])  # float labels compare as floats (TF.js)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_top_k_accuracy(each_backend, k):
    expected = np_in_top_k(SCORES, CLASSES, k)
    close(metrics.top_k_categorical_accuracy(ONE_HOT, SCORES, k=k), expected)
    close(metrics.sparse_top_k_categorical_accuracy(CLASSES, SCORES, k=k), expected)
    close(metrics.sparse_top_k_categorical_accuracy(CLASSES[:, None].astype(np.float32), SCORES, k=k), expected)


def test_top_k_counts_classes_tied_at_the_boundary():
    """As tf.math.in_top_k (Keras): class 3 ties class 2 for second place, so both are in the top 2."""
    p = [[0.1, 0.6, 0.15, 0.15]]
    close(metrics.sparse_top_k_categorical_accuracy([3], p, k=2), [1.0])
    close(metrics.sparse_top_k_categorical_accuracy([0], p, k=3), [0.0])
    close(metrics.top_k_categorical_accuracy([[0, 0, 1, 0]], p, k=2), [1.0])


def test_top_k_default_k_is_5():
    p = rng.uniform(size=(4, 7)).astype(np.float32)
    labels = np.array([0, 3, 6, 2], np.int32)
    close(metrics.sparse_top_k_categorical_accuracy(labels, p), np_in_top_k(p, labels, 5))
    close(metrics.top_k_categorical_accuracy(np.eye(7)[labels], p), np_in_top_k(p, labels, 5))


def test_k_larger_than_the_classes_is_refused():
    before = pe.memory().num_tensors
    with pytest.raises(ShapeError, match=r"k=5 is larger than the number of classes 4 .*\(8, 4\).*k <= 4"):
        metrics.top_k_categorical_accuracy(ONE_HOT, SCORES)
    with pytest.raises(ShapeError, match=r"sparse_top_k_categorical_accuracy: k=9 is larger than .* 4"):
        metrics.sparse_top_k_categorical_accuracy(CLASSES, SCORES, k=9)
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        metrics.sparse_top_k_categorical_accuracy(CLASSES, SCORES, k=0)
    with pytest.raises(TypeError, match="k must be an int"):
        metrics.sparse_top_k_categorical_accuracy(CLASSES, SCORES, k=2.5)
    assert pe.memory().num_tensors == before


def test_labels_that_do_not_fit_are_refused():
    with pytest.raises(
        ShapeError, match=r"binary_accuracy: y_true of shape \(8,\) does not fit y_pred of shape \(8, 1\)"
    ):
        metrics.binary_accuracy(np.zeros(8), np.zeros((8, 1)))
    with pytest.raises(ShapeError, match=r"categorical_accuracy: y_true of shape \(8,\) .*\(8, 4\)"):
        metrics.categorical_accuracy(CLASSES, SCORES)
    with pytest.raises(ShapeError, match=r"sparse_categorical_accuracy: y_true of shape \(8, 4\).*\(8,\) or \(8, 1\)"):
        metrics.sparse_categorical_accuracy(ONE_HOT, SCORES)


def test_regression_and_crossentropy_metrics_are_the_losses(each_backend):
    t, p = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)
    close(metrics.mse(t, p), np.mean((p - np.float64(t)) ** 2, -1))
    close(metrics.mean_absolute_error(t, p), np.mean(np.abs(p - np.float64(t)), -1))
    assert metrics.sparse_categorical_crossentropy is losses.sparse_categorical_crossentropy


# ---- get ---------------------------------------------------------------------------------------------

ACCURACY = [  # (identifier, loss, output shape, function chosen)
    ("accuracy", "binary_crossentropy", (None, 3), "binary_accuracy"),
    ("acc", losses.BinaryCrossentropy(), None, "binary_accuracy"),
    ("accuracy", "mse", (None, 1), "binary_accuracy"),  # one output unit: binary, whatever the loss
    ("accuracy", None, (None, 1), "binary_accuracy"),
    ("accuracy", "sparse_categorical_crossentropy", (None, 10), "sparse_categorical_accuracy"),
    ("acc", "sparseCategoricalCrossentropy", (None, 10), "sparse_categorical_accuracy"),
    ("accuracy", "categorical_crossentropy", (None, 10), "categorical_accuracy"),
    ("accuracy", "mse", (None, 4), "categorical_accuracy"),
    ("acc", None, None, "categorical_accuracy"),
    ("crossentropy", "binary_crossentropy", (None, 1), "binary_crossentropy"),
    ("ce", losses.SparseCategoricalCrossentropy(), (None, 3), "sparse_categorical_crossentropy"),
    ("ce", "categorical_crossentropy", (None, 3), "categorical_crossentropy"),
]


@pytest.mark.parametrize(("identifier", "loss", "output_shape", "chosen"), ACCURACY)
def test_accuracy_is_resolved_as_tfjs_compile_does(identifier, loss, output_shape, chosen):
    name, fn = metrics.get(identifier, loss=loss, output_shape=output_shape)
    assert name == identifier  # logged as written
    assert fn.__name__ == chosen


def test_resolved_metrics_compute_the_chosen_function():
    _, acc = metrics.get("accuracy", loss="sparse_categorical_crossentropy", output_shape=(None, 4))
    close(acc(CLASSES, SCORES), np_categorical_accuracy(ONE_HOT, SCORES))
    _, acc = metrics.get("acc", loss="binary_crossentropy", output_shape=(None, 1))
    close(acc([[1.0], [0.0], [1.0]], [[0.7], [0.2], [0.5]]), [1.0, 1.0, 0.0])
    _, ce = metrics.get("ce", loss="categorical_crossentropy", output_shape=(None, 4))
    close(ce(ONE_HOT, SCORES + 0.01), losses.categorical_crossentropy(ONE_HOT, SCORES + 0.01).numpy())


def test_a_loss_on_logits_keeps_its_logits():
    """Binary accuracy on logits thresholds at 0 (sigmoid(x) > 0.5 where x > 0); crossentropy takes from_logits."""
    _, acc = metrics.get("accuracy", loss=losses.BinaryCrossentropy(from_logits=True), output_shape=(None, 1))
    close(acc([[1.0], [0.0], [0.0]], [[0.3], [-2.0], [0.2]]), [1.0, 1.0, 0.0])
    _, ce = metrics.get("ce", loss=losses.CategoricalCrossentropy(from_logits=True), output_shape=(None, 4))
    logits = rng.normal(size=(8, 4)).astype(np.float32)
    close(ce(ONE_HOT, logits), losses.categorical_crossentropy(ONE_HOT, logits, from_logits=True).numpy())


NAMED = {  # identifier: function
    "binary_accuracy": metrics.binary_accuracy,
    "binaryAccuracy": metrics.binary_accuracy,
    "categorical_accuracy": metrics.categorical_accuracy,
    "categoricalAccuracy": metrics.categorical_accuracy,
    "sparse_categorical_accuracy": metrics.sparse_categorical_accuracy,
    "top_k_categorical_accuracy": metrics.top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": metrics.sparse_top_k_categorical_accuracy,
    "mse": losses.mean_squared_error,
    "MSE": losses.mean_squared_error,
    "mean_squared_error": losses.mean_squared_error,
    "mae": losses.mean_absolute_error,
    "meanAbsoluteError": losses.mean_absolute_error,
    "binary_crossentropy": losses.binary_crossentropy,
    "categorical_crossentropy": losses.categorical_crossentropy,
    "sparseCategoricalCrossentropy": losses.sparse_categorical_crossentropy,
}


@pytest.mark.parametrize("identifier", sorted(NAMED))
def test_named_metrics_keep_their_name(identifier):
    assert metrics.get(identifier) == (identifier, NAMED[identifier])


def test_functions_and_losses_as_metrics():
    def false_positives(y_true, y_pred):
        return pe.cast(pe.logical_and(pe.equal(pe.tensor(y_true), 0.0), pe.greater(pe.tensor(y_pred), 0.5)), "float32")

    assert metrics.get(false_positives) == ("false_positives", false_positives)
    assert metrics.get(metrics.categorical_accuracy) == ("categorical_accuracy", metrics.categorical_accuracy)
    huber = losses.Huber(delta=2.0)
    name, fn = metrics.get(huber)
    assert name == "huber"
    close(fn([[0.0, 0.0]], [[3.0, 1.0]]), [(2.0 * 3.0 - 2.0 + 0.5) / 2])


def test_unknown_metrics_are_refused():
    with pytest.raises(ValueError, match=r"unknown metric 'f1_score'; known metrics: .*accuracy.*binary_accuracy"):
        metrics.get("f1_score")
    with pytest.raises(TypeError, match="expected a metric name or a function"):
        metrics.get(None)


# ---- memory ------------------------------------------------------------------------------------------

CALLS = {
    "binary_accuracy": lambda: metrics.binary_accuracy(ONE_HOT, SCORES),
    "categorical_accuracy": lambda: metrics.categorical_accuracy(ONE_HOT, SCORES),
    "sparse_categorical_accuracy": lambda: metrics.sparse_categorical_accuracy(CLASSES[:, None], SCORES),
    "top_k_categorical_accuracy": lambda: metrics.top_k_categorical_accuracy(ONE_HOT, SCORES, k=2),
    "sparse_top_k_categorical_accuracy": lambda: metrics.sparse_top_k_categorical_accuracy(CLASSES, SCORES, k=2),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_metric_leaves_only_its_result(each_backend, name):
    before = pe.memory()
    out = CALLS[name]()
    after = pe.memory()
    assert after.num_tensors == before.num_tensors + 1
    assert after.num_bytes == before.num_bytes + out.size * 4
    out.dispose()
