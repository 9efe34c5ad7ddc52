"""Losses for Model.compile / fit: TensorFlow.js 4.22's formulas (tfjs-layers losses.ts) under Keras's names.

The functions return one loss per example (y_pred.shape[:-1]); a `Loss` object, called, returns their mean over
the batch as a float32 scalar, which is what TF.js's fit minimises per batch. Every call runs in a tidy, so only
the result outlives it. `Loss.check` (and `check_labels` of the sparse loss) look at host shapes, dtypes and
labels before training, so a mismatch fails with both shapes instead of broadcasting into a wrong loss.
"""

import functools
import numbers

import numpy as np

from .. import dtypes, ops
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor

EPSILON = 1e-7  # TF.js's backend epsilon(): probabilities are clipped to [EPSILON, 1 - EPSILON]
F32, I32 = dtypes.float32, dtypes.int32


def _as(x, dtype):
    """x as a tensor of `dtype`; made in the caller's tidy, so a conversion is released with it."""
    if isinstance(x, Tensor):
        return ops.cast(x, dtype)
    return ops.tensor(x, dtype)


def _shapes_fit(a, b):
    """Same rank, and every dimension equal where both are known (None: any size, e.g. a model's batch)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _fmt(shape):
    return str(tuple(shape))


def _label_shapes(y_true_shape, y_pred_shape):
    """The two shapes integer class labels for y_pred may have, with an unknown (None) batch size taken from
    y_true's, e.g. "(8,) or (8, 1)"."""
    t = tuple(y_true_shape)
    per_example = tuple(t[i] if d is None and i < len(t) else d for i, d in enumerate(tuple(y_pred_shape)[:-1]))
    return f"{_fmt(per_example)} or {_fmt(per_example + (1,))}"


def _same_shape_error(name, y_true_shape, y_pred_shape):
    """The error for an element-by-element loss whose labels are not shaped like the output, with a fix."""
    t, p = tuple(y_true_shape), tuple(y_pred_shape)
    message = (
        f"{name}: y_true of shape {_fmt(t)} does not fit y_pred of shape {_fmt(p)}; this loss compares them "
        "element by element, so they must have the same shape"
    )
    if len(p) >= 1 and p[-1] == 1 and _shapes_fit(t, p[:-1]):
        message += f" (reshape y_true to {_fmt(t + (1,))}, e.g. y.reshape(-1, 1), so it is not broadcast)"
    return ShapeError(message)


def _check_same_shape(name, y_true, y_pred):
    if y_true.shape != y_pred.shape:
        raise _same_shape_error(name, y_true.shape, y_pred.shape)


def _elementwise(body):
    """The loss `body` run on float32 y_true and y_pred of one shape, inside a tidy."""

    @functools.wraps(body)
    def loss(y_true, y_pred, *args, **kwargs):
        def run():
            t, p = _as(y_true, F32), _as(y_pred, F32)
            _check_same_shape(body.__name__, t, p)
            return body(t, p, *args, **kwargs)

        return ENGINE.tidy(run)

    return loss


