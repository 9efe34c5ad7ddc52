"""Metrics for Model.compile / fit: per-example float32 values (tfjs-layers metrics.ts), averaged by fit.

`get` resolves a metric as TF.js's LayersModel.compile does ("accuracy" / "acc" and "crossentropy" / "ce" depend
on the loss and the output's last dimension) and names it as Keras logs it: a string as written, a function by
its __name__. Every metric runs in a tidy and needs no gradient.
"""

import operator

from .. import dtypes, ops
from ..engine import ENGINE
from ..errors import ShapeError
from ..tensor import Tensor
from . import losses
from .losses import (
    binary_crossentropy,
    categorical_crossentropy,
    categorical_hinge,
    cosine_proximity,
    hinge,
    huber,
    kullback_leibler_divergence,
    log_cosh,
    mae,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    mse,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_

__all__ = [
    "binary_accuracy",
    "binary_crossentropy",
    "categorical_accuracy",
    "categorical_crossentropy",
    "categorical_hinge",
    "cosine_proximity",
    "get",
    "hinge",
    "huber",
    "kullback_leibler_divergence",
    "log_cosh",
    "mae",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_error",
    "mean_squared_logarithmic_error",
    "mse",
    "poisson",
    "precision",
    "r2_score",
    "recall",
    "sparse_categorical_accuracy",
    "sparse_categorical_crossentropy",
    "sparse_top_k_categorical_accuracy",
    "squared_hinge",
    "tfjs_name",
    "top_k_categorical_accuracy",
]


def _tensor(x, dtype=None):
    """x as a tensor (cast to dtype if given); bool becomes float32 where a metric needs numbers."""
    t = x if isinstance(x, Tensor) else ops.tensor(x)
    if dtype is not None:
        return ops.cast(t, dtype)
    return ops.cast(t, F32) if t.dtype == BOOL else t


def _same_shape(metric, y_true, y_pred):
    if y_true.shape != y_pred.shape:
        raise ShapeError(
            f"{metric}: y_true of shape {y_true.shape} does not fit y_pred of shape {y_pred.shape}; they must have "
            "the same shape (comparing them would broadcast)"
        )


def _class_labels(metric, y_true, y_pred):
    """Integer labels shaped y_pred.shape[:-1]; a trailing axis of 1 is squeezed away, as TF.js does."""
    if y_pred.rank == 0:
        raise ShapeError(f"{metric}: y_pred must have a class axis, got a scalar")
    if y_true.rank == y_pred.rank and y_true.shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
    if y_true.shape != y_pred.shape[:-1]:
        raise ShapeError(
            f"{metric}: y_true of shape {y_true.shape} does not fit y_pred of shape {y_pred.shape}; it takes one "
            f"integer class label per example, shaped {y_pred.shape[:-1]} or {(*y_pred.shape[:-1], 1)}"
        )
    return y_true


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Mean over the last axis of (y_pred > threshold) == y_true."""

    def run():
        t, p = _tensor(y_true), _tensor(y_pred, F32)
        _same_shape("binary_accuracy", t, p)
        predicted = ops.cast(ops.greater(p, float(threshold)), t.dtype)
        return ops.mean(ops.equal(t, predicted), -1)

    return ENGINE.tidy(run)


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_true) == argmax(y_pred) over the last axis (the first index wins a tie), else 0.0."""

    def run():
        t, p = _tensor(y_true), _tensor(y_pred)
        _same_shape("categorical_accuracy", t, p)
        return ops.cast(ops.equal(ops.argmax(t, -1), ops.argmax(p, -1)), F32)

    return ENGINE.tidy(run)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the label y_true equals argmax(y_pred) over the last axis, else 0.0 (labels compared in their own
    dtype, as TF.js)."""

    def run():
        p = _tensor(y_pred)
        t = _class_labels("sparse_categorical_accuracy", _tensor(y_true), p)
        return ops.cast(ops.equal(t, ops.cast(ops.argmax(p, -1), t.dtype)), F32)

    return ENGINE.tidy(run)


def _in_top_k(metric, y_pred, targets, k):
    """1.0 where fewer than k classes score strictly higher than the target class (tf.math.in_top_k, which Keras
    uses: classes tied with the k-th score all count as in the top k), else 0.0."""
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"{metric}: k must be an int, got {type(k).__name__}") from None
    classes = y_pred.shape[-1]
    if k < 1:
        raise ValueError(f"{metric}: k must be at least 1, got {k}")
    if k > classes:
        raise ShapeError(
            f"{metric}: k={k} is larger than the number of classes {classes} (y_pred of shape {y_pred.shape}); "
            f"choose k <= {classes}"
        )
    is_target = ops.equal(ops.expand_dims(targets, -1), ops.arange(classes, dtype=I32))
    target_score = ops.sum(ops.where(is_target, y_pred, 0.0), -1, keepdims=True)
    higher = ops.sum(ops.greater(y_pred, target_score), -1)
    return ops.cast(ops.less(higher, k), F32)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the class argmax(y_true) is among the k highest scores of y_pred, else 0.0 (TF.js has none;
    Keras's semantics)."""

    def run():
        t, p = _tensor(y_true), _tensor(y_pred, F32)
        _same_shape("top_k_categorical_accuracy", t, p)
        return _in_top_k("top_k_categorical_accuracy", p, ops.argmax(t, -1), k)

    return ENGINE.tidy(run)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the integer label y_true is among the k highest scores of y_pred, else 0.0."""

    def run():
        p = _tensor(y_pred, F32)
        t = _class_labels("sparse_top_k_categorical_accuracy", _tensor(y_true), p)
        return _in_top_k("sparse_top_k_categorical_accuracy", p, ops.cast(t, I32), k)

    return ENGINE.tidy(run)


def _count(labels, predictions, want_label, want_prediction):
    """How many elements have label want_label and prediction want_prediction (exact equality), as float32."""
    both = ops.logical_and(ops.equal(labels, want_label), ops.equal(predictions, want_prediction))
    return ops.cast(ops.sum(ops.cast(both, I32)), F32)


def _ratio(metric, y_true, y_pred, other_label, other_prediction):
    def run():
        t, p = _tensor(y_true, F32), _tensor(y_pred, F32)
        _same_shape(metric, t, p)
        tp = _count(t, p, 1.0, 1.0)
        denominator = ops.add(tp, _count(t, p, other_label, other_prediction))
        return ops.where(ops.greater(denominator, 0.0), ops.div(tp, ops.maximum(denominator, 1.0)), 0.0)

    return ENGINE.tidy(run)


def precision(y_true, y_pred):
    """TF.js's precision: tp / (tp + fp) over the whole batch, 0 when there is no positive prediction; a scalar,
    which fit averages over the batches weighted by their sizes. As TF.js documents, y_true and y_pred hold 0/1
    values: a prediction counts as positive where it equals 1 and as negative where it equals 0, so probabilities
    must be thresholded first (a 0.7 counts as neither). Keras's Precision thresholds at 0.5 and counts over the
    epoch."""
    return _ratio("precision", y_true, y_pred, 0.0, 1.0)


def recall(y_true, y_pred):
    """TF.js's recall: tp / (tp + fn) over the whole batch, 0 when there is no positive label; 0/1 values as
    precision's."""
    return _ratio("recall", y_true, y_pred, 1.0, 0.0)


def r2_score(y_true, y_pred):
    """TF.js's r2Score: 1 - sum((y_true - y_pred)^2) / sum((y_true - mean(y_true))^2), sums and mean over every
    element of the batch; a scalar (NaN or -inf when y_true is constant, as TF.js)."""

    def run():
        t, p = _tensor(y_true, F32), _tensor(y_pred, F32)
        _same_shape("r2_score", t, p)
        residuals = ops.sum(ops.square(ops.sub(t, p)))
        total = ops.sum(ops.square(ops.sub(t, ops.mean(t))))
        return ops.sub(1.0, ops.div(residuals, total))

    return ENGINE.tidy(run)


# ---- get -----------------------------------------------------------------------------------

# Keras name, TF.js name, function
_NAMES = (
    ("binary_accuracy", "binaryAccuracy", binary_accuracy),
    ("categorical_accuracy", "categoricalAccuracy", categorical_accuracy),
    ("sparse_categorical_accuracy", "sparseCategoricalAccuracy", sparse_categorical_accuracy),
    ("top_k_categorical_accuracy", "topKCategoricalAccuracy", top_k_categorical_accuracy),
    ("sparse_top_k_categorical_accuracy", "sparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy),
    ("mean_squared_error", "meanSquaredError", mean_squared_error),
    ("mse", "MSE", mse),
    ("mean_absolute_error", "meanAbsoluteError", mean_absolute_error),
    ("mae", "MAE", mae),
    ("mean_absolute_percentage_error", "meanAbsolutePercentageError", mean_absolute_percentage_error),
    ("mape", "MAPE", mean_absolute_percentage_error),
    ("mean_squared_logarithmic_error", "meanSquaredLogarithmicError", mean_squared_logarithmic_error),
    ("msle", "MSLE", mean_squared_logarithmic_error),
    ("cosine_proximity", "cosineProximity", cosine_proximity),
    ("cosine", "cosine", cosine_proximity),
    ("precision", "precision", precision),
    ("recall", "recall", recall),
    ("r2_score", "r2Score", r2_score),
    ("hinge", "hinge", hinge),
    ("squared_hinge", "squaredHinge", squared_hinge),
    ("categorical_hinge", "categoricalHinge", categorical_hinge),
    ("logcosh", "log_cosh", log_cosh),
    ("kullback_leibler_divergence", "kullbackLeiblerDivergence", kullback_leibler_divergence),
    ("kld", "KLD", kullback_leibler_divergence),
    ("poisson", "poisson", poisson),
    ("huber", "huber", huber),
    ("binary_crossentropy", "binaryCrossentropy", binary_crossentropy),
    ("categorical_crossentropy", "categoricalCrossentropy", categorical_crossentropy),
    ("sparse_categorical_crossentropy", "sparseCategoricalCrossentropy", sparse_categorical_crossentropy),
)
_BY_NAME = {name: fn for keras_name, tfjs_name, fn in _NAMES for name in (keras_name, tfjs_name)}
_ACCURACY = ("accuracy", "acc")
_CROSSENTROPY = ("crossentropy", "ce")


# The metric names TF.js's compile resolves (tfjs-layers metrics.ts's metricsMap, and "accuracy", "acc",
# "crossentropy", "ce"), which are what a model.json's trainingConfig may name; others make TF.js refuse the file.
TFJS_COMPILE_NAMES = (
    "binaryAccuracy",
    "categoricalAccuracy",
    "precision",
    "categoricalCrossentropy",
    "sparseCategoricalCrossentropy",
    "mse",
    "MSE",
    "mae",
    "MAE",
    "mape",
    "MAPE",
    "cosine",
    *_ACCURACY,
    *_CROSSENTROPY,
)
# A function -> the name TF.js's compile knows it by, where that is not its own name camel-cased
_TFJS_ALIAS = {
    mean_squared_error: "mse",
    mean_absolute_error: "mae",
    mean_absolute_percentage_error: "mape",
    cosine_proximity: "cosine",
}


def _camel(name):
    """TF.js's toCamelCase, which its loader applies to a trainingConfig's metric names."""
    head, *rest = name.split("_")
    return name if not rest else head + "".join(part[:1].upper() + part[1:] for part in rest)


def tfjs_name(identifier):
    """The name TF.js's compile resolves to the same metric as `identifier` (a name), or None when it has none."""
    if not isinstance(identifier, str):
        return None
    if _camel(identifier) in TFJS_COMPILE_NAMES:
        return identifier
    return _TFJS_ALIAS.get(_BY_NAME.get(identifier))


def _named(fn, name, **kwargs):
    """fn with keyword arguments bound, under a name of its own."""

    def metric(y_true, y_pred):
        return fn(y_true, y_pred, **kwargs)

    metric.__name__ = metric.__qualname__ = name
    return metric


def _resolve(identifier, loss, output_shape):
    """The function "accuracy"/"acc" or "crossentropy"/"ce" stands for, chosen as TF.js's compile chooses it:
    binary when the output's last dimension is 1 or the loss is binary crossentropy, sparse when the loss is
    sparse categorical crossentropy, else categorical. A loss on logits keeps its logits: binary accuracy then
    thresholds at 0 (sigmoid(x) > 0.5 where x > 0), crossentropy takes from_logits."""
    loss = None if loss is None else losses.get(loss)
    from_logits = getattr(loss, "from_logits", False)
    accuracy = identifier in _ACCURACY
    if (output_shape and output_shape[-1] == 1) or isinstance(loss, losses.BinaryCrossentropy):
        if accuracy:
            return _named(binary_accuracy, "binary_accuracy", threshold=0.0 if from_logits else 0.5)
        return _named(binary_crossentropy, "binary_crossentropy", from_logits=from_logits)
    if isinstance(loss, losses.SparseCategoricalCrossentropy):
        if accuracy:
            return sparse_categorical_accuracy
        return _named(sparse_categorical_crossentropy, "sparse_categorical_crossentropy", from_logits=from_logits)
    if accuracy:
        return categorical_accuracy
    return _named(categorical_crossentropy, "categorical_crossentropy", from_logits=from_logits)


def get(identifier, loss=None, output_shape=None):
    """(log_name, fn): fn(y_true, y_pred) gives per-example float32 values.

    identifier: "accuracy"/"acc"/"crossentropy"/"ce" (resolved with `loss` and `output_shape`, the output's
    shape), a Keras name ("binary_accuracy", "mse", ...) or TF.js name ("binaryAccuracy"), both logged as written,
    a Loss (logged by its name), or a function (logged by its __name__).
    """
    if isinstance(identifier, str):
        if identifier in _ACCURACY or identifier in _CROSSENTROPY:
            return identifier, _resolve(identifier, loss, output_shape)
        fn = _BY_NAME.get(identifier)
        if fn is None:
            known = sorted({*_BY_NAME, *_ACCURACY, *_CROSSENTROPY})
            raise ValueError(f"unknown metric {identifier!r}; known metrics: {', '.join(known)}")
        return identifier, fn
    if isinstance(identifier, losses.Loss):
        return identifier.name, identifier.per_example
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
        if not isinstance(name, str):
            raise ValueError(f"metrics.get: a metric function needs a __name__ to name it in logs, got {identifier!r}")
        return name, identifier
    raise TypeError(f"metrics.get: expected a metric name or a function f(y_true, y_pred), got {identifier!r}")
