"""Regularizing noise, applied only while training (at inference the input passes through), as TF.js 4.22 runs it:
GaussianNoise, GaussianDropout, AlphaDropout, SpatialDropout1D. All of them pass masks on."""

import math

from .. import ops
from ..errors import ShapeError
from .base import Layer, register
from .core import Dropout


def _rate(layer, rate):
    if not 0 <= rate < 1:
        raise ValueError(f"{layer.name} ({layer.class_name}): rate must be in [0, 1), got {rate}")
    return float(rate)


@register
class GaussianNoise(Layer):
    """x + N(0, stddev^2) noise."""

    supports_masking = True

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if stddev < 0:
            raise ValueError(f"{self.name} (GaussianNoise): stddev must be >= 0, got {stddev}")
        self.stddev, self.seed = float(stddev), seed

    def call(self, x, training=False):
        if not training or self.stddev == 0:
            return x
        return x + ops.random_normal(x.shape, 0.0, self.stddev, seed=self.seed)

    def layer_config(self):
        return {"stddev": self.stddev, "seed": self.seed}


@register
class GaussianDropout(Layer):
    """x * N(1, rate / (1 - rate)) noise: multiplicative noise with dropout's variance."""

    supports_masking = True

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _rate(self, rate), seed

    def call(self, x, training=False):
        if not training or self.rate == 0:
            return x
        stddev = math.sqrt(self.rate / (1 - self.rate))
        return x * ops.random_normal(x.shape, 1.0, stddev, seed=self.seed)

    def layer_config(self):
        return {"rate": self.rate, "seed": self.seed}


# SELU's constants, which AlphaDropout keeps the mean and variance of
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@register
class AlphaDropout(Layer):
    """Dropout for SELU networks: dropped values become SELU's negative saturation, then an affine map restores
    the mean and variance. noise_shape (with the batch axis) shares one draw along its size-1 axes. Follows Keras
    where TF.js 4.22 has a sign error (its dropped values get the positive saturation, which shifts the mean)."""

    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _rate(self, rate), seed
        self.noise_shape = None if noise_shape is None else list(noise_shape)

    def call(self, x, training=False):
        if not training or self.rate == 0:
            return x
        shape = x.shape if self.noise_shape is None else [x.shape[0], *self.noise_shape[1:]]
        kept = ops.cast(ops.greater_equal(ops.random_uniform(shape, seed=self.seed), self.rate), "float32")
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        a = ((1 - self.rate) * (1 + self.rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * self.rate
        # Dropped values become alpha_p, as in Keras (TF.js 4.22 multiplies by kept - 1 and sets them to -alpha_p)
        return (x * kept + (1.0 - kept) * alpha_p) * a + b

    def layer_config(self):
        return {"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


@register
class SpatialDropout1D(Dropout):
    """Dropout of whole feature channels of [batch, time, features]: one draw per example and channel."""

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(
                f"{self.name} (SpatialDropout1D): expects inputs [batch, time, features], got {tuple(input_shape)}"
            )
        return input_shape

    def call(self, x, training=False):
        if not training or self.rate == 0:
            return x
        return ops.dropout(x, self.rate, [x.shape[0], 1, x.shape[2]], self.seed)
