"""Core layers: Dense, Activation, ReLU, Softmax, Dropout, Flatten, Reshape."""

import math

from .. import ops
from ..errors import ShapeError
from . import activations, initializers
from .base import Layer, register


def check_last_axis(layer, shape, expected, what="input"):
    """Refuse an input whose last axis is not the size the layer's weights were built for."""
    if len(shape) < 2:
        raise ShapeError(f"{layer.name} ({layer.class_name}): {what} must have rank >= 2, got shape {shape}")
    if shape[-1] is not None and shape[-1] != expected:
        raise ShapeError(
            f"{layer.name} ({layer.class_name}): {what} has {shape[-1]} channels on its last axis (shape {shape}); "
            f"the layer was built for {expected}"
        )


@register
class Dense(Layer):
    supports_masking = True  # as in TF.js: works per step, so a sequence's mask passes through

    def __init__(
        self,
        units,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        input_dim=None,
        **kwargs,
    ):
        if input_dim is not None and kwargs.get("input_shape") is None and kwargs.get("batch_input_shape") is None:
            kwargs["input_shape"] = (input_dim,)
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"{self.name} (Dense): units must be a positive int, got {units!r}")
        self.units, self.use_bias = units, bool(use_bias)
        self.activation = activations.normalize(activation, self.name)
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.kernel = self.bias = None

    def build(self, input_shape):
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ShapeError(f"{self.name} (Dense): needs inputs with a known last axis, got shape {input_shape}")
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units), self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), self.bias_initializer)

    def compute_output_shape(self, input_shape):
        check_last_axis(self, input_shape, self.kernel.shape[0])
        return (*input_shape[:-1], self.units)

    def call(self, x, training=False):
        y = ops.matmul(x, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return activations.apply(self.activation, y)

    def layer_config(self):
        return {
            "units": self.units,
            "activation": self.activation,
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
        }


@register
class Activation(Layer):
    supports_masking = True  # as in TF.js: works per step, so a sequence's mask passes through

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.normalize(activation, self.name)

    @property
    def fused_activation(self):
        """The activation as a fused convolution can apply it, or None."""
        return self.activation if self.activation in activations.FUSABLE else None

    def call(self, x, training=False):
        return activations.apply(self.activation, x)

    def layer_config(self):
        return {"activation": self.activation}


@register
class ReLU(Layer):
    """max(x, 0), capped at max_value (6 for ReLU6); Keras's negative_slope and threshold are supported too."""

    supports_masking = True  # as in TF.js: works per step, so a sequence's mask passes through

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"{self.name} (ReLU): max_value must be >= 0, got {max_value}")
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope, self.threshold = float(negative_slope), float(threshold)

    @property
    def fused_activation(self):
        if self.negative_slope or self.threshold:
            return None
        return {None: "relu", 6.0: "relu6"}.get(self.max_value)

    def call(self, x, training=False):
        name = self.fused_activation
        if name is not None:
            return activations.apply(name, x)
        if self.negative_slope or self.threshold:
            y = ops.where(x >= self.threshold, x, (x - self.threshold) * self.negative_slope)
        else:
            y = ops.relu(x)
        return y if self.max_value is None else ops.minimum(y, self.max_value)

    def layer_config(self):
        return {"max_value": self.max_value, "negative_slope": self.negative_slope, "threshold": self.threshold}


@register
class Softmax(Layer):
    supports_masking = True  # as in TF.js: works per step, so a sequence's mask passes through

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.axis = axis[0] if isinstance(axis, list) and len(axis) == 1 else axis

    def call(self, x, training=False):
        if isinstance(self.axis, list):  # over several axes at once, as TF.js: exp(x - logsumexp(x, axes))
            return ops.exp(x - ops.logsumexp(x, self.axis, keepdims=True))
        return ops.softmax(x, self.axis)

    def layer_config(self):
        return {"axis": self.axis}


@register
class Dropout(Layer):
    """Inverted dropout while training; at inference (predict) it passes its input through."""

    supports_masking = True  # as in TF.js: works per step, so a sequence's mask passes through

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"{self.name} (Dropout): rate must be in [0, 1), got {rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, x, training=False):
        if not training or self.rate == 0:
            return x
        noise = None if self.noise_shape is None else [x.shape[0], *self.noise_shape[1:]]
        return ops.dropout(x, self.rate, noise, self.seed)

    def layer_config(self):
        return {"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


def _known_size(dims):
    return None if any(d is None for d in dims) else math.prod(dims)


@register
class Flatten(Layer):
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format

    def compute_output_shape(self, input_shape):
        return (input_shape[0], _known_size(input_shape[1:]))

    def call(self, x, training=False):
        return ops.reshape(x, (x.shape[0], math.prod(x.shape[1:])))

    def layer_config(self):
        return {"data_format": self.data_format}


@register
class Reshape(Layer):
    """Each example reshaped to target_shape (the batch axis stays); one entry may be -1."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(d < -1 for d in self.target_shape):
            raise ValueError(
                f"{self.name} (Reshape): target_shape {self.target_shape} may have one -1, no other negatives"
            )

    def _resolve(self, input_shape):
        size = _known_size(input_shape[1:])
        known = math.prod(d for d in self.target_shape if d != -1)
        if size is None:
            return tuple(None if d == -1 else d for d in self.target_shape)
        if (-1 in self.target_shape and (known == 0 or size % known)) or (
            -1 not in self.target_shape and size != known
        ):
            raise ShapeError(
                f"{self.name} (Reshape): cannot reshape examples of shape {tuple(input_shape[1:])} ({size} values) "
                f"to {self.target_shape}"
            )
        return tuple(size // known if d == -1 else d for d in self.target_shape)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], *self._resolve(input_shape))

    def call(self, x, training=False):
        return ops.reshape(x, (x.shape[0], *self._resolve(x.shape)))

    def layer_config(self):
        return {"target_shape": list(self.target_shape)}
