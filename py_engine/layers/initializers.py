"""Weight initializers: TensorFlow.js 4.22's (tfjs-layers initializers.ts), by name, config or object.

A layer takes `kernel_initializer=` as a name (Keras's "glorot_uniform" or TF.js's "glorotUniform"), a config
({"class_name": "VarianceScaling", "config": {...}}, as model.json holds it) or an Initializer object
(`pe.initializers.Orthogonal(gain=2)`); its config keeps `serialize()`'s form, TF.js's class names and snake_case
keys, which both TF.js and this package load.

TF.js's semantics, and where they are not Keras's:
- VarianceScaling(scale, mode, distribution): n = fan_in, fan_out or their mean (at least 1), fans as TF.js computes
  them (a [in, out] matrix; a kernel [..., in, out] multiplies both by its receptive field; any other rank takes
  sqrt(size) for both). distribution "normal" is TF.js's: a normal of stddev sqrt(scale / n) truncated at two
  standard deviations, without Keras's correction (Keras divides the stddev by 0.8796, the stddev of a truncated
  unit normal, so its draws have variance scale / n; TF.js's have 0.774 of that). GlorotNormal, HeNormal and
  LeCunNormal are this distribution, as in TF.js. "truncated_normal" is Keras's corrected one: TF.js 4.22 accepts
  the name but draws from the uniform distribution instead (its code tests only for "normal"), a bug not followed
  here. "untruncated_normal" (Keras) is a plain normal; TF.js cannot load a config naming it.
- RandomUniform(minval, maxval), RandomNormal / TruncatedNormal(mean, stddev): a 0 given for minval, maxval, mean or
  stddev is 0 here; TF.js 4.22 reads `args.minval || default`, so its 0 becomes the default (-0.05, 0.05, 0, 0.05).
- Orthogonal(gain): the Q of a QR decomposition of a normal [max(rows, cols), min(rows, cols)] matrix, its columns'
  signs fixed by R's diagonal, transposed when rows < cols, times gain (rows: the product of all axes but the last).
- Identity(gain): gain * eye for a 2-D shape (TF.js requires it square; a rectangular one is Keras's eye(n, m)).

Draws use numpy's generator (seeded by the config's seed, else pe's shared one), not TF.js's: the same config gives
the same distribution, not the same numbers. Only layers built from scratch use initializers (a loaded model takes
its weights from the shards), so a config naming an unknown initializer fails when, and only when, it has to
initialize something.
"""

import math

import numpy as np

from ..ops.creation import random_generator

TRUNCATED_STDDEV = 0.87962566103423978  # the standard deviation of a unit normal truncated to [-2, 2]


def _snake(value):
    """TF.js writes enum values in camelCase ("fanAvg") in code and snake_case ("fan_avg") in model.json."""
    return "".join("_" + c.lower() if c.isupper() else c for c in value) if isinstance(value, str) else value


def compute_fans(shape):
    """(fan_in, fan_out) as TF.js's computeFans (channels last)."""
    shape = tuple(shape)
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    if len(shape) in (3, 4, 5):
        receptive = math.prod(shape[:-2])
        return float(shape[-2] * receptive), float(shape[-1] * receptive)
    root = math.sqrt(math.prod(shape))
    return root, root


def _truncated_normal(rng, shape, mean, stddev):
    """Normal values redrawn until within two standard deviations of the mean, as TF.js's truncatedNormal."""
    values = rng.standard_normal(shape)
    while (outside := np.abs(values) > 2).any():
        values[outside] = rng.standard_normal(int(outside.sum()))
    return (mean + values * stddev).astype(np.float32)


