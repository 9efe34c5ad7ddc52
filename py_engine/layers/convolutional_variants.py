"""Conv1D, Conv2DTranspose and SeparableConv2D (channels last), as TensorFlow.js 4.22 runs and saves them.

Each is built from kernels that exist, so every backend runs it without a shader of its own:
- Conv1D: a Conv2D over images one pixel high (kernel [k, in, filters] viewed as [1, k, in, filters]); "causal"
  padding pads only the start of the sequence, by dilation * (k - 1), as Keras (TF.js 4.22 accepts it in a config
  but refuses to run it, so a model saved with it loads in TF.js and fails when it predicts).
- Conv2DTranspose: the Conv2DBackpropInput kernel (the adjoint of a convolution), kernel [h, w, filters, in] as
  TF.js stores it; output size TF.js's deconvLength: "same" in * stride, "valid" in * stride + max(k - stride, 0).
- SeparableConv2D: a depthwise convolution (depthwise_kernel [h, w, in, depth_multiplier]) then a 1x1 one
  (pointwise_kernel [1, 1, in * depth_multiplier, filters]) with the bias and activation fused into it.
  TF.js 4.22 leaves depth_multiplier out of the configs it writes; loading takes it from the depthwise kernel.
Weights are saved in TF.js's order: kernel, bias; or depthwise_kernel, pointwise_kernel, bias.
"""

from .. import ops
from ..errors import ShapeError
from ..ops.fused import fused_conv2d, fused_depthwise_conv2d
from ..ops.nn import conv2d_transpose
from ..window_output_size import conv_output_length, deconv_length
from . import activations, initializers
from .base import _SOURCE, Layer, channels_last, pair, register
from .convolutional import padding_mode, window_output_shape
from .core import check_last_axis


def _positive_int(value, what, layer):
    """An int, or a list of one int (TF.js writes kernel_size [3] for Conv1D), as an int."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer}: {what} must be a positive int (or a list of one), got {value!r}")
    return value


def _activate(activation, x, kernel, bias, run):
    """run(x, kernel, bias, fused activation), then the activation if the fused kernel cannot apply it."""
    fused = activation if activation in activations.FUSABLE else "linear"
    y = run(x, kernel, bias, fused)
    return y if fused == activation else activations.apply(activation, y)


def saved_weight_shape(name):
    """The shape of weight `name` in the model being loaded, or None (not loading, or not saved)."""
    source = _SOURCE.get()
    value = None if source is None else source.arrays.get(name)
    return None if value is None else tuple(value.shape)


class _WindowConfig(Layer):
    """What these layers share with Conv2D: activation, bias and TF.js's config keys for them."""

    def __init__(self, filters, activation=None, use_bias=True, bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"{self.name} ({self.class_name}): filters must be a positive int, got {filters!r}")
        self.filters = filters
        self.activation = activations.normalize(activation, self.name)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.bias = None

    def build_bias(self):
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def common_config(self):
        return {
            "filters": self.filters,
            "activation": self.activation,
            "use_bias": self.use_bias,
            "bias_initializer": self.bias_initializer,
        }


@register
class Conv1D(_WindowConfig):
    """A 1-D convolution over [batch, steps, channels]; padding "valid", "same" or "causal" (only the start)."""

    aliases = ("Convolution1D",)

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format=None,
        dilation_rate=1,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(filters, **kwargs)
        channels_last(data_format, self.name)
        self.kernel_size = _positive_int(kernel_size, "kernel_size", self.name)
        self.strides = _positive_int(strides, "strides", self.name)
        self.dilation_rate = _positive_int(dilation_rate, "dilation_rate", self.name)
        mode = padding.lower() if isinstance(padding, str) else padding
        if mode not in ("valid", "same", "causal"):
            raise ValueError(f"{self.name} (Conv1D): padding must be 'valid', 'same' or 'causal', got {padding!r}")
        self.padding = mode
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.kernel = None

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (Conv1D): expects inputs [batch, steps, channels] with known channels, got shape "
                f"{tuple(input_shape)}"
            )
        shape = (self.kernel_size, input_shape[-1], self.filters)
        self.kernel = self.add_weight("kernel", shape, self.kernel_initializer)
        self.build_bias()

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(f"{self.name} (Conv1D): expects inputs of rank 3, got shape {tuple(input_shape)}")
        check_last_axis(self, input_shape, self.kernel.shape[1])
        padding = "valid" if self.padding == "causal" else self.padding
        steps = input_shape[1]
        if steps is not None and self.padding == "causal":
            steps += self.dilation_rate * (self.kernel_size - 1)
        length = conv_output_length(steps, self.kernel_size, padding, self.strides, self.dilation_rate)
        if length is not None and length <= 0:
            raise ShapeError(
                f"{self.name} (Conv1D): a window of {self.kernel_size} (dilation {self.dilation_rate}) with stride "
                f"{self.strides} and padding {self.padding!r} leaves no output for inputs of shape {tuple(input_shape)}"
            )
        return (input_shape[0], length, self.filters)

    def call(self, x, training=False):
        batch, steps, channels = x.shape
        image = ops.reshape(x, (batch, 1, steps, channels))
        kernel = ops.reshape(self.kernel, (1, *self.kernel.shape))
        padding = (
            ((0, 0), (self.dilation_rate * (self.kernel_size - 1), 0)) if self.padding == "causal" else self.padding
        )

        def run(image, kernel, bias, fused):
            return fused_conv2d(image, kernel, bias, fused, (1, self.strides), padding, (1, self.dilation_rate))

        y = _activate(self.activation, image, kernel, self.bias, run)
        return ops.reshape(y, (batch, y.shape[2], self.filters))

    def layer_config(self):
        return {
            **self.common_config(),
            "kernel_size": [self.kernel_size],
            "strides": [self.strides],
            "padding": self.padding,
            "dilation_rate": [self.dilation_rate],
            "kernel_initializer": self.kernel_initializer,
        }


