"""Pooling over time and global max pooling, as TF.js 4.22 runs them: MaxPooling1D, AveragePooling1D (windows
over [batch, time, features], computed as a 2-D pool of width 1), GlobalMaxPooling1D and GlobalMaxPooling2D."""

from .. import ops
from ..errors import ShapeError
from ..window_output_size import conv_output_length
from .base import Layer, channels_last, register
from .convolutional import padding_mode
from .reshaping import data_format_of


def _single(value, what, layer):
    """An int or a list of one int (TF.js writes [2]) as a positive int."""
    v = value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise ValueError(f"{layer}: {what} must be a positive int or a list of one, got {value!r}")
    return v


def _is_sequence(layer, input_shape):
    if len(input_shape) != 3:
        raise ShapeError(
            f"{layer.name} ({layer.class_name}): expects inputs [batch, time, features], got {tuple(input_shape)}"
        )


class _Pool1D(Layer):
    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        self.pool_size = _single(pool_size, "pool_size", self.name)
        self.strides = self.pool_size if strides is None else _single(strides, "strides", self.name)
        self.padding = padding_mode(padding, self.name)

    def compute_output_shape(self, input_shape):
        _is_sequence(self, input_shape)
        steps = conv_output_length(input_shape[1], self.pool_size, self.padding, self.strides)
        if steps is not None and steps <= 0:
            raise ShapeError(
                f"{self.name} ({self.class_name}): a window of {self.pool_size} leaves no output for "
                f"inputs of shape {tuple(input_shape)}"
            )
        return (input_shape[0], steps, input_shape[2])

    def call(self, x, training=False):
        pooled = self.pool(ops.expand_dims(x, 2), (self.pool_size, 1), (self.strides, 1), self.padding)
        return ops.squeeze(pooled, [2])

    def layer_config(self):
        return {"pool_size": [self.pool_size], "padding": self.padding, "strides": [self.strides]}


@register
class MaxPooling1D(_Pool1D):
    aliases = ("MaxPool1D",)
    pool = staticmethod(ops.max_pool)


@register
class AveragePooling1D(_Pool1D):
    """Mean over each window; with "same" padding each window averages only its real steps (as TensorFlow). Its
    gradient is that mean's; TF.js 4.22's CPU gradient divides a window hanging over the edge by its full size."""

    aliases = ("AvgPool1D",)
    pool = staticmethod(ops.avg_pool)


@register
class GlobalMaxPooling1D(Layer):
    """The max over time of [batch, time, features]. TF.js's ignores masks (it does not support masking), so here
    a mask is dropped too."""

    aliases = ("GlobalMaxPool1D",)

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        self.keepdims = bool(keepdims)

    def compute_output_shape(self, input_shape):
        _is_sequence(self, input_shape)
        return (input_shape[0], 1, input_shape[2]) if self.keepdims else (input_shape[0], input_shape[2])

    def call(self, x, training=False):
        return ops.max(x, 1, keepdims=self.keepdims)

    def layer_config(self):
        return {"keepdims": True} if self.keepdims else {}  # TF.js has no keepdims: written only when set


@register
class GlobalMaxPooling2D(Layer):
    """The max over each image's rows and columns, of NHWC (channels_last) or NCHW (channels_first) inputs."""

    aliases = ("GlobalMaxPool2D",)

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format_of(data_format, self.name)
        self.keepdims = bool(keepdims)

    def _axes(self):
        return (2, 3) if self.data_format == "channels_first" else (1, 2)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ShapeError(f"{self.name} (GlobalMaxPooling2D): expects inputs of rank 4, got {tuple(input_shape)}")
        if self.keepdims:
            return tuple(1 if k in self._axes() else d for k, d in enumerate(input_shape))
        return tuple(d for k, d in enumerate(input_shape) if k not in self._axes())

    def call(self, x, training=False):
        return ops.max(x, list(self._axes()), keepdims=self.keepdims)

    def layer_config(self):
        config = {"data_format": self.data_format}
        return {**config, "keepdims": True} if self.keepdims else config  # TF.js has no keepdims