@_elementwise
def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true)^2) over the last axis."""
    return ops.mean(ops.square(ops.sub(y_pred, y_true)), -1)


@_elementwise
def mean_absolute_error(y_true, y_pred):
    """mean(|y_pred - y_true|) over the last axis."""
    return ops.mean(ops.abs(ops.sub(y_pred, y_true)), -1)


def _positive(name, value, what):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"{name}: {what} must be a positive number, got {value!r}")
    return float(value)


@_elementwise
def huber(y_true, y_pred, delta=1.0):
    """Keras's Huber loss (TF.js layers has none): 0.5 e^2 where |e| <= delta, else delta (|e| - delta / 2),
    with e = y_pred - y_true, averaged over the last axis."""
    delta = _positive("huber", delta, "delta")
    error = ops.sub(y_pred, y_true)
    abs_error = ops.abs(error)
    quadratic = ops.mul(ops.square(error), 0.5)
    linear = ops.sub(ops.mul(abs_error, delta), 0.5 * delta * delta)
    return ops.mean(ops.where(ops.less_equal(abs_error, delta), quadratic, linear), -1)


@_elementwise
def binary_crossentropy(y_true, y_pred, from_logits=False):
    """TF.js: clip y_pred to [EPSILON, 1 - EPSILON], turn it into logits log(p / (1 - p)), and take the sigmoid
    crossentropy with logits, averaged over the last axis. from_logits=True: y_pred are the logits already."""
    logits = y_pred
    if not from_logits:
        p = ops.clip_by_value(y_pred, EPSILON, 1 - EPSILON)
        logits = ops.log(ops.div(p, ops.sub(1.0, p)))
    # TF.js writes relu(x) - x z + log1p(exp(-|x|)); softplus(x) is relu(x) + log1p(exp(-|x|)) computed the same
    # stable way, and its gradient sigmoid(x) is also right at x = 0 (p = 0.5), where relu's and abs's are not.
    return ops.mean(ops.sub(ops.softplus(logits), ops.mul(logits, y_true)), -1)


@_elementwise
def categorical_crossentropy(y_true, y_pred, from_logits=False):
    """-sum(y_true log p) over the last axis. TF.js: p is y_pred divided by its sum over the last axis, clipped to
    [EPSILON, 1 - EPSILON]. from_logits=True: log p is log_softmax(y_pred), exact for any logits (TF.js takes
    the softmax and clips it, which caps the loss at -log(EPSILON) and stops the gradient there)."""
    if from_logits:
        log_p = ops.log_softmax(y_pred, -1)
    else:
        p = ops.div(y_pred, ops.sum(y_pred, -1, keepdims=True))
        log_p = ops.log(ops.clip_by_value(p, EPSILON, 1 - EPSILON))
    return ops.neg(ops.sum(ops.mul(y_true, log_p), -1))


def _sparse_shape_error(name, y_true_shape, y_pred_shape):
    t, p = tuple(y_true_shape), tuple(y_pred_shape)
    message = (
        f"{name}: y_true of shape {_fmt(t)} does not fit y_pred of shape {_fmt(p)}; it takes one integer class "
        f"label per example, shaped {_label_shapes(t, p)}"
    )
    if len(p) >= 1 and p[-1] != 1 and _shapes_fit(t, p):
        message += "; these labels look one-hot, which is what categorical_crossentropy takes"
    return ShapeError(message)


def _labels_fit(y_true_shape, y_pred_shape):
    t, per_example = tuple(y_true_shape), tuple(y_pred_shape)[:-1]
    return _shapes_fit(t, per_example) or _shapes_fit(t, per_example + (1,))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    """categorical_crossentropy of one_hot(floor(y_true)), labels shaped y_pred.shape[:-1] (a trailing 1 allowed),
    int32 or float32. TF.js clips y_pred to [EPSILON, 1 - EPSILON] first, then normalises and clips again; with
    from_logits=True it is log_softmax, unclipped (TF.js would clip the logits themselves into (0, 1))."""

    def run():
        p = _as(y_pred, F32)
        if p.rank == 0:
            raise ShapeError("sparse_categorical_crossentropy: y_pred must have a class axis, got a scalar")
        labels = y_true if isinstance(y_true, Tensor) else ops.tensor(y_true)
        if labels.dtype == dtypes.bool_:
            labels = ops.cast(labels, I32)
        if not _labels_fit(labels.shape, p.shape):
            raise _sparse_shape_error("sparse_categorical_crossentropy", labels.shape, p.shape)
        classes = ops.cast(ops.floor(labels), I32) if labels.dtype == F32 else labels
        one_hot = ops.reshape(ops.one_hot(ops.flatten(classes), p.shape[-1]), p.shape)
        if from_logits:
            return categorical_crossentropy(one_hot, p, from_logits=True)
        return categorical_crossentropy(one_hot, ops.clip_by_value(p, EPSILON, 1 - EPSILON))

    return ENGINE.tidy(run)


@_elementwise
def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|(y_true - y_pred) / max(|y_true|, EPSILON)|) over the last axis."""
    scale = ops.maximum(ops.abs(y_true), EPSILON)
    return ops.mul(ops.mean(ops.abs(ops.div(ops.sub(y_true, y_pred), scale)), -1), 100.0)