def _number(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{owner}: {name} must be a finite number, got {value!r}")
    return float(value)


class Initializer:
    """An initializer: called with a shape, it returns a float32 numpy array. `class_name` is TF.js's class name,
    get_config() its config with model.json's (snake_case) keys."""

    class_name = None

    def __call__(self, shape):
        raise NotImplementedError

    def get_config(self):
        return {}

    def to_config(self):
        """{"class_name": ..., "config": {...}}, as a layer config in model.json holds it."""
        return {"class_name": self.class_name, "config": self.get_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


class Zeros(Initializer):
    class_name = "Zeros"

    def __call__(self, shape):
        return np.zeros(tuple(shape), np.float32)


class Ones(Initializer):
    class_name = "Ones"

    def __call__(self, shape):
        return np.ones(tuple(shape), np.float32)


class Constant(Initializer):
    class_name = "Constant"

    def __init__(self, value=0.0):
        self.value = _number("Constant", "value", value)

    def __call__(self, shape):
        return np.full(tuple(shape), self.value, np.float32)

    def get_config(self):
        return {"value": self.value}


class _Seeded(Initializer):
    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, float)) or seed != int(seed)):
            raise ValueError(f"{type(self).__name__}: seed must be an int or None, got {seed!r}")
        self.seed = None if seed is None else int(seed)

    def _rng(self):
        return random_generator(self.seed)


class RandomUniform(_Seeded):
    class_name = "RandomUniform"

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = (
            _number("RandomUniform", "minval", minval),
            _number("RandomUniform", "maxval", maxval),
        )
        if self.minval > self.maxval:
            raise ValueError(f"RandomUniform: minval {self.minval} is greater than maxval {self.maxval}")

    def __call__(self, shape):
        return self._rng().uniform(self.minval, self.maxval, tuple(shape)).astype(np.float32)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(_Seeded):
    class_name = "RandomNormal"

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = _number(self.class_name, "mean", mean), _number(self.class_name, "stddev", stddev)
        if self.stddev < 0:
            raise ValueError(f"{self.class_name}: stddev must be >= 0, got {self.stddev}")

    def __call__(self, shape):
        return (self.mean + self.stddev * self._rng().standard_normal(tuple(shape))).astype(np.float32)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """A normal of `mean` and `stddev`, values beyond two standard deviations redrawn (as TF.js and Keras)."""

    class_name = "TruncatedNormal"

    def __call__(self, shape):
        return _truncated_normal(self._rng(), tuple(shape), self.mean, self.stddev)


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "truncated_normal", "untruncated_normal", "uniform")


class VarianceScaling(_Seeded):
    """Draws of variance about scale / n (n: fan_in, fan_out or fan_avg); see the module's docstring for
    "normal" (TF.js's, uncorrected), "truncated_normal" (Keras's), "untruncated_normal" and "uniform"."""

    class_name = "VarianceScaling"

    def __init__(self, scale=1.0, mode="fan_in", distribution="normal", seed=None):
        super().__init__(seed)
        self.scale = _number(self.class_name, "scale", scale)
        if self.scale <= 0:
            raise ValueError(f"{self.class_name}: scale must be a positive number, got {scale!r}")
        self.mode, self.distribution = _snake(mode), _snake(distribution)
        if self.mode not in _MODES:
            raise ValueError(f"{self.class_name}: mode must be one of {', '.join(_MODES)}, got {mode!r}")
        if self.distribution not in _DISTRIBUTIONS:
            raise ValueError(
                f"{self.class_name}: distribution must be one of {', '.join(_DISTRIBUTIONS)}, got {distribution!r}"
            )

    def __call__(self, shape):
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape)
        n = max(1.0, {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode])
        variance = self.scale / n
        rng = self._rng()
        if self.distribution == "uniform":
            limit = math.sqrt(3 * variance)
            return rng.uniform(-limit, limit, shape).astype(np.float32)
        if self.distribution == "untruncated_normal":
            return (math.sqrt(variance) * rng.standard_normal(shape)).astype(np.float32)
        stddev = math.sqrt(variance)
        if self.distribution == "truncated_normal":
            stddev /= TRUNCATED_STDDEV
        return _truncated_normal(rng, shape, 0.0, stddev)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


