"""Weight constraints: TensorFlow.js 4.22's MaxNorm, MinMaxNorm, NonNeg and UnitNorm (tfjs-layers constraints.ts),
applied as Keras applies them.

A layer takes `kernel_constraint=` (and bias_, recurrent_, depthwise_, pointwise_, embeddings_, gamma_, beta_,
alpha_constraint) as a name (Keras's "max_norm", "non_neg", ... or TF.js's "maxNorm", "nonNeg", ...), a config
({"class_name": "MaxNorm", "config": {"max_value": 2, "axis": 0}}, as model.json holds it) or a Constraint object
(`pe.constraints.MaxNorm(3)`); its config keeps `serialize()`'s form.

When they apply:
- fit and train_on_batch project each constrained trainable weight after every optimizer update, as Keras does.
  TF.js 4.22's fit never applies them (its optimizers assign the variables directly, bypassing the constraint:
  tensorflow/tfjs#3345), so a TF.js model trained with constraints ends with weights that break them; here the
  weights follow Keras's trajectory instead.
- Loading a model (pe.load_layers_model) projects the loaded weights once, as TF.js's loadLayersModel does (it sets
  every weight through LayerVariable.write, which applies the constraint), so a model predicts here what it predicts
  in TF.js after loading. set_weights does not project (Keras's behaviour).

The projections, with norms sqrt(sum(w^2)) over `axis` (an int or a list; 0 for a Dense kernel [in, out] is each
unit's incoming weights; [0, 1, 2] for a Conv2D kernel [h, w, in, out]) and eps = 1e-7, TF.js's and Keras's:
- MaxNorm(max_value=2, axis=0): w * clip(norms, 0, max_value) / (eps + norms)
- MinMaxNorm(min_value=0, max_value=1, rate=1, axis=0): w * (rate * clip(norms, min_value, max_value)
  + (1 - rate) * norms) / (eps + norms)
- NonNeg(): relu(w)
- UnitNorm(axis=0): w / (eps + norms)
"""

import math
import numbers

from .. import ops
from ..engine import ENGINE
from .regularizers import sublayers, weight_for

EPSILON = 1e-7  # TF.js's and Keras's backend epsilon


