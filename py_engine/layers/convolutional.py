"""Convolution layers (NHWC, Keras semantics): Conv2D, DepthwiseConv2D, and ZeroPadding2D.

Kernels are laid out as Keras and TF.js store them: Conv2D "kernel" [h, w, in, filters], DepthwiseConv2D
"depthwise_kernel" [h, w, in, depth_multiplier]; "bias" has one value per output channel. Convolution,
bias and activation run as one fused kernel.
"""

from .. import ops
from ..errors import ShapeError
from ..ops.fused import fused_conv2d, fused_depthwise_conv2d
from ..window_output_size import conv_output_length
from . import activations, initializers
from .base import Layer, channels_last, pair, register
from .core import check_last_axis


def window_output_shape(layer, input_shape, window, strides, padding, dilations, channels):
    """(batch, out height, out width, channels) of a window sliding over NHWC inputs; refuses an empty output."""
    if len(input_shape) != 4:
        raise ShapeError(f"{layer.name} ({layer.class_name}): expects inputs of rank 4 (NHWC), got shape {input_shape}")
    hw = [conv_output_length(*args) for args in zip(input_shape[1:3], window, (padding,) * 2, strides, dilations)]
    if any(d is not None and d <= 0 for d in hw):
        raise ShapeError(
            f"{layer.name} ({layer.class_name}): a {window[0]}x{window[1]} window with strides {strides} and "
            f"padding {padding!r} leaves no output for inputs of shape {input_shape}"
        )
    return (input_shape[0], *hw, channels)


def padding_mode(padding, layer):
    mode = padding.lower() if isinstance(padding, str) else padding
    if mode not in ("same", "valid"):
        raise ValueError(f"{layer}: padding must be 'same' or 'valid', got {padding!r}")
    return mode


class _Conv(Layer):
    """What Conv2D and DepthwiseConv2D share: the window, bias and activation."""

    fused_op = None

    def __init__(
        self,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        activation=None,
        use_bias=True,
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        self.kernel_size = pair(kernel_size, "kernel_size", self.name)
        self.strides = pair(strides, "strides", self.name)
        self.dilation_rate = pair(dilation_rate, "dilation_rate", self.name)
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"
        self.activation = activations.normalize(activation, self.name)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.kernel = self.bias = None

    def compute_output_shape(self, input_shape):
        check_last_axis(self, input_shape, self.kernel.shape[2])
        window = (self.kernel_size, self.strides, self.padding, self.dilation_rate)
        return window_output_shape(self, input_shape, *window, self.out_channels)

    def call(self, x, training=False):
        fused = self.activation if self.activation in activations.FUSABLE else "linear"
        y = self.fused_op(x, self.kernel, self.bias, fused, self.strides, self.padding, self.dilation_rate)
        return y if fused == self.activation else activations.apply(self.activation, y)

    def layer_config(self):
        return {
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": list(self.dilation_rate),
            "activation": self.activation,
            "use_bias": self.use_bias,
            "bias_initializer": self.bias_initializer,
        }


@register
class Conv2D(_Conv):
    aliases = ("Convolution2D",)
    fused_op = staticmethod(fused_conv2d)

    def __init__(self, filters, kernel_size, kernel_initializer="glorot_uniform", groups=1, **kwargs):
        super().__init__(kernel_size, **kwargs)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{self.name} (Conv2D): filters must be a positive int, got {filters!r}")
        if groups != 1:
            raise ValueError(f"{self.name} (Conv2D): grouped convolutions (groups={groups}) are not supported")
        self.filters = filters
        self.kernel_initializer = initializers.serialize(kernel_initializer)

    @property
    def out_channels(self):
        return self.filters

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ShapeError(f"{self.name} (Conv2D): expects NHWC inputs with known channels, got shape {input_shape}")
        shape = (*self.kernel_size, input_shape[-1], self.filters)
        self.kernel = self.add_weight("kernel", shape, self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def layer_config(self):
        return {"filters": self.filters, **super().layer_config(), "kernel_initializer": self.kernel_initializer}


@register
class DepthwiseConv2D(_Conv):
    fused_op = staticmethod(fused_depthwise_conv2d)

    def __init__(self, kernel_size, depth_multiplier=1, depthwise_initializer="glorot_uniform", filters=None, **kwargs):
        kwargs.pop("kernel_initializer", None)  # some Keras versions leave Conv2D's keys in; they mean nothing here
        super().__init__(kernel_size, **kwargs)
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError(f"{self.name} (DepthwiseConv2D): depth_multiplier must be a positive int")
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = initializers.serialize(depthwise_initializer)

    @property
    def out_channels(self):
        return self.kernel.shape[2] * self.depth_multiplier

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (DepthwiseConv2D): expects NHWC inputs with known channels, got shape {input_shape}"
            )
        channels = input_shape[-1]
        shape = (*self.kernel_size, channels, self.depth_multiplier)
        self.kernel = self.add_weight("depthwise_kernel", shape, self.depthwise_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (channels * self.depth_multiplier,), self.bias_initializer)

    def layer_config(self):
        return {
            **super().layer_config(),
            "depth_multiplier": self.depth_multiplier,
            "depthwise_initializer": self.depthwise_initializer,
        }


@register
class ZeroPadding2D(Layer):
    """Zeros around each image: padding is an int, (rows, columns), or ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        self.padding = self._pairs(padding)
        self.data_format = "channels_last"

    def _pairs(self, padding):
        def count(v):
            return isinstance(v, int) and not isinstance(v, bool) and v >= 0

        if count(padding):
            return ((padding, padding), (padding, padding))
        if isinstance(padding, (list, tuple)) and len(padding) == 2:
            if all(count(p) for p in padding):
                return ((padding[0], padding[0]), (padding[1], padding[1]))
            if all(isinstance(p, (list, tuple)) and len(p) == 2 and all(map(count, p)) for p in padding):
                return tuple(tuple(p) for p in padding)
        raise ValueError(
            f"{self.name} (ZeroPadding2D): padding must be an int, (rows, columns) or ((top, bottom), (left, right)) "
            f"of non-negative ints, got {padding!r}"
        )

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ShapeError(f"{self.name} (ZeroPadding2D): expects inputs of rank 4 (NHWC), got shape {input_shape}")
        (top, bottom), (left, right) = self.padding
        h, w = input_shape[1:3]
        return (
            input_shape[0],
            None if h is None else h + top + bottom,
            None if w is None else w + left + right,
            input_shape[3],
        )

    def call(self, x, training=False):
        return ops.pad(x, [(0, 0), *self.padding, (0, 0)])

    def layer_config(self):
        return {"padding": [list(p) for p in self.padding], "data_format": self.data_format}