@_elementwise
def mean_squared_logarithmic_error(y_true, y_pred):
    """mean((log(1 + max(y_pred, EPSILON)) - log(1 + max(y_true, EPSILON)))^2) over the last axis."""
    first = ops.log(ops.add(ops.maximum(y_pred, EPSILON), 1.0))
    second = ops.log(ops.add(ops.maximum(y_true, EPSILON), 1.0))
    return ops.mean(ops.square(ops.sub(first, second)), -1)


@_elementwise
def hinge(y_true, y_pred):
    """mean(max(0, 1 - y_true * y_pred)) over the last axis, labels -1 or 1. As TF.js: 0/1 labels are taken as they
    are (Keras 2+ turns them into -1/1 first)."""
    return ops.mean(ops.maximum(ops.sub(1.0, ops.mul(y_true, y_pred)), 0.0), -1)


@_elementwise
def squared_hinge(y_true, y_pred):
    """mean(max(0, 1 - y_true * y_pred)^2) over the last axis (labels as hinge's)."""
    return ops.mean(ops.square(ops.maximum(ops.sub(1.0, ops.mul(y_true, y_pred)), 0.0)), -1)


@_elementwise
def categorical_hinge(y_true, y_pred):
    """max(0, 1 + max((1 - y_true) * y_pred) - sum(y_true * y_pred)), the maximum and sum over the last axis (one-hot
    labels)."""
    positive = ops.sum(ops.mul(y_true, y_pred), -1)
    negative = ops.max(ops.mul(ops.sub(1.0, y_true), y_pred), -1)
    return ops.maximum(ops.add(ops.sub(negative, positive), 1.0), 0.0)


_LOG_2 = float(np.log(2.0))


@_elementwise
def log_cosh(y_true, y_pred):
    """mean(log(cosh(d))) over the last axis, d = y_pred - y_true, computed as d + softplus(-2 d) - log(2), which
    does not overflow."""
    d = ops.sub(y_pred, y_true)
    return ops.mean(ops.sub(ops.add(d, ops.softplus(ops.mul(d, -2.0))), _LOG_2), -1)


@_elementwise
def kullback_leibler_divergence(y_true, y_pred):
    """sum(y_true * log(clip(y_true, EPSILON, 1) / clip(y_pred, EPSILON, 1))) over the last axis."""
    ratio = ops.div(ops.clip_by_value(y_true, EPSILON, 1.0), ops.clip_by_value(y_pred, EPSILON, 1.0))
    return ops.sum(ops.mul(y_true, ops.log(ratio)), -1)


@_elementwise
def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + EPSILON)) over the last axis."""
    return ops.mean(ops.sub(y_pred, ops.mul(y_true, ops.log(ops.add(y_pred, EPSILON)))), -1)


def _l2_normalize(x):
    """x / sqrt(max(sum(x^2), EPSILON)) over the last axis (TF.js's l2Normalize)."""
    return ops.div(x, ops.sqrt(ops.maximum(ops.sum(ops.square(x), -1, keepdims=True), EPSILON)))


@_elementwise
def cosine_proximity(y_true, y_pred):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred)) over the last axis: -1 for the same direction (TF.js's
    cosineProximity; Keras 3's CosineSimilarity loss, with TF.js's EPSILON in the normalization)."""
    return ops.neg(ops.sum(ops.mul(_l2_normalize(y_true), _l2_normalize(y_pred)), -1))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kl_divergence = kullback_leibler_divergence
logcosh = log_cosh
cosine = cosine_proximity


# ---- Loss objects ---------------------------------------------------------------------------


class Loss:
    """A loss for compile/fit. loss(y_true, y_pred) is the mean over the batch of per_example(y_true, y_pred).

    name: Keras's snake_case name; tfjs_name: TF.js's identifier (losses.get's camelCase key), None when TF.js
    has no such loss.
    """

    name = None
    tfjs_name = None

    def per_example(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must define per_example(y_true, y_pred)")

    def __call__(self, y_true, y_pred):
        return ENGINE.tidy(lambda: ops.mean(self.per_example(y_true, y_pred)))

    def get_config(self):
        return {"name": self.name}

    def check(self, y_true_shape, y_true_dtype, y_pred_shape):
        """Refuse labels that cannot fit the output, from host shapes and the labels' dtype (reads no tensor)."""
        self._check_numeric(y_true_dtype)
        t, p = tuple(y_true_shape), tuple(y_pred_shape)
        if t and p and t[0] is not None and p[0] is not None and t[0] != p[0]:
            raise ShapeError(
                f"{self.name}: y_true of shape {_fmt(t)} has {t[0]} examples but y_pred of shape {_fmt(p)} has {p[0]}"
            )

    def _check_numeric(self, y_true_dtype):
        try:
            kind = np.dtype(y_true_dtype).kind
        except TypeError:
            kind = None
        if kind not in ("f", "i", "u", "b"):
            raise DTypeError(
                f"{self.name}: y_true has dtype {y_true_dtype!r}; labels must be numbers (float32, int32 or bool)"
            )

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "name")
        return f"{type(self).__name__}({params})"


