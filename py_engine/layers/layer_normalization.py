"""LayerNormalization: each example normalised over its last axis (or axes), then scaled by gamma and shifted by beta."""

from .. import ops
from ..errors import ShapeError
from . import initializers
from .base import Layer, register


@register
class LayerNormalization(Layer):
    """(x - mean) / sqrt(variance + epsilon) * gamma + beta over `axis`; weights gamma, beta shaped like those axes
    (Keras's and TF.js's names and order). Masks pass through."""

    supports_masking = True

    def __init__(
        self,
        axis=-1,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        rms_scaling=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if rms_scaling:
            raise ValueError(f"{self.name} (LayerNormalization): rms_scaling is not supported")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.epsilon, self.center, self.scale = float(epsilon), bool(center), bool(scale)
        self.beta_initializer = initializers.serialize(beta_initializer)
        self.gamma_initializer = initializers.serialize(gamma_initializer)
        self.gamma = self.beta = None
        self._axes = None

    def _resolve(self, input_shape):
        rank = len(input_shape)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if not axes or any(not isinstance(a, int) or not -rank <= a < rank or a % rank == 0 for a in axes):
            raise ShapeError(
                f"{self.name} (LayerNormalization): axis {self.axis!r} must name axes of the input {tuple(input_shape)} "
                "other than the batch axis"
            )
        return sorted({a % rank for a in axes})

    def build(self, input_shape):
        self._axes = self._resolve(input_shape)
        shape = tuple(input_shape[a] for a in self._axes)
        if None in shape:
            raise ShapeError(
                f"{self.name} (LayerNormalization): the normalised axes {self._axes} of {tuple(input_shape)} "
                "need known sizes"
            )
        if self.scale:
            self.gamma = self.add_weight("gamma", shape, self.gamma_initializer)
        if self.center:
            self.beta = self.add_weight("beta", shape, self.beta_initializer)

    def compute_output_shape(self, input_shape):
        axes = self._resolve(input_shape)
        built = self.gamma if self.gamma is not None else self.beta
        if built is not None and any(input_shape[a] not in (None, n) for a, n in zip(axes, built.shape)):
            raise ShapeError(
                f"{self.name} (LayerNormalization): built for sizes {built.shape} on axes {axes}, got {tuple(input_shape)}"
            )
        return input_shape

    def call(self, x, training=False):
        return ops.layer_norm(x, self.gamma, self.beta, self._resolve(x.shape), self.epsilon)

    def layer_config(self):
        return {
            "axis": self.axis,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": self.beta_initializer,
            "gamma_initializer": self.gamma_initializer,
        }
