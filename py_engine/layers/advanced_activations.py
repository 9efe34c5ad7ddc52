"""Activation layers with parameters, as TF.js 4.22 runs them: LeakyReLU, PReLU, ELU, ThresholdedReLU.

PReLU has a trainable weight "alpha" (one slope per input value, shared along `shared_axes`); it passes masks on,
as in TF.js. LeakyReLU, ELU and ThresholdedReLU do not support masking in TF.js, so here they drop a mask.
"""

from .. import ops
from ..errors import ShapeError
from . import initializers
from .base import Layer, register


@register
class LeakyReLU(Layer):
    """x where x >= 0, else alpha * x (TF.js's default alpha is 0.3)."""

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, x, training=False):
        return ops.leaky_relu(x, self.alpha)

    def layer_config(self):
        return {"alpha": self.alpha}


@register
class PReLU(Layer):
    """x where x >= 0, else alpha * x, with alpha a trainable weight of the input's shape without the batch axis
    (size 1 on each of shared_axes, so one slope serves a whole axis, e.g. shared_axes=[1, 2] for images)."""

    supports_masking = True

    def __init__(self, alpha_initializer="zeros", shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.serialize(alpha_initializer)
        if shared_axes is not None:
            shared_axes = [shared_axes] if isinstance(shared_axes, int) else list(shared_axes)
            if not all(isinstance(a, int) and a >= 1 for a in shared_axes):
                raise ValueError(
                    f"{self.name} (PReLU): shared_axes must be axes >= 1 (axis 0 is the batch), got {shared_axes!r}"
                )
        self.shared_axes = shared_axes
        self.alpha = None

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            if axis >= len(input_shape):
                raise ShapeError(f"{self.name} (PReLU): shared axis {axis} is not an axis of inputs {input_shape}")
            shape[axis - 1] = 1
        if any(d is None for d in shape):
            raise ShapeError(
                f"{self.name} (PReLU): inputs {input_shape} have an axis of unknown size; share it (shared_axes) or "
                "give the input a fixed shape"
            )
        self.alpha = self.add_weight("alpha", tuple(shape), self.alpha_initializer)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != self.alpha.ndim + 1 or any(
            a != 1 and d is not None and d != a for a, d in zip(self.alpha.shape, input_shape[1:])
        ):
            raise ShapeError(f"{self.name} (PReLU): inputs {input_shape} do not fit alpha of shape {self.alpha.shape}")
        return input_shape

    def call(self, x, training=False):
        # relu(x) + alpha * min(x, 0) is exact on both sides (one term is 0) and differentiable in alpha
        return ops.relu(x) + self.alpha * ops.minimum(x, 0.0)

    def layer_config(self):
        return {"alpha_initializer": self.alpha_initializer, "shared_axes": self.shared_axes}


@register
class ELU(Layer):
    """x where x > 0, else alpha * (exp(x) - 1). TF.js 4.22 refuses any alpha but 1; here any alpha works (as in
    Keras), and a model with another alpha saved here does not load in TF.js."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, x, training=False):
        y = ops.elu(x)
        return y if self.alpha == 1.0 else ops.where(x > 0, y, y * self.alpha)

    def layer_config(self):
        return {"alpha": self.alpha}


@register
class ThresholdedReLU(Layer):
    """x where x > theta, else 0."""

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.theta = float(theta)

    def call(self, x, training=False):
        return x * ops.cast(ops.greater(x, self.theta), x.dtype)

    def layer_config(self):
        return {"theta": self.theta}