class _SameShapeLoss(Loss):
    """A loss comparing y_true and y_pred element by element: they must have the same shape."""

    def check(self, y_true_shape, y_true_dtype, y_pred_shape):
        super().check(y_true_shape, y_true_dtype, y_pred_shape)
        if not _shapes_fit(tuple(y_true_shape), tuple(y_pred_shape)):
            raise _same_shape_error(self.name, y_true_shape, y_pred_shape)


class MeanSquaredError(_SameShapeLoss):
    name, tfjs_name = "mean_squared_error", "meanSquaredError"

    def per_example(self, y_true, y_pred):
        return mean_squared_error(y_true, y_pred)


class MeanAbsoluteError(_SameShapeLoss):
    name, tfjs_name = "mean_absolute_error", "meanAbsoluteError"

    def per_example(self, y_true, y_pred):
        return mean_absolute_error(y_true, y_pred)


class MeanAbsolutePercentageError(_SameShapeLoss):
    name, tfjs_name = "mean_absolute_percentage_error", "meanAbsolutePercentageError"

    def per_example(self, y_true, y_pred):
        return mean_absolute_percentage_error(y_true, y_pred)


class MeanSquaredLogarithmicError(_SameShapeLoss):
    name, tfjs_name = "mean_squared_logarithmic_error", "meanSquaredLogarithmicError"

    def per_example(self, y_true, y_pred):
        return mean_squared_logarithmic_error(y_true, y_pred)


class Hinge(_SameShapeLoss):
    name, tfjs_name = "hinge", "hinge"

    def per_example(self, y_true, y_pred):
        return hinge(y_true, y_pred)


class SquaredHinge(_SameShapeLoss):
    name, tfjs_name = "squared_hinge", "squaredHinge"

    def per_example(self, y_true, y_pred):
        return squared_hinge(y_true, y_pred)


class CategoricalHinge(_SameShapeLoss):
    name, tfjs_name = "categorical_hinge", "categoricalHinge"

    def per_example(self, y_true, y_pred):
        return categorical_hinge(y_true, y_pred)


class LogCosh(_SameShapeLoss):
    name, tfjs_name = "logcosh", "logcosh"  # TF.js's and Keras 2's name (Keras 3: log_cosh, accepted too)

    def per_example(self, y_true, y_pred):
        return log_cosh(y_true, y_pred)


class KLDivergence(_SameShapeLoss):
    name, tfjs_name = "kullback_leibler_divergence", "kullbackLeiblerDivergence"

    def per_example(self, y_true, y_pred):
        return kullback_leibler_divergence(y_true, y_pred)


class Poisson(_SameShapeLoss):
    name, tfjs_name = "poisson", "poisson"

    def per_example(self, y_true, y_pred):
        return poisson(y_true, y_pred)


class CosineProximity(_SameShapeLoss):
    name, tfjs_name = "cosine_proximity", "cosineProximity"

    def per_example(self, y_true, y_pred):
        return cosine_proximity(y_true, y_pred)


