"""Weight and activity regularizers: TensorFlow.js 4.22's L1L2 (tfjs-layers regularizers.ts), penalties added to the
loss.

A layer takes `kernel_regularizer=` (and bias_, recurrent_, depthwise_, pointwise_, embeddings_, gamma_, beta_,
alpha_regularizer for the layers with those weights, and activity_regularizer for its output) as a name ("l1", "l2",
"l1l2"), a config ({"class_name": "L1L2", "config": {"l1": 0, "l2": 0.01}}, as model.json holds it; Keras's "L1"
and "L2" configs too) or a Regularizer (`pe.regularizers.l2(0.01)`). Its config keeps `serialize()`'s form: TF.js has
one class, L1L2, and writes l1(...) and l2(...) as L1L2 with the other factor 0, so that is what is written here.

The penalty of a weight w is sum(l1 * |w|) + sum(l2 * w^2), as TF.js computes it. compile() gathers every
regularized weight of the model (a Bidirectional's or a wrapper's inner layers included); fit, train_on_batch,
evaluate and test_on_batch add the penalties to the loss they minimise and report: TF.js adds them in fit's training
loss only (its evaluate and validation loss leave them out, where Keras includes them; here they are included, as
Keras). An activity regularizer adds regularizer(output) / batch size for each output of the layer's calls in the
model, as tf.keras 2 does (Keras 3 leaves out the division); TF.js 4.22 cannot run a layer that has one (it raises
"not supported yet"), so its configs load here and train as Keras's. `model.summary()` lists every regularizer.
"""

import math
import numbers

from .. import ops

# Keras's and TF.js's defaults: l1() and l2() take 0.01; L1L2's missing factor is 0.01 in TF.js (0 in Keras).
DEFAULT = 0.01


class Regularizer:
    """A penalty on a weight or an activation: regularizer(x) is a float32 scalar tensor."""

    class_name = None

    def __call__(self, x):
        raise NotImplementedError

    def get_config(self):
        return {}

    def to_config(self):
        return {"class_name": self.class_name, "config": self.get_config()}


def _factor(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"L1L2: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2). TF.js's class: L1L2() is l1 = l2 = 0.01, as in TF.js."""

    class_name = "L1L2"

    def __init__(self, l1=DEFAULT, l2=DEFAULT):
        self.l1, self.l2 = _factor("l1", DEFAULT if l1 is None else l1), _factor("l2", DEFAULT if l2 is None else l2)

    def __call__(self, x):
        total = None
        if self.l1:
            total = ops.sum(ops.mul(ops.abs(x), self.l1))
        if self.l2:
            term = ops.sum(ops.mul(ops.square(x), self.l2))
            total = term if total is None else ops.add(total, term)
        return ops.zeros(()) if total is None else total

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}

    def __repr__(self):
        return f"L1L2(l1={self.l1:g}, l2={self.l2:g})"


def l1(l1=DEFAULT):
    """An L1 penalty, l1 * sum(|x|): L1L2(l1, 0) (TF.js's tf.regularizers.l1)."""
    return L1L2(l1=l1, l2=0.0)


def l2(l2=DEFAULT):
    """An L2 penalty, l2 * sum(x^2): L1L2(0, l2) (TF.js's tf.regularizers.l2)."""
    return L1L2(l1=0.0, l2=l2)


def l1l2(l1=DEFAULT, l2=DEFAULT):
    """L1L2(l1, l2) (TF.js's tf.regularizers.l1l2)."""
    return L1L2(l1=l1, l2=l2)


l1_l2 = l1l2  # Keras's name

# Names and class names, any case and with or without "_": TF.js's ("l1l2", "L1L2") and Keras's ("l1", "L2", "l1_l2").
_BY_NAME = {"l1l2": l1l2, "l1": l1, "l2": l2}


def _key(name):
    return name.lower().replace("_", "") if isinstance(name, str) else None


