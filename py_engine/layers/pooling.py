"""Pooling layers (NHWC): AveragePooling2D, MaxPooling2D, GlobalAveragePooling2D."""

from .. import ops
from ..errors import ShapeError
from .base import Layer, channels_last, pair, register
from .convolutional import padding_mode, window_output_shape
from .reshaping import data_format_of


class _Pool2D(Layer):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        self.pool_size = pair(pool_size, "pool_size", self.name)
        self.strides = self.pool_size if strides is None else pair(strides, "strides", self.name)
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"

    def compute_output_shape(self, input_shape):
        return window_output_shape(
            self, input_shape, self.pool_size, self.strides, self.padding, (1, 1), input_shape[-1]
        )

    def call(self, x, training=False):
        return self.pool(x, self.pool_size, self.strides, self.padding)

    def layer_config(self):
        return {
            "pool_size": list(self.pool_size),
            "padding": self.padding,
            "strides": list(self.strides),
            "data_format": self.data_format,
        }


@register
class AveragePooling2D(_Pool2D):
    """Mean over each window; with "same" padding each window averages only its real pixels (as TensorFlow)."""

    aliases = ("AvgPool2D",)
    pool = staticmethod(ops.avg_pool)


@register
class MaxPooling2D(_Pool2D):
    aliases = ("MaxPool2D",)
    pool = staticmethod(ops.max_pool)


@register
class GlobalAveragePooling2D(Layer):
    """The mean over each image's rows and columns, of NHWC (channels_last) or NCHW (channels_first) inputs."""

    aliases = ("GlobalAvgPool2D",)

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format, self.keepdims = data_format_of(data_format, self.name), bool(keepdims)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ShapeError(f"{self.name} (GlobalAveragePooling2D): expects rank-4 (NHWC) inputs, got {input_shape}")
        axes = (2, 3) if self.data_format == "channels_first" else (1, 2)
        if self.keepdims:
            return tuple(1 if k in axes else d for k, d in enumerate(input_shape))
        return tuple(d for k, d in enumerate(input_shape) if k not in axes)

    def call(self, x, training=False):
        if self.data_format == "channels_first":
            return ops.mean(x, [2, 3], keepdims=self.keepdims)
        return ops.global_avg_pool(x, keepdims=self.keepdims)

    def layer_config(self):
        config = {"data_format": self.data_format}
        return (
            {**config, "keepdims": True} if self.keepdims else config
        )  # TF.js has no keepdims: write it only when set