class Huber(_SameShapeLoss):
    name = "huber"  # TF.js layers has no Huber loss: tfjs_name stays None

    def __init__(self, delta=1.0):
        self.delta = _positive("Huber", delta, "delta")

    def per_example(self, y_true, y_pred):
        return huber(y_true, y_pred, self.delta)

    def get_config(self):
        return {"name": self.name, "delta": self.delta}


class _Crossentropy(Loss):
    def __init__(self, from_logits=False):
        self.from_logits = bool(from_logits)

    def get_config(self):
        return {"name": self.name, "from_logits": self.from_logits}


class BinaryCrossentropy(_Crossentropy, _SameShapeLoss):
    name, tfjs_name = "binary_crossentropy", "binaryCrossentropy"

    def per_example(self, y_true, y_pred):
        return binary_crossentropy(y_true, y_pred, self.from_logits)

    def check(self, y_true_shape, y_true_dtype, y_pred_shape):
        t, p = tuple(y_true_shape), tuple(y_pred_shape)
        if p and _shapes_fit(t[:-1], p[:-1]) and len(t) == len(p) and not _shapes_fit(t[-1:], p[-1:]):
            raise ShapeError(
                f"{self.name}: y_pred's last axis has {p[-1]} units (shape {_fmt(p)}) but y_true's has {t[-1]} "
                f"(shape {_fmt(t)}); binary_crossentropy takes one 0/1 label per output unit. For one integer class "
                "label per example and a softmax output use sparse_categorical_crossentropy"
            )
        super().check(y_true_shape, y_true_dtype, y_pred_shape)


class CategoricalCrossentropy(_Crossentropy, _SameShapeLoss):
    name, tfjs_name = "categorical_crossentropy", "categoricalCrossentropy"

    def per_example(self, y_true, y_pred):
        return categorical_crossentropy(y_true, y_pred, self.from_logits)

    def check(self, y_true_shape, y_true_dtype, y_pred_shape):
        Loss.check(self, y_true_shape, y_true_dtype, y_pred_shape)
        t, p = tuple(y_true_shape), tuple(y_pred_shape)
        sparse_hint = (
            f"categorical_crossentropy takes one-hot labels shaped like the output; for integer class labels "
            f"(shape {_label_shapes(t, p)}) use sparse_categorical_crossentropy"
        )
        if not _shapes_fit(t, p):
            raise ShapeError(
                f"{self.name}: y_true of shape {_fmt(t)} does not fit y_pred of shape {_fmt(p)}; {sparse_hint}"
            )
        if t and t[-1] == 1:  # one class: the normalised prediction is always 1 and the loss always 0
            raise ShapeError(
                f"{self.name}: y_true of shape {_fmt(t)} has one class on its last axis, so the loss is always 0; "
                f"{sparse_hint}, or binary_crossentropy for one sigmoid output"
            )


class SparseCategoricalCrossentropy(_Crossentropy):
    name, tfjs_name = "sparse_categorical_crossentropy", "sparseCategoricalCrossentropy"

    def per_example(self, y_true, y_pred):
        return sparse_categorical_crossentropy(y_true, y_pred, self.from_logits)

    def check(self, y_true_shape, y_true_dtype, y_pred_shape):
        super().check(y_true_shape, y_true_dtype, y_pred_shape)
        if not y_pred_shape or not _labels_fit(y_true_shape, y_pred_shape):
            raise _sparse_shape_error(self.name, y_true_shape, y_pred_shape)

    def check_labels(self, y_true, num_classes):
        """Refuse labels (a host array) that are not integers in [0, num_classes), naming the first bad one."""
        if not isinstance(num_classes, numbers.Integral) or num_classes < 1:
            raise ValueError(f"{self.name}: num_classes must be a positive int, got {num_classes!r}")
        labels = np.asarray(y_true)
        self._check_numeric(labels.dtype)
        not_integer = np.zeros(labels.shape, bool)
        if labels.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                not_integer = ~np.isfinite(labels) | (np.floor(labels) != labels)
        with np.errstate(invalid="ignore"):
            out_of_range = (labels < 0) | (labels >= num_classes)
        bad = not_integer | out_of_range
        if not bad.any():
            return
        index = np.unravel_index(int(np.argmax(bad)), labels.shape)
        value = labels[index].item()
        what = "not an integer" if not_integer[index] else f"outside [0, {num_classes})"
        raise ValueError(
            f"{self.name}: label {value!r} at y_true[{', '.join(map(str, index))}] is {what}; labels must be "
            f"integer class indices in [0, {num_classes}) for an output of {num_classes} classes"
        )