def get(identifier):
    """A Regularizer (or None) from None, a name, a config {"class_name": "L1L2" | "L1" | "L2", "config": {...}} or
    a Regularizer (returned as is)."""
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        make = _BY_NAME.get(_key(identifier))
        if make is None:
            raise ValueError(f"unknown regularizer {identifier!r}; known: l1, l2, l1l2 (class L1L2)")
        return make()
    if isinstance(identifier, dict):
        kind = _key(identifier.get("class_name"))
        values = identifier.get("config") or {}
        unknown = [k for k in values if k not in ("l1", "l2")]
        if kind not in _BY_NAME or unknown:
            raise NotImplementedError(
                f"regularizer {identifier!r} is not supported; use L1L2 (l1, l2), or Keras's L1 or L2"
            )
        if kind == "l1l2":
            return L1L2(values.get("l1"), values.get("l2"))
        return _BY_NAME[kind](values.get(kind, DEFAULT))
    raise TypeError(f"expected a regularizer name, config or Regularizer, got {type(identifier).__name__}")


def serialize(identifier):
    """The config model.json holds for a regularizer given by name, config or object ({"class_name": "L1L2", ...}),
    or None. A config this package cannot run (another Keras regularizer) is kept as given: the model loads, and
    compile() refuses it, naming it."""
    try:
        regularizer = get(identifier)
    except NotImplementedError:
        return identifier
    return None if regularizer is None else regularizer.to_config()


def describe(config):
    """A short text of a regularizer config, for model.summary()."""
    try:
        return repr(get(config))
    except (NotImplementedError, ValueError, TypeError):
        return str(config.get("class_name") if isinstance(config, dict) else config)


# ---- the model's regularized weights --------------------------------------------------------------------------


def sublayers(layer):
    """The layers held inside `layer` (a Bidirectional's forward and backward layers, a wrapper's layer, cells...),
    recursively. A layer is known by its config extras and weights (this module is below py_engine.layers)."""
    found, stack, seen = [], [layer], {id(layer)}
    while stack:
        current = stack.pop()
        for value in vars(current).values():
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                is_layer = hasattr(item, "_extra") and hasattr(item, "_weights") and not isinstance(item, type)
                if is_layer and id(item) not in seen:
                    seen.add(id(item))
                    found.append(item)
                    stack.append(item)
    return found


def weight_for(layer, key, suffix):
    """The variable a config key such as "kernel_regularizer" or "recurrent_constraint" refers to (the weight named
    kernel, recurrent_kernel, ...), or None when the layer has none (a bias_regularizer without use_bias)."""
    stem = key[: -len(suffix)]
    weights = dict(layer._weights)
    for name in (stem, f"{stem}_kernel"):
        if name in weights:
            return weights[name]
    return None


def _regularized(model):
    """[(layer, config key, variable, Regularizer)] for every regularized weight of the model's layers and theirs."""
    out = []
    for top in model.layers:
        for layer in (top, *sublayers(top)):
            for key, value in getattr(layer, "_extra", {}).items():
                if value is None or not key.endswith("_regularizer") or key == "activity_regularizer":
                    continue
                where = f"{layer.name} ({layer.class_name}) {key}"
                try:
                    regularizer = get(value)
                except (NotImplementedError, ValueError) as e:
                    raise NotImplementedError(f"{where}: {e}") from None
                w = weight_for(layer, key, "_regularizer")
                if w is not None:
                    out.append((layer, key, w, regularizer))
    return out


def penalties(model):
    """Callables returning each regularized weight's penalty, in the order of the model's layers."""
    return [lambda w=w, r=r: r(w) for _, _, w, r in _regularized(model)]


def activity_regularized(model):
    """[(symbolic output, Regularizer)]: the outputs of every call, in the model's graph, of a layer with an
    activity_regularizer. One on a layer held inside another (a Bidirectional's) is refused."""
    out = []
    in_model = {id(node) for node in model.nodes}
    for top in model.layers:
        for layer in (top, *sublayers(top)):
            config = getattr(layer, "_extra", {}).get("activity_regularizer")
            if config is None:
                continue
            where = f"{layer.name} ({layer.class_name}) activity_regularizer"
            if layer is not top:
                raise NotImplementedError(
                    f"{where}: an activity regularizer on a layer inside {top.name} is not supported"
                )
            try:
                regularizer = get(config)
            except (NotImplementedError, ValueError) as e:
                raise NotImplementedError(f"{where}: {e}") from None
            out += [(s, regularizer) for node in layer._nodes if id(node) in in_model for s in node.outputs]
    return out


def activity_penalty(regularizer, output):
    """regularizer(output) / batch size (tf.keras 2's batch-agnostic activity penalty)."""
    return ops.div(regularizer(output), float(max(output.shape[0], 1)) if output.rank else 1.0)
