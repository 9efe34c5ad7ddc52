"""Recurrent layers: SimpleRNN, LSTM and GRU, with Keras's configs and TF.js's weights and semantics.

Weights as Keras and TF.js lay them out: kernel [features, gates * units], recurrent_kernel [units, gates * units],
bias [gates * units], gates in the order LSTM i, f, c, o and GRU z, r, h. A call projects every step's input with
one matmul and runs the recurrence as one op (ops/recurrent.py). With a mask (from Embedding(mask_zero=True))
a masked step is skipped: the state is carried and, with return_sequences, the previous output repeats, as in
TF.js. go_backwards reads the sequence from its end and returns the outputs in that order (as TF.js and Keras).

Defaults are Keras's (recurrent_activation="sigmoid", kernel_initializer="glorot_uniform"), except GRU's
reset_after=False: TF.js 4.22 runs only that variant, so a model with it can be saved for TF.js.
"""

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..ops.creation import random_generator
from ..ops.recurrent import ACTIVATIONS, gru_sequence, lstm_sequence, simple_rnn_sequence
from . import initializers
from .base import _SOURCE, Layer, WeightSource, register


def activation_name(value, layer, what="activation"):
    """A recurrent activation's name; the kernels know ACTIVATIONS (TF.js's default recurrent one is hard_sigmoid)."""
    name = "linear" if value is None else value
    if isinstance(name, dict):  # Keras 3 writes {"class_name": "function", "config": "tanh", ...}
        name = name.get("config")
    name = {"hardSigmoid": "hard_sigmoid"}.get(name, name)
    if name not in ACTIVATIONS:
        raise ValueError(
            f"{layer}: {what} {value!r} is not supported in recurrent layers, whose kernels take the activations "
            f"with a derivative that is a function of their output: use one of {ACTIVATIONS}"
        )
    return name


def orthogonal(shape, gain=1.0, seed=None):
    """Keras's Orthogonal initializer: rows (or columns, whichever are fewer) orthonormal, times gain."""
    rows, cols = int(np.prod(shape[:-1])), shape[-1]
    a = random_generator(seed).standard_normal((max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    return (gain * (q.T if rows < cols else q)).reshape(shape).astype(np.float32)


def initializer_config(identifier):
    """An initializer's Keras config; Orthogonal (recurrent kernels) is known here, the others to initializers."""
    if identifier in ("orthogonal", "Orthogonal"):
        return {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": None}}
    return initializers.serialize(identifier)


def add_computed_weight(layer, name, shape, make):
    """A weight whose initial value make() computes (orthogonal, LSTM's unit forget bias); a model being loaded
    gives its own value instead."""
    if _SOURCE.get() is not None:
        return layer.add_weight(name, shape, None)
    with WeightSource({f"{layer.name}/{name}": make()}):
        return layer.add_weight(name, shape, None)


class RecurrentBase(Layer):
    """What SimpleRNN, LSTM and GRU share; subclasses set `gates` and define recur()."""

    supports_masking = True
    gates = 1
    recurrent = False  # whether the layer has a recurrent_activation

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        dropout=0.0,
        recurrent_dropout=0.0,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        time_major=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"{self.name} ({self.class_name}): units must be a positive int, got {units!r}")
        if stateful or time_major:
            raise ValueError(
                f"{self.name} ({self.class_name}): stateful and time_major layers are not supported; "
                "give batch-major inputs [batch, time, features] and no stateful=True"
            )
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0 <= rate < 1:
                raise ValueError(f"{self.name} ({self.class_name}): {what} must be in [0, 1), got {rate}")
        self.units, self.use_bias = units, bool(use_bias)
        self.activation = activation_name(activation, self.name)
        self.recurrent_activation = activation_name(recurrent_activation, self.name, "recurrent_activation")
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.recurrent_initializer = initializer_config(recurrent_initializer)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.unroll = bool(go_backwards), bool(unroll)
        self.kernel = self.recurrent_kernel = self.bias = None

    @property
    def state_count(self):
        return 1

    # ---- weights ---------------------------------------------------------------------------------

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} ({self.class_name}): needs inputs [batch, time, features] with known features, "
                f"got shape {tuple(input_shape)}"
            )
        width = self.gates * self.units
        self.kernel = self.add_weight("kernel", (input_shape[-1], width), self.kernel_initializer)
        shape = (self.units, width)
        if self.recurrent_initializer["class_name"] == "Orthogonal":
            config = self.recurrent_initializer.get("config") or {}
            gain, seed = config.get("gain", 1.0), config.get("seed")
            self.recurrent_kernel = add_computed_weight(
                self, "recurrent_kernel", shape, lambda: orthogonal(shape, gain, seed)
            )
        else:
            self.recurrent_kernel = self.add_weight("recurrent_kernel", shape, self.recurrent_initializer)
        if self.use_bias:
            self.bias = self.build_bias(width)

    def build_bias(self, width):
        return self.add_weight("bias", (width,), self.bias_initializer)

    # ---- shapes and masks ------------------------------------------------------------------------

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(
                f"{self.name} ({self.class_name}): needs inputs [batch, time, features], got shape {tuple(input_shape)}"
            )
        features = self.kernel.shape[0]
        if input_shape[-1] is not None and input_shape[-1] != features:
            raise ShapeError(
                f"{self.name} ({self.class_name}): inputs have {input_shape[-1]} features (shape {tuple(input_shape)}); "
                f"the layer was built for {features}"
            )
        batch = input_shape[0]
        output = (batch, input_shape[1], self.units) if self.return_sequences else (batch, self.units)
        return [output] + [(batch, self.units)] * self.state_count if self.return_state else output

    def compute_mask(self, inputs, mask=None):
        output = mask if self.return_sequences else None
        return [output] + [None] * self.state_count if self.return_state else output

    # ---- calling ---------------------------------------------------------------------------------

    def call(self, x, training=False, mask=None):
        """The output (and with return_state the final states: h, and c for LSTM) for x [batch, time, features]."""
        batch, time, features = x.shape
        if time == 0:
            raise ShapeError(f"{self.name} ({self.class_name}): the input {x.shape} has no time steps")
        if training and self.recurrent_dropout:
            raise ValueError(
                f"{self.name} ({self.class_name}): training with recurrent_dropout is not supported (inference "
                "ignores it, as TF.js's); set recurrent_dropout=0"
            )
        if self.go_backwards:
            x = ops.reverse(x, 1)
            mask = None if mask is None else ops.reverse(mask, 1)
        if training and self.dropout:  # one mask for every step, as TF.js and Keras
            x = ops.dropout(x, self.dropout, (batch, 1, features))
        xw = ops.matmul(ops.reshape(x, (batch * time, features)), self.kernel)
        if self.bias is not None:
            xw = xw + self.bias
        xw = ops.reshape(xw, (batch, time, self.gates * self.units))
        steps = None if mask is None else ops.cast(mask, "float32")
        sequence, states = self.recur(xw, steps)
        output = sequence() if self.return_sequences else states[0]
        return [output, *states] if self.return_state else output

    def recur(self, xw, mask):
        """(a function giving the output sequence, [final states]) for the projected inputs xw."""
        raise NotImplementedError

    def layer_config(self):
        config = {
            "units": self.units,
            "activation": self.activation,
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "recurrent_initializer": self.recurrent_initializer,
            "bias_initializer": self.bias_initializer,
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "return_sequences": self.return_sequences,
            "return_state": self.return_state,
            "go_backwards": self.go_backwards,
            "stateful": False,
            "unroll": self.unroll,
        }
        if self.recurrent:
            config["recurrent_activation"] = self.recurrent_activation
        return config