class LossFunction(Loss):
    """A plain f(y_true, y_pred) as a Loss: its per-example (or already scalar) result, named by __name__."""

    def __init__(self, fn):
        self.fn, self.name = fn, getattr(fn, "__name__", type(fn).__name__)

    def per_example(self, y_true, y_pred):
        out = ENGINE.tidy(self.fn, y_true, y_pred)
        if isinstance(out, Tensor) and out.dtype == F32:
            return out
        if out is not y_true and out is not y_pred:  # made by fn: it would outlive the call
            ENGINE.dispose(out)
        got = f"a {out.dtype} tensor" if isinstance(out, Tensor) else type(out).__name__
        raise TypeError(f"loss {self.name}: must return a float32 tensor of losses, got {got}")

    def __repr__(self):
        return f"LossFunction({self.name})"


# ---- get -----------------------------------------------------------------------------------

LOSS_CLASSES = (
    MeanSquaredError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError,
    Hinge,
    SquaredHinge,
    CategoricalHinge,
    LogCosh,
    KLDivergence,
    Poisson,
    CosineProximity,
    Huber,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    SparseCategoricalCrossentropy,
)
# TF.js's and Keras's short names and aliases (TF.js's compile takes the long camelCase ones; its losses module and
# Keras also know these).
_BY_NAME = {
    "mse": MeanSquaredError,
    "MSE": MeanSquaredError,
    "mae": MeanAbsoluteError,
    "MAE": MeanAbsoluteError,
    "mape": MeanAbsolutePercentageError,
    "MAPE": MeanAbsolutePercentageError,
    "msle": MeanSquaredLogarithmicError,
    "MSLE": MeanSquaredLogarithmicError,
    "kld": KLDivergence,
    "KLD": KLDivergence,
    "kl_divergence": KLDivergence,
    "KLDivergence": KLDivergence,
    "log_cosh": LogCosh,
    "cosine": CosineProximity,
    "cosine_similarity": CosineProximity,
    "CosineSimilarity": CosineProximity,
}
for _cls in LOSS_CLASSES:
    _BY_NAME[_cls.name] = _BY_NAME[_cls.__name__] = _cls
    if _cls.tfjs_name:
        _BY_NAME[_cls.tfjs_name] = _cls
_BY_FUNCTION = {
    mean_squared_error: MeanSquaredError,
    mean_absolute_error: MeanAbsoluteError,
    mean_absolute_percentage_error: MeanAbsolutePercentageError,
    mean_squared_logarithmic_error: MeanSquaredLogarithmicError,
    hinge: Hinge,
    squared_hinge: SquaredHinge,
    categorical_hinge: CategoricalHinge,
    log_cosh: LogCosh,
    kullback_leibler_divergence: KLDivergence,
    poisson: Poisson,
    cosine_proximity: CosineProximity,
    huber: Huber,
    binary_crossentropy: BinaryCrossentropy,
    categorical_crossentropy: CategoricalCrossentropy,
    sparse_categorical_crossentropy: SparseCategoricalCrossentropy,
}


def get(identifier):
    """A Loss from a Keras name ("mse", "categorical_crossentropy"), a TF.js name ("meanSquaredError"), a class
    name ("Huber"), a Loss (returned as is) or Loss class, or a function f(y_true, y_pred) (wrapped)."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"unknown loss {identifier!r}; known losses: {', '.join(sorted(_BY_NAME))}")
        return cls()
    if callable(identifier):
        cls = _BY_FUNCTION.get(identifier)
        return cls() if cls else LossFunction(identifier)
    raise TypeError(
        f"losses.get: expected a loss name, a Loss or a function f(y_true, y_pred), got {type(identifier).__name__}"
    )
