"""BatchNormalization over the last axis: moving statistics at inference, batch statistics while training."""

from .. import ops
from . import initializers
from .base import Layer, register
from .core import check_last_axis


@register
class BatchNormalization(Layer):
    """(x - moving_mean) / sqrt(moving_variance + epsilon) * gamma + beta; weights gamma, beta, moving_mean,
    moving_variance (the last two not trainable), as Keras and TF.js name and order them."""

    supports_masking = True  # as in TF.js: works per step, so a sequence's mask passes through

    def __init__(
        self,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        moving_mean_initializer="zeros",
        moving_variance_initializer="ones",
        synchronized=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.axis = axis
        if not isinstance(axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis, int):
            raise ValueError(f"{self.name} (BatchNormalization): axis must be one int, got {axis!r}")
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.initializers = {
            "beta": initializers.serialize(beta_initializer),
            "gamma": initializers.serialize(gamma_initializer),
            "moving_mean": initializers.serialize(moving_mean_initializer),
            "moving_variance": initializers.serialize(moving_variance_initializer),
        }
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        axis = self.axis[0] if isinstance(self.axis, (list, tuple)) else self.axis
        rank = len(input_shape)
        if rank < 2 or axis not in (-1, rank - 1) or input_shape[-1] is None:
            raise ValueError(
                f"{self.name} (BatchNormalization): normalizes the last axis (known size) only; got axis {self.axis!r} "
                f"for inputs of shape {input_shape}"
            )
        channels = (input_shape[-1],)
        if self.scale:
            self.gamma = self.add_weight("gamma", channels, self.initializers["gamma"])
        if self.center:
            self.beta = self.add_weight("beta", channels, self.initializers["beta"])
        self.moving_mean = self.add_weight("moving_mean", channels, self.initializers["moving_mean"], trainable=False)
        variance = self.initializers["moving_variance"]
        self.moving_variance = self.add_weight("moving_variance", channels, variance, trainable=False)

    def compute_output_shape(self, input_shape):
        check_last_axis(self, input_shape, self.moving_mean.shape[0])
        return input_shape

    def call(self, x, training=False):
        if not training:
            return ops.batch_norm(x, self.moving_mean, self.moving_variance, self.beta, self.gamma, self.epsilon)
        mean, variance = ops.moments(x, tuple(range(x.rank - 1)))
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
            moving.assign(moving * self.momentum + batch * (1 - self.momentum))
        return ops.batch_norm(x, mean, variance, self.beta, self.gamma, self.epsilon)

    def layer_config(self):
        return {
            "axis": self.axis,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            **{f"{name}_initializer": config for name, config in self.initializers.items()},
        }
