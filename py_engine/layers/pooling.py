"""Pooling layers, as TensorFlow.js 4.22 runs and saves them: windows over time (MaxPooling1D, AveragePooling1D,
computed as a 2-D pool of width 1 over [batch, time, features]), over images (MaxPooling2D, AveragePooling2D, NHWC)
and over volumes (MaxPooling3D, AveragePooling3D, [batch, depth, height, width, channels], on the 2-D kernels: see
convolutional3d.py), and the global ones over time (GlobalAveragePooling1D, masked; GlobalMaxPooling1D) and over
images (GlobalAveragePooling2D, GlobalMaxPooling2D)."""

from .. import ops
from ..errors import ShapeError
from ..ops.nn import avg_pool3d, max_pool3d
from ..window_output_size import conv_output_length
from .base import Layer, channels_last, pair, register
from .convolutional import padding_mode, window_output_shape
from .convolutional3d import check_volume_input, triple
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


# ---- windows over time, images and volumes


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


class _WindowPool(Layer):
    """A 2-D or 3-D pool: the window and strides as tuples (`as_window`: pair or triple), channels last."""

    def _windows(self, pool_size, strides, padding, data_format, as_window):
        channels_last(data_format, self.name)
        self.pool_size = as_window(pool_size, "pool_size", self.name)
        self.strides = self.pool_size if strides is None else as_window(strides, "strides", self.name)
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"

    def call(self, x, training=False):
        return type(self).pool(x, self.pool_size, self.strides, self.padding)

    def layer_config(self):
        return {
            "pool_size": list(self.pool_size),
            "padding": self.padding,
            "strides": list(self.strides),
            "data_format": self.data_format,
        }


class _Pool2D(_WindowPool):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self._windows(pool_size, strides, padding, data_format, pair)

    def compute_output_shape(self, input_shape):
        return window_output_shape(
            self, input_shape, self.pool_size, self.strides, self.padding, (1, 1), input_shape[-1]
        )


@register
class AveragePooling2D(_Pool2D):
    """Mean over each window; with "same" padding each window averages only its real pixels (as TensorFlow)."""

    aliases = ("AvgPool2D",)
    pool = staticmethod(ops.avg_pool)


@register
class MaxPooling2D(_Pool2D):
    aliases = ("MaxPool2D",)
    pool = staticmethod(ops.max_pool)


class _Pool3D(_WindowPool):
    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self._windows(pool_size, strides, padding, data_format, triple)

    def compute_output_shape(self, input_shape):
        check_volume_input(self, input_shape)
        sizes = [
            conv_output_length(n, k, self.padding, s) for n, k, s in zip(input_shape[1:4], self.pool_size, self.strides)
        ]
        if any(n is not None and n <= 0 for n in sizes):
            raise ShapeError(
                f"{self.name} ({self.class_name}): a {self.pool_size} window leaves no output for inputs of shape "
                f"{tuple(input_shape)}"
            )
        return (input_shape[0], *sizes, input_shape[4])


@register
class MaxPooling3D(_Pool3D):
    aliases = ("MaxPool3D",)
    pool = staticmethod(max_pool3d)


@register
class AveragePooling3D(_Pool3D):
    aliases = ("AvgPool3D",)
    pool = staticmethod(avg_pool3d)


# ---- global pooling


@register
class GlobalAveragePooling1D(Layer):
    """Keras's masked mean: sum(x * mask) / sum(mask) over time (TF.js's ignores masks). The output has no time
    axis, so it carries no mask."""

    aliases = ("GlobalAvgPool1D",)
    supports_masking = True

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last", "channelsLast"):
            raise ValueError(
                f"{self.name} (GlobalAveragePooling1D): data_format {data_format!r} is not supported; "
                "inputs are [batch, time, features] (channels_last)"
            )
        self.data_format, self.keepdims = "channels_last", bool(keepdims)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(
                f"{self.name} (GlobalAveragePooling1D): expects inputs [batch, time, features], got {tuple(input_shape)}"
            )
        return (input_shape[0], 1, input_shape[2]) if self.keepdims else (input_shape[0], input_shape[2])

    def call(self, x, training=False, mask=None):
        if mask is None:
            return ops.mean(x, 1, keepdims=self.keepdims)
        steps = ops.expand_dims(ops.cast(mask, "float32"), -1)
        return ops.sum(x * steps, 1, keepdims=self.keepdims) / ops.sum(steps, 1, keepdims=self.keepdims)

    def compute_mask(self, inputs, mask=None):
        return None

    def layer_config(self):
        config = {"data_format": self.data_format}
        return {**config, "keepdims": True} if self.keepdims else config  # TF.js has no keepdims


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
