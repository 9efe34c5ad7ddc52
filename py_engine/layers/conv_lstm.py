"""ConvLSTM2D: an LSTM whose gates are convolutions, over [batch, time, height, width, channels], as TF.js 4.22.

Weights as TF.js lays them out: kernel [h, w, in, 4 * filters], recurrent_kernel [h, w, filters, 4 * filters],
bias [4 * filters], gates i, f, c, o along the last axis. At each step z = conv(x_t, kernel, strides, padding,
dilation_rate) + bias + conv(h, recurrent_kernel, 1, "same"); i, f, o = recurrent_activation(z_i, z_f, z_o),
c = f * c + i * activation(z_c), h = o * activation(c). The input convolutions of every step run as one (the
frames of all steps as one batch); the recurrence is one convolution and a few elementwise ops per step, all ops
with gradients, so every backend runs it without a kernel of its own. As in TF.js: no masks (its inputs are images,
which carry none), no stacking of cells; in training, dropout and recurrent_dropout draw one mask per gate, kept for
every step.
"""

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..ops.fused import fused_conv2d
from ..window_output_size import conv_output_length
from . import activations, initializers
from .base import Layer, channels_last, pair, register
from .convolutional import padding_mode
from .recurrent import add_computed_weight, initializer_config, orthogonal


@register
class ConvLSTM2D(Layer):
    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        activation="tanh",
        recurrent_activation="hard_sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        unit_forget_bias=True,
        dropout=0.0,
        recurrent_dropout=0.0,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        implementation=None,
        **kwargs,
    ):
        kwargs.pop("cell", None)  # TF.js may write its cell's config too; the keys above hold the same values
        super().__init__(**kwargs)
        channels_last(data_format, self.name)
        if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"{self.name} (ConvLSTM2D): filters must be a positive int, got {filters!r}")
        if stateful or unroll:
            raise ValueError(f"{self.name} (ConvLSTM2D): stateful and unrolled ConvLSTM2D layers are not supported")
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0 <= rate < 1:
                raise ValueError(f"{self.name} (ConvLSTM2D): {what} must be in [0, 1), got {rate}")
        self.filters = filters
        self.kernel_size = pair(kernel_size, "kernel_size", self.name)
        self.strides = pair(strides, "strides", self.name)
        self.dilation_rate = pair(dilation_rate, "dilation_rate", self.name)
        self.padding = padding_mode(padding, self.name)
        self.data_format = "channels_last"
        self.activation = activations.normalize(activation, self.name)
        self.recurrent_activation = activations.normalize(recurrent_activation, self.name)
        self.use_bias, self.unit_forget_bias = bool(use_bias), bool(unit_forget_bias)
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.recurrent_initializer = initializer_config(recurrent_initializer)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.implementation = bool(go_backwards), implementation
        self.kernel = self.recurrent_kernel = self.bias = None

    def build(self, input_shape):
        if len(input_shape) != 5 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (ConvLSTM2D): needs inputs [batch, time, height, width, channels] with known channels, "
                f"got shape {tuple(input_shape)}"
            )
        width = 4 * self.filters
        self.kernel = self.add_weight("kernel", (*self.kernel_size, input_shape[-1], width), self.kernel_initializer)
        shape = (*self.kernel_size, self.filters, width)
        if self.recurrent_initializer["class_name"] == "Orthogonal":
            config = self.recurrent_initializer.get("config") or {}
            gain, seed = config.get("gain", 1.0), config.get("seed")
            self.recurrent_kernel = add_computed_weight(
                self, "recurrent_kernel", shape, lambda: orthogonal(shape, gain, seed)
            )
        else:
            self.recurrent_kernel = self.add_weight("recurrent_kernel", shape, self.recurrent_initializer)
        if self.use_bias:
            filters, config = self.filters, self.bias_initializer

            def value():  # the forget gate's bias starts at 1 with unit_forget_bias, as TF.js and Keras
                forget = (
                    np.ones(filters, np.float32)
                    if self.unit_forget_bias
                    else initializers.initialize(config, (filters,))
                )
                gates = [
                    initializers.initialize(config, (filters,)),
                    forget,
                    initializers.initialize(config, (2 * filters,)),
                ]
                return np.concatenate(gates)

            self.bias = add_computed_weight(self, "bias", (width,), value)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 5:
            raise ShapeError(
                f"{self.name} (ConvLSTM2D): needs inputs [batch, time, height, width, channels], got shape "
                f"{tuple(input_shape)}"
            )
        if input_shape[-1] not in (None, self.kernel.shape[2]):
            raise ShapeError(
                f"{self.name} (ConvLSTM2D): inputs have {input_shape[-1]} channels; the layer was built for "
                f"{self.kernel.shape[2]}"
            )
        hw = [
            conv_output_length(n, k, self.padding, s, d)
            for n, k, s, d in zip(input_shape[2:4], self.kernel_size, self.strides, self.dilation_rate)
        ]
        if any(n is not None and n <= 0 for n in hw):
            raise ShapeError(f"{self.name} (ConvLSTM2D): the window leaves no output for inputs {tuple(input_shape)}")
        state = (input_shape[0], *hw, self.filters)
        output = (input_shape[0], input_shape[1], *hw, self.filters) if self.return_sequences else state
        return [output, state, state] if self.return_state else output

    def call(self, x, training=False):
        if x.shape[1] == 0:
            raise ShapeError(f"{self.name} (ConvLSTM2D): the input {x.shape} has no time steps")
        if self.go_backwards:
            x = ops.reverse(x, 1)
        return self.run(x, None, None, training)

    def run(self, x, h, c, training=False):
        """[output, h, c] (or the output alone) over x [batch, time, height, width, channels] from states h and c
        (None: zeros)."""
        batch, time = x.shape[:2]
        xw = self._input_convolutions(x, training and self.dropout)
        f = self.filters
        if h is None:
            h = c = ops.zeros((batch, *xw.shape[2:4], f))
        recurrent_masks = self._dropout_masks(h.shape, self.recurrent_dropout) if training else None
        outputs = []
        for t in range(time):
            z = xw[:, t] + self._recurrent_convolution(h, recurrent_masks)
            i = activations.apply(self.recurrent_activation, z[..., :f])
            forget = activations.apply(self.recurrent_activation, z[..., f : 2 * f])
            c = forget * c + i * activations.apply(self.activation, z[..., 2 * f : 3 * f])
            h = activations.apply(self.recurrent_activation, z[..., 3 * f :]) * activations.apply(self.activation, c)
            outputs.append(h)
        output = ops.stack(outputs, axis=1) if self.return_sequences else h
        return [output, h, c] if self.return_state else output

    @staticmethod
    def _dropout_masks(shape, rate):
        """One inverted-dropout mask per gate, kept for every step (TF.js's ConvLSTM2DCell); None without dropout."""
        return [ops.dropout(ops.ones(shape), rate) for _ in range(4)] if rate else None

    def _gate(self, weights, gate):
        f = self.filters
        return None if weights is None else weights[..., gate * f : (gate + 1) * f]

    def _input_convolutions(self, x, dropping):
        """Every step's input convolutions plus bias, [batch, time, out h, out w, 4 * filters]: the frames of all
        steps as one batch; with dropout, each gate's convolution of its own masked inputs."""
        batch, time = x.shape[:2]
        window = (self.strides, self.padding, self.dilation_rate)
        if dropping:
            masks = self._dropout_masks((batch, 1, *x.shape[2:]), self.dropout)
            gates = [
                fused_conv2d(
                    ops.reshape(x * mask, (batch * time, *x.shape[2:])),
                    self._gate(self.kernel, g),
                    self._gate(self.bias, g),
                    "linear",
                    *window,
                )
                for g, mask in enumerate(masks)
            ]
            xw = ops.concat(gates, -1)
        else:
            frames = ops.reshape(x, (batch * time, *x.shape[2:]))
            xw = fused_conv2d(frames, self.kernel, self.bias, "linear", *window)
        return ops.reshape(xw, (batch, time, *xw.shape[1:]))

    def _recurrent_convolution(self, h, masks):
        if masks is None:
            return ops.conv2d(h, self.recurrent_kernel, 1, "same")
        gates = [ops.conv2d(h * m, self._gate(self.recurrent_kernel, g), 1, "same") for g, m in enumerate(masks)]
        return ops.concat(gates, -1)

    def layer_config(self):
        return {
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": list(self.dilation_rate),
            "activation": self.activation,
            "recurrent_activation": self.recurrent_activation,
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "recurrent_initializer": self.recurrent_initializer,
            "bias_initializer": self.bias_initializer,
            "unit_forget_bias": self.unit_forget_bias,
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "implementation": self.implementation,
            "return_sequences": self.return_sequences,
            "return_state": self.return_state,
            "go_backwards": self.go_backwards,
            "stateful": False,
            "unroll": False,
        }