@register
class SimpleRNN(RecurrentBase):
    """h = activation(x @ kernel + h @ recurrent_kernel + bias)."""

    def __init__(self, units, **kwargs):
        if "recurrent_activation" in kwargs:
            raise TypeError("SimpleRNN has no recurrent_activation")
        super().__init__(units, **kwargs)

    def recur(self, xw, mask):
        h0 = ops.zeros((xw.shape[0], self.units))
        hseq = simple_rnn_sequence(xw, h0, self.recurrent_kernel, mask, self.activation)
        return lambda: hseq, [hseq[:, -1]]


@register
class LSTM(RecurrentBase):
    """Gates i, f, c, o; c = f * c + i * activation(c_in), h = o * activation(c). With return_state: [output, h, c]."""

    gates, recurrent = 4, True

    def __init__(self, units, unit_forget_bias=True, implementation=2, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias, self.implementation = bool(unit_forget_bias), implementation

    @property
    def state_count(self):
        return 2

    def build_bias(self, width):
        if not self.unit_forget_bias:
            return super().build_bias(width)
        units, config = self.units, self.bias_initializer

        def value():  # the forget gate's bias starts at 1 (Keras's unit_forget_bias)
            return np.concatenate(
                [
                    initializers.initialize(config, (units,)),
                    np.ones(units, np.float32),
                    initializers.initialize(config, (2 * units,)),
                ]
            )

        return add_computed_weight(self, "bias", (width,), value)

    def recur(self, xw, mask):
        units = self.units
        state0 = ops.zeros((xw.shape[0], 2 * units))
        seq = lstm_sequence(xw, state0, self.recurrent_kernel, mask, self.activation, self.recurrent_activation)
        last = seq[:, -1]
        return lambda: seq[:, :, :units], [last[:, :units], last[:, units:]]

    def layer_config(self):
        return {
            **super().layer_config(),
            "unit_forget_bias": self.unit_forget_bias,
            "implementation": self.implementation,
        }


@register
class GRU(RecurrentBase):
    """z = r_act(x_z + h @ U_z), r = r_act(x_r + h @ U_r), hh = act(x_h + (r * h) @ U_h), h = z * h + (1 - z) * hh."""

    gates, recurrent = 3, True

    def __init__(self, units, reset_after=False, implementation=2, **kwargs):
        super().__init__(units, **kwargs)
        if reset_after:
            raise ValueError(
                f"{self.name} (GRU): reset_after=True is not supported; TF.js 4.22 runs GRUs with reset_after=False "
                "only (its weights have a different layout)"
            )
        self.implementation = implementation

    def recur(self, xw, mask):
        h0 = ops.zeros((xw.shape[0], self.units))
        hseq = gru_sequence(xw, h0, self.recurrent_kernel, mask, self.activation, self.recurrent_activation)
        return lambda: hseq, [hseq[:, -1]]

    def layer_config(self):
        return {**super().layer_config(), "reset_after": False, "implementation": self.implementation}