def _number(owner, name, value, low=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{owner}: {name} must be a finite number, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{owner}: {name} must be >= {low}, got {value!r}")
    return float(value)


def _axis(owner, axis):
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not items or not all(isinstance(a, int) and not isinstance(a, bool) for a in items):
        raise ValueError(f"{owner}: axis must be an int or a list of ints, got {axis!r}")
    return items[0] if not isinstance(axis, (list, tuple)) else items


class Constraint:
    """A projection of a weight: constraint(w) is the projected tensor."""

    class_name = None

    def __call__(self, w):
        raise NotImplementedError

    def get_config(self):
        return {}

    def to_config(self):
        return {"class_name": self.class_name, "config": self.get_config()}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


def _norms(w, axis):
    """TF.js's calcL2Norms: sqrt(sum(w * w, axis, keepdims))."""
    return ops.sqrt(ops.sum(ops.mul(w, w), tuple(axis) if isinstance(axis, list) else axis, keepdims=True))


class MaxNorm(Constraint):
    class_name = "MaxNorm"

    def __init__(self, max_value=2.0, axis=0):
        self.max_value = _number("MaxNorm", "max_value", max_value, 0)
        self.axis = _axis("MaxNorm", axis)

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = ops.clip_by_value(norms, 0.0, self.max_value)
        return ops.mul(w, ops.div(desired, ops.add(norms, EPSILON)))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class MinMaxNorm(Constraint):
    class_name = "MinMaxNorm"

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = _number("MinMaxNorm", "min_value", min_value, 0)
        self.max_value = _number("MinMaxNorm", "max_value", max_value, 0)
        if self.min_value > self.max_value:
            raise ValueError(f"MinMaxNorm: min_value {self.min_value} is greater than max_value {self.max_value}")
        self.rate = _number("MinMaxNorm", "rate", rate)
        self.axis = _axis("MinMaxNorm", axis)

    def __call__(self, w):
        norms = _norms(w, self.axis)
        clipped = ops.clip_by_value(norms, self.min_value, self.max_value)
        desired = ops.add(ops.mul(clipped, self.rate), ops.mul(norms, 1.0 - self.rate))
        return ops.mul(w, ops.div(desired, ops.add(norms, EPSILON)))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


class NonNeg(Constraint):
    class_name = "NonNeg"

    def __call__(self, w):
        return ops.relu(w)


class UnitNorm(Constraint):
    class_name = "UnitNorm"

    def __init__(self, axis=0):
        self.axis = _axis("UnitNorm", axis)

    def __call__(self, w):
        return ops.div(w, ops.add(_norms(w, self.axis), EPSILON))

    def get_config(self):
        return {"axis": self.axis}


CLASSES = {cls.class_name: cls for cls in (MaxNorm, MinMaxNorm, NonNeg, UnitNorm)}
# Names, any case, with or without "_": TF.js's identifiers (maxNorm, ...), Keras's (max_norm, ...), class names.
_BY_KEY = {name.lower(): cls for name, cls in CLASSES.items()}

max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm  # Keras's function names


def _key(name):
    return name.lower().replace("_", "") if isinstance(name, str) else None


def _camel_to_snake(key):
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def get(identifier):
    """A Constraint (or None) from None, a name, a config {"class_name": ..., "config": {...}} (snake_case keys, or
    TF.js's camelCase) or a Constraint (returned as is)."""
    if identifier is None or isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_KEY.get(_key(identifier))
        if cls is None:
            raise ValueError(f"unknown constraint {identifier!r}; known: {', '.join(CLASSES)}")
        return cls()
    if isinstance(identifier, dict):
        cls = _BY_KEY.get(_key(identifier.get("class_name")))
        if cls is None:
            raise NotImplementedError(f"constraint {identifier!r} is not supported; known: {', '.join(CLASSES)}")
        config = {_camel_to_snake(k): v for k, v in (identifier.get("config") or {}).items()}
        try:
            return cls(**config)
        except TypeError as e:
            raise ValueError(f"constraint {identifier!r}: {e}") from None
    raise TypeError(f"expected a constraint name, config or Constraint, got {type(identifier).__name__}")


def serialize(identifier):
    """The config model.json holds for a constraint given by name, config or object, or None. A config of a class this
    package does not know is kept as given: the model loads, and fit refuses it, naming it."""
    try:
        constraint = get(identifier)
    except NotImplementedError:
        return identifier
    return None if constraint is None else constraint.to_config()


def describe(config):
    """A short text of a constraint config, for model.summary()."""
    try:
        return repr(get(config))
    except (NotImplementedError, ValueError, TypeError):
        return str(config.get("class_name") if isinstance(config, dict) else config)


def constrained(model, strict=True):
    """[(variable, Constraint)] for every constrained weight of the model's layers (and the layers inside them).
    strict: a constraint this package cannot apply raises NotImplementedError naming the layer; else it is skipped."""
    out, seen = [], set()
    for top in model.layers:
        for layer in (top, *sublayers(top)):
            for key, value in getattr(layer, "_extra", {}).items():
                if value is None or not key.endswith("_constraint"):
                    continue
                try:
                    constraint = get(value)
                except (NotImplementedError, ValueError) as e:
                    if strict:
                        raise NotImplementedError(f"{layer.name} ({layer.class_name}) {key}: {e}") from None
                    continue
                w = weight_for(layer, key, "_constraint")
                if w is not None and w.id not in seen:
                    seen.add(w.id)
                    out.append((w, constraint))
    return out


def apply(pairs):
    """Assign each variable its projection; `pairs` from constrained(). Runs in a scope: only the variables keep
    what it computes."""
    with ENGINE.scope("constraints"):
        for variable, constraint in pairs:
            variable.assign(constraint(variable))