@register
class Conv2DTranspose(_WindowConfig):
    """The transposed convolution ("deconvolution") of NHWC images; kernel [h, w, filters, in] (TF.js's layout)."""

    aliases = ("Convolution2DTranspose",)

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        kernel_initializer="glorot_uniform",
        output_padding=None,
        **kwargs,
    ):
        super().__init__(filters, **kwargs)
        channels_last(data_format, self.name)
        self.kernel_size = pair(kernel_size, "kernel_size", self.name)
        self.strides = pair(strides, "strides", self.name)
        if pair(dilation_rate, "dilation_rate", self.name) != (1, 1):
            raise ValueError(f"{self.name} (Conv2DTranspose): dilation_rate must be 1 (TF.js runs no other)")
        if output_padding is not None:
            raise ValueError(f"{self.name} (Conv2DTranspose): output_padding is not supported (TF.js has none)")
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.kernel = None

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (Conv2DTranspose): expects NHWC inputs with known channels, got shape "
                f"{tuple(input_shape)}"
            )
        self.kernel = self.add_weight(
            "kernel", (*self.kernel_size, self.filters, input_shape[-1]), self.kernel_initializer
        )
        self.build_bias()

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ShapeError(
                f"{self.name} (Conv2DTranspose): expects inputs of rank 4 (NHWC), got {tuple(input_shape)}"
            )
        check_last_axis(self, input_shape, self.kernel.shape[3])
        hw = [deconv_length(*args, self.padding) for args in zip(input_shape[1:3], self.strides, self.kernel_size)]
        return (input_shape[0], *hw, self.filters)

    def call(self, x, training=False):
        hw = self.compute_output_shape(x.shape)[1:3]
        y = conv2d_transpose(x, self.kernel, hw, self.strides, self.padding)
        if self.bias is not None:
            y = y + self.bias
        return activations.apply(self.activation, y)

    def layer_config(self):
        return {
            **self.common_config(),
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "data_format": self.data_format,
            "kernel_initializer": self.kernel_initializer,
        }


@register
class SeparableConv2D(_WindowConfig):
    """A depthwise convolution, then a 1x1 convolution to `filters` channels (with the bias and activation)."""

    aliases = ("SeparableConvolution2D",)

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        depth_multiplier=None,
        depthwise_initializer="glorot_uniform",
        pointwise_initializer="glorot_uniform",
        **kwargs,
    ):
        for key in ("kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            if kwargs.get(key) is not None:
                raise ValueError(
                    f"SeparableConv2D: {key} is not a SeparableConv2D argument; give depthwise_* and pointwise_* ones"
                )
            kwargs.pop(key, None)
        super().__init__(filters, **kwargs)
        channels_last(data_format, self.name)
        self.kernel_size = pair(kernel_size, "kernel_size", self.name)
        self.strides = pair(strides, "strides", self.name)
        self.dilation_rate = pair(dilation_rate, "dilation_rate", self.name)
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"
        # None: not in the config. TF.js 4.22 leaves it out of the configs it writes (and then cannot load its own
        # model); build() takes it from the saved depthwise kernel, else it is 1.
        given = depth_multiplier is not None
        self.depth_multiplier = _positive_int(depth_multiplier, "depth_multiplier", self.name) if given else None
        self.depthwise_initializer = initializers.serialize(depthwise_initializer)
        self.pointwise_initializer = initializers.serialize(pointwise_initializer)
        self.depthwise_kernel = self.pointwise_kernel = None

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (SeparableConv2D): expects NHWC inputs with known channels, got shape "
                f"{tuple(input_shape)}"
            )
        channels = input_shape[-1]
        if self.depth_multiplier is None:
            saved = saved_weight_shape(f"{self.name}/depthwise_kernel")
            self.depth_multiplier = saved[3] if saved is not None and len(saved) == 4 else 1
        shape = (*self.kernel_size, channels, self.depth_multiplier)
        self.depthwise_kernel = self.add_weight("depthwise_kernel", shape, self.depthwise_initializer)
        shape = (1, 1, channels * self.depth_multiplier, self.filters)
        self.pointwise_kernel = self.add_weight("pointwise_kernel", shape, self.pointwise_initializer)
        self.build_bias()

    def compute_output_shape(self, input_shape):
        check_last_axis(self, input_shape, self.depthwise_kernel.shape[2])
        window = (self.kernel_size, self.strides, self.padding, self.dilation_rate)
        return window_output_shape(self, input_shape, *window, self.filters)

    def call(self, x, training=False):
        spatial = fused_depthwise_conv2d(
            x, self.depthwise_kernel, None, "linear", self.strides, self.padding, self.dilation_rate
        )
        return _activate(self.activation, spatial, self.pointwise_kernel, self.bias, fused_conv2d)

    def layer_config(self):
        return {
            **self.common_config(),
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "dilation_rate": list(self.dilation_rate),
            "depth_multiplier": self.depth_multiplier,
            "depthwise_initializer": self.depthwise_initializer,
            "pointwise_initializer": self.pointwise_initializer,
        }
