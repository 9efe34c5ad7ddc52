"""Conv3D and Conv3DTranspose over [batch, depth, height, width, channels], as TensorFlow.js 4.22 runs and saves them
(kernels [d, h, w, in, filters], and [d, h, w, filters, in] for the transpose); MaxPooling3D and AveragePooling3D
are in pooling.py.

Each 3-D layer runs its op in ops/nn.py (conv3d, conv3d_transpose, max_pool3d, avg_pool3d): the 2-D op it generalizes,
run once per tap of the window along depth, on the depth slices that tap meets (frames [batch * out depth, height,
width, channels]), and summed (convolutions, average pools) or maxed (max pools) across taps, so every backend runs them
on its 2-D kernels, with their gradients, and no shader of its own. Padding along depth is TensorFlow's (the extra slice
at the end); an average counts only real (unpadded) values, and a maximum's gradient goes to the first maximum in
(depth, row, column) order, as TensorFlow's 3-D kernels.
"""

from ..errors import ShapeError
from ..ops.nn import conv3d, conv3d_transpose
from ..window_output_size import conv_output_length, deconv_length
from . import activations, initializers
from .base import Layer, channels_last, register
from .convolutional import padding_mode


def triple(value, what, layer):
    """An int, or three ints, as three positive ints (kernel sizes, strides, pool sizes)."""
    values = (value,) * 3 if isinstance(value, int) else tuple(value) if isinstance(value, (list, tuple)) else ()
    if len(values) == 1:
        values *= 3
    if len(values) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"{layer}: {what} must be a positive int or three of them, got {value!r}")
    return values


def check_volume_input(layer, input_shape):
    if len(input_shape) != 5:
        raise ShapeError(
            f"{layer.name} ({layer.class_name}): expects inputs [batch, depth, height, width, channels], got shape "
            f"{tuple(input_shape)}"
        )


class _Conv3DBase(Layer):
    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1, 1),
        padding="valid",
        data_format=None,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"{self.name} ({self.class_name}): filters must be a positive int, got {filters!r}")
        self.filters = filters
        self.kernel_size = triple(kernel_size, "kernel_size", self.name)
        self.strides = triple(strides, "strides", self.name)
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"
        self.activation = activations.normalize(activation, self.name)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.kernel = self.bias = None

    def build(self, input_shape):
        check_volume_input(self, input_shape)
        if input_shape[-1] is None:
            raise ShapeError(f"{self.name} ({self.class_name}): the inputs' channels must be known")
        self.kernel = self.add_weight("kernel", self.kernel_shape(input_shape[-1]), self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def finish(self, y):
        if self.bias is not None:
            y = y + self.bias
        return activations.apply(self.activation, y)

    def layer_config(self):
        return {
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "data_format": self.data_format,
            "activation": self.activation,
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
        }


@register
class Conv3D(_Conv3DBase):
    aliases = ("Convolution3D",)

    def __init__(self, filters, kernel_size, dilation_rate=(1, 1, 1), **kwargs):
        super().__init__(filters, kernel_size, **kwargs)
        self.dilation_rate = triple(dilation_rate, "dilation_rate", self.name)

    def kernel_shape(self, channels):
        return (*self.kernel_size, channels, self.filters)

    def compute_output_shape(self, input_shape):
        check_volume_input(self, input_shape)
        if input_shape[-1] not in (None, self.kernel.shape[3]):
            raise ShapeError(f"{self.name} (Conv3D): built for {self.kernel.shape[3]} channels, got {input_shape}")
        sizes = [
            conv_output_length(n, k, self.padding, s, d)
            for n, k, s, d in zip(input_shape[1:4], self.kernel_size, self.strides, self.dilation_rate)
        ]
        if any(n is not None and n <= 0 for n in sizes):
            raise ShapeError(f"{self.name} (Conv3D): the window leaves no output for inputs of shape {input_shape}")
        return (input_shape[0], *sizes, self.filters)

    def call(self, x, training=False):
        return self.finish(conv3d(x, self.kernel, self.strides, self.padding, self.dilation_rate))

    def layer_config(self):
        return {**super().layer_config(), "dilation_rate": list(self.dilation_rate)}


@register
class Conv3DTranspose(_Conv3DBase):
    aliases = ("Convolution3DTranspose",)

    def __init__(self, filters, kernel_size, dilation_rate=(1, 1, 1), output_padding=None, **kwargs):
        super().__init__(filters, kernel_size, **kwargs)
        if triple(dilation_rate, "dilation_rate", self.name) != (1, 1, 1):
            raise ValueError(f"{self.name} (Conv3DTranspose): dilation_rate must be 1 (TF.js runs no other)")
        if output_padding is not None:
            raise ValueError(f"{self.name} (Conv3DTranspose): output_padding is not supported (TF.js has none)")

    def kernel_shape(self, channels):
        return (*self.kernel_size, self.filters, channels)

    def compute_output_shape(self, input_shape):
        check_volume_input(self, input_shape)
        if input_shape[-1] not in (None, self.kernel.shape[4]):
            raise ShapeError(
                f"{self.name} (Conv3DTranspose): built for {self.kernel.shape[4]} channels, got {input_shape}"
            )
        sizes = [deconv_length(*args, self.padding) for args in zip(input_shape[1:4], self.strides, self.kernel_size)]
        return (input_shape[0], *sizes, self.filters)

    def call(self, x, training=False):
        dhw = self.compute_output_shape(x.shape)[1:4]
        return self.finish(conv3d_transpose(x, self.kernel, dhw, self.strides, self.padding))
