"""Weight initializers, by Keras name or config ({"class_name": "GlorotUniform", "config": {"seed": null}}).

Only layers built from scratch use them (a loaded model takes its weights from the shards), so a config
naming an unknown initializer fails when, and only when, it has to initialize something.
"""

import numpy as np

from ..ops.creation import random_generator

# name -> Keras class name
CLASS_NAMES = {
    "zeros": "Zeros",
    "ones": "Ones",
    "constant": "Constant",
    "random_normal": "RandomNormal",
    "random_uniform": "RandomUniform",
    "truncated_normal": "TruncatedNormal",
    "variance_scaling": "VarianceScaling",
    "glorot_uniform": "GlorotUniform",
    "glorot_normal": "GlorotNormal",
    "he_normal": "HeNormal",
    "he_uniform": "HeUniform",
    "lecun_normal": "LecunNormal",
    "lecun_uniform": "LecunUniform",
}
# Variance scaling presets: class name -> (scale, mode, distribution)
_PRESETS = {
    "GlorotUniform": (1.0, "fan_avg", "uniform"),
    "GlorotNormal": (1.0, "fan_avg", "truncated_normal"),
    "HeNormal": (2.0, "fan_in", "truncated_normal"),
    "HeUniform": (2.0, "fan_in", "uniform"),
    "LecunNormal": (1.0, "fan_in", "truncated_normal"),
    "LecunUniform": (1.0, "fan_in", "uniform"),
}


def _snake(value):
    """TF.js may write enum values in camelCase ("fanAvg"); Keras writes snake_case ("fan_avg")."""
    return "".join("_" + c.lower() if c.isupper() else c for c in value) if isinstance(value, str) else value


def serialize(identifier):
    """The Keras config of an initializer given by name ("he_normal") or config."""
    if isinstance(identifier, dict):
        return identifier
    name = _snake(identifier)
    if name not in CLASS_NAMES:
        raise ValueError(f"unknown initializer {identifier!r}; known: {', '.join(CLASS_NAMES)}")
    config = {"value": 0.0} if name == "constant" else {} if name in ("zeros", "ones") else {"seed": None}
    return {"class_name": CLASS_NAMES[name], "config": config}


def _fans(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    receptive = int(np.prod(shape[:-2]))  # conv kernels [h, w, in, out]
    return shape[-2] * receptive, shape[-1] * receptive


def _truncated(rng, shape, stddev):
    """Normal values redrawn until within two standard deviations."""
    values = rng.standard_normal(shape)
    while (outside := np.abs(values) > 2).any():
        values[outside] = rng.standard_normal(int(outside.sum()))
    return values * stddev


def initialize(identifier, shape):
    """A float32 array of `shape` drawn as the initializer says."""
    config = serialize(identifier)
    class_name, args = config.get("class_name"), dict(config.get("config") or {})
    shape = tuple(shape)
    rng = random_generator(args.get("seed"))
    if class_name == "Zeros":
        return np.zeros(shape, np.float32)
    if class_name == "Ones":
        return np.ones(shape, np.float32)
    if class_name == "Constant":
        return np.full(shape, args.get("value", 0.0), np.float32)
    if class_name == "RandomNormal":
        return (args.get("mean", 0.0) + args.get("stddev", 0.05) * rng.standard_normal(shape)).astype(np.float32)
    if class_name == "RandomUniform":
        low, high = args.get("minval", -0.05), args.get("maxval", 0.05)
        return rng.uniform(low, high, shape).astype(np.float32)
    if class_name == "TruncatedNormal":
        return (args.get("mean", 0.0) + _truncated(rng, shape, args.get("stddev", 0.05))).astype(np.float32)
    if class_name in _PRESETS or class_name == "VarianceScaling":
        scale, mode, distribution = _PRESETS.get(class_name, (1.0, "fan_in", "truncated_normal"))
        if class_name == "VarianceScaling":
            scale = args.get("scale", scale)
            mode, distribution = _snake(args.get("mode", mode)), _snake(args.get("distribution", distribution))
        fan_in, fan_out = _fans(shape)
        n = max(1.0, {"fan_in": fan_in, "fan_out": fan_out}.get(mode, (fan_in + fan_out) / 2))
        if distribution == "uniform":
            limit = np.sqrt(3.0 * scale / n)
            return rng.uniform(-limit, limit, shape).astype(np.float32)
        if distribution == "untruncated_normal":
            return (np.sqrt(scale / n) * rng.standard_normal(shape)).astype(np.float32)
        # 0.8796... is the standard deviation of a unit normal truncated to two standard deviations
        return _truncated(rng, shape, np.sqrt(scale / n) / 0.87962566103423978).astype(np.float32)
    raise ValueError(f"unknown initializer {config!r}; known: {', '.join(CLASS_NAMES.values())}")