@register
class ConvLSTM2DCell(ConvLSTM2D):
    """One step of ConvLSTM2D: cell([x, h, c]) -> [h, h, c] for x [batch, height, width, channels] and states
    [batch, out height, out width, filters] (TF.js's convLstm2dCell)."""

    takes_list = True

    def __init__(self, filters, kernel_size, **kwargs):
        for key in ("return_sequences", "return_state", "go_backwards"):
            if key in kwargs:
                raise TypeError(f"ConvLSTM2DCell: {key} is an argument of ConvLSTM2D, not of its cell")
        super().__init__(filters, kernel_size, return_state=True, **kwargs)

    @staticmethod
    def _sequence_shape(shapes):
        x_shape = tuple(shapes[0])
        if len(x_shape) != 4:
            raise ShapeError(f"ConvLSTM2DCell: x must be [batch, height, width, channels], got shape {x_shape}")
        return (x_shape[0], 1, *x_shape[1:])

    def build(self, input_shape):
        super().build(self._sequence_shape(input_shape))

    def compute_output_shape(self, input_shape):
        _, state, _ = super().compute_output_shape(self._sequence_shape(input_shape))
        given = [tuple(s) for s in input_shape[1:]]
        if len(given) != 2 or any(len(s) != 4 or s[1:] != state[1:] for s in given):
            raise ShapeError(
                f"{self.name} (ConvLSTM2DCell): takes [x, h, c] with h and c of shape {state}, got {given}"
            )
        return [state, state, state]

    def call(self, inputs, training=False):
        x, h, c = inputs
        return self.run(ops.reshape(x, (x.shape[0], 1, *x.shape[1:])), h, c, training)

    def layer_config(self):
        config = super().layer_config()
        for key in ("return_sequences", "return_state", "go_backwards", "stateful", "unroll"):
            config.pop(key)
        return config