class _Preset(VarianceScaling):
    """A VarianceScaling with fixed arguments; its config holds the seed alone, under its own class name."""

    PRESET = (1.0, "fan_in", "normal")

    def __init__(self, seed=None):
        super().__init__(*self.PRESET, seed=seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    class_name, PRESET = "GlorotUniform", (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    class_name, PRESET = "GlorotNormal", (1.0, "fan_avg", "normal")


class HeNormal(_Preset):
    class_name, PRESET = "HeNormal", (2.0, "fan_in", "normal")


class HeUniform(_Preset):
    class_name, PRESET = "HeUniform", (2.0, "fan_in", "uniform")


class LeCunNormal(_Preset):
    class_name, PRESET = "LeCunNormal", (1.0, "fan_in", "normal")


class LeCunUniform(_Preset):
    class_name, PRESET = "LeCunUniform", (1.0, "fan_in", "uniform")


class Orthogonal(_Seeded):
    class_name = "Orthogonal"

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = _number("Orthogonal", "gain", gain)

    def __call__(self, shape):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the shape must have at least 2 axes, got {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        normal = self._rng().standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(normal)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q).reshape(shape).astype(np.float32)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    class_name = "Identity"

    def __init__(self, gain=1.0):
        self.gain = _number("Identity", "gain", gain)

    def __call__(self, shape):
        shape = tuple(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity: only a 2-D shape can be an identity matrix, got {shape}")
        return (self.gain * np.eye(*shape)).astype(np.float32)

    def get_config(self):
        return {"gain": self.gain}


CLASSES = {
    cls.class_name: cls
    for cls in (
        Zeros,
        Ones,
        Constant,
        RandomUniform,
        RandomNormal,
        TruncatedNormal,
        VarianceScaling,
        GlorotUniform,
        GlorotNormal,
        HeNormal,
        HeUniform,
        LeCunNormal,
        LeCunUniform,
        Orthogonal,
        Identity,
    )
}
_CLASS_ALIASES = {"LecunNormal": "LeCunNormal", "LecunUniform": "LeCunUniform"}  # Keras's spelling

# name -> class name: Keras's snake_case names and TF.js's camelCase identifiers (tf.initializers' factories)
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
    "lecun_normal": "LeCunNormal",
    "lecun_uniform": "LeCunUniform",
    "orthogonal": "Orthogonal",
    "identity": "Identity",
}
_NAMES = {
    **CLASS_NAMES,
    **{"le_cun_normal": "LeCunNormal", "le_cun_uniform": "LeCunUniform"},  # TF.js's leCunNormal, snake-cased
    **{name: name for name in CLASSES},
    **_CLASS_ALIASES,
}


def _class_for(identifier):
    name = (_NAMES.get(identifier) or _NAMES.get(_snake(identifier))) if isinstance(identifier, str) else None
    if name is None:
        raise ValueError(f"unknown initializer {identifier!r}; known: {', '.join(CLASS_NAMES)}")
    return CLASSES[name]


def get(identifier):
    """An Initializer from a name, a config {"class_name", "config"} (keys snake_case or TF.js's camelCase) or an
    Initializer (returned as is)."""
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        return _class_for(identifier)()
    if isinstance(identifier, dict):
        cls = _class_for(identifier.get("class_name"))
        config = {_snake(k): v for k, v in (identifier.get("config") or {}).items()}
        try:
            return cls.from_config(config)
        except TypeError as e:
            raise ValueError(f"initializer {identifier!r}: {e}") from None
    raise TypeError(f"expected an initializer name, config or Initializer, got {type(identifier).__name__}")


def serialize(identifier):
    """The config {"class_name": ..., "config": {...}} of an initializer given by name or object, in the form
    model.json holds (TF.js's class names, snake_case keys). A config is returned as given, its class name made
    TF.js's spelling when it is one of ours (an unknown one fails only when something is initialized with it)."""
    if isinstance(identifier, dict):
        name = identifier.get("class_name")
        return {**identifier, "class_name": _NAMES.get(name, name) if isinstance(name, str) else name}
    return get(identifier).to_config()


def initialize(identifier, shape):
    """A float32 array of `shape` drawn as the initializer says."""
    return get(identifier)(tuple(shape))
