"""RNN with cells, as TensorFlow.js 4.22 has it: SimpleRNNCell, GRUCell, LSTMCell, StackedRNNCells, the RNN layer, and
RNNCell, the base of custom cells (which RNN runs one step at a time).

A cell is one step of a recurrent layer: cell([x, *states]) -> [output, *new_states] for x [batch, features]
(LSTMCell's states are h and c, the others' h). RNN(cell) runs a cell over [batch, time, features] with the same
whole-sequence kernels as SimpleRNN, GRU and LSTM (ops/recurrent.py), so RNN(LSTMCell(4)) computes what
LSTM(4) computes. RNN([cell, cell, ...]) or RNN(StackedRNNCells([...])) feeds each cell's outputs to the next; its
states are every cell's.

TF.js's layout, which loading and saving follow: an RNN's config holds {"cell": {"class_name": ..., "config": ...}}
(TF.js also copies a single cell's keys, or a stack's "cells", next to it; they are read from "cell" alone); with return_state, a stack's states
come after the output in reverse stack order, each cell's in its own order ([h2, c2, h1, c1] for two LSTMCells). A single
cell's weights are saved as "<rnn>/kernel", "<rnn>/recurrent_kernel", "<rnn>/bias"; a stack's as
"<rnn>/RNNCell_<k>/kernel", ... in stack order. GRUCell runs reset_after=False only, as TF.js 4.22.
"""

from .. import ops
from ..errors import ShapeError
from ..ops.recurrent import gru_sequence, lstm_sequence, simple_rnn_sequence
from .base import CLASSES, Layer, register
from .recurrent import GRU, LSTM, RecurrentBase, SimpleRNN

# what RNN owns in a config; the rest are a cell's keys that TF.js copies next to "cell"
_RNN_KEYS = {
    "cell",
    "return_sequences",
    "return_state",
    "go_backwards",
    "stateful",
    "unroll",
    "time_major",
    "name",
    "trainable",
    "dtype",
    "batch_input_shape",
    "input_shape",
    "batch_size",
    "batch_shape",
}
_SEQUENCE_KEYS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")


class RNNCell(Layer):
    """The base of custom cells (TF.js's tf.layers.RNNCell): define `state_size` (an int, or a list of ints, one per
    state), build(input_shape) (input_shape: [x's shape [batch, features], *the states' shapes]) and
    call([x, *states]) -> [output, *new states], with output [batch, state_size[0]]. RNN runs such a cell one step at
    a time; a masked step keeps the states and repeats the last output (zeros before the first real step).
    """

    takes_list = True
    state_size = None

    @property
    def state_sizes(self):
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [self.state_size]
        if not sizes or not all(isinstance(n, int) and n > 0 for n in sizes):
            raise ValueError(f"{self.name} ({self.class_name}): state_size must be a positive int or a list of them")
        return list(sizes)

    @property
    def state_count(self):
        return len(self.state_sizes)

    @property
    def output_size(self):
        return self.state_sizes[0]

    def _ensure_built(self, input_shape):
        if isinstance(input_shape, tuple):  # from RNN: [batch, time, features]
            input_shape = [(input_shape[0], input_shape[2]), *[(input_shape[0], n) for n in self.state_sizes]]
        super()._ensure_built(input_shape)

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list):
            batch = input_shape[0][0]
            return [(batch, self.output_size), *[(batch, n) for n in self.state_sizes]]
        batch, time = input_shape[:2]
        return [(batch, time, self.output_size), *[(batch, n) for n in self.state_sizes]]

    def sequence(self, x, training=False, mask=None):
        """[output sequence, *final states] over x [batch, time, features], one call() per step."""
        batch, time = x.shape[:2]
        states = [ops.zeros((batch, n)) for n in self.state_sizes]
        output = ops.zeros((batch, self.output_size))
        outputs = []
        for t in range(time):
            step_output, *new_states = self.call([x[:, t], *states], training=training)
            if mask is None:
                output, states = step_output, new_states
            else:
                real = ops.reshape(ops.cast(mask[:, t], "float32"), (batch, 1))
                output = real * step_output + (1.0 - real) * output
                states = [real * new + (1.0 - real) * old for new, old in zip(new_states, states)]
            outputs.append(output)
        return [ops.stack(outputs, axis=1), *states]


class _Cell:
    """Mixin over SimpleRNN, GRU or LSTM: one step on [x, *states], and the whole sequence for RNN (sequence())."""

    takes_list = True
    supports_masking = False

    def __init__(self, units, **kwargs):
        for key in _SEQUENCE_KEYS:
            if key in kwargs:
                raise TypeError(f"{type(self).__name__}: {key} is an RNN argument, not a cell's; give it to RNN(cell)")
        super().__init__(units, return_sequences=True, return_state=True, **kwargs)

    def build(self, input_shape):
        if isinstance(input_shape, list):  # called on [x, *states]: x is [batch, features]
            x_shape = tuple(input_shape[0])
            if len(x_shape) != 2:
                raise ShapeError(f"{self.name} ({self.class_name}): x must be [batch, features], got shape {x_shape}")
            input_shape = (x_shape[0], None, x_shape[1])
        super().build(input_shape)

    def compute_output_shape(self, input_shape):
        if not isinstance(input_shape, list):
            return super().compute_output_shape(input_shape)
        x_shape, state_shapes = tuple(input_shape[0]), [tuple(s) for s in input_shape[1:]]
        features, batch = self.kernel.shape[0], x_shape[0]
        expected = [(batch, self.units)] * self.state_count
        if len(x_shape) != 2 or x_shape[1] not in (None, features) or len(state_shapes) != self.state_count:
            raise ShapeError(
                f"{self.name} ({self.class_name}): takes [x [batch, {features}], then {self.state_count} state(s) "
                f"[batch, {self.units}]]; got shapes {[x_shape, *state_shapes]}"
            )
        for shape in state_shapes:
            if len(shape) != 2 or shape[1] not in (None, self.units):
                raise ShapeError(
                    f"{self.name} ({self.class_name}): each state must be [batch, {self.units}], got {shape}"
                )
        return [(batch, self.units), *expected]

    def call(self, inputs, training=False):
        """[output, *new states] of one step from inputs [x, *states]."""
        x, states = inputs[0], list(inputs[1:])
        if training and self.dropout:
            x = ops.dropout(x, self.dropout)
        xw = ops.matmul(x, self.kernel)
        if self.bias is not None:
            xw = xw + self.bias
        xw = ops.reshape(xw, (x.shape[0], 1, self.gates * self.units))
        return self.step(xw, states)

    def sequence(self, x, training=False, mask=None):
        """[output sequence, *final states] over x [batch, time, features]."""
        return RecurrentBase.call(self, x, training=training, mask=mask)

    @property
    def output_size(self):
        return self.units

    def layer_config(self):
        config = super().layer_config()
        for key in _SEQUENCE_KEYS:
            config.pop(key, None)
        return config


@register
class SimpleRNNCell(_Cell, SimpleRNN):
    """h = activation(x @ kernel + h @ recurrent_kernel + bias); states [h]."""

    def step(self, xw, states):
        h = simple_rnn_sequence(xw, states[0], self.recurrent_kernel, None, self.activation)[:, 0]
        return [h, h]


@register
class GRUCell(_Cell, GRU):
    """GRU's step (reset_after=False, gates z, r, h); states [h]."""

    def step(self, xw, states):
        h = gru_sequence(xw, states[0], self.recurrent_kernel, None, self.activation, self.recurrent_activation)
        return [h[:, 0], h[:, 0]]


@register
class LSTMCell(_Cell, LSTM):
    """LSTM's step (gates i, f, c, o); states [h, c]."""

    def step(self, xw, states):
        units = self.units
        state = ops.concat(states, -1)
        seq = lstm_sequence(xw, state, self.recurrent_kernel, None, self.activation, self.recurrent_activation)
        h, c = seq[:, 0, :units], seq[:, 0, units:]
        return [h, h, c]


def _cell(value, owner):
    """A cell from a cell or its config {"class_name": ..., "config": ...}."""
    if isinstance(value, dict):
        cls = CLASSES.get(value.get("class_name"))
        if cls is None or not issubclass(cls, (_Cell, RNNCell, StackedRNNCells)):
            raise ValueError(f"{owner}: unknown cell class {value.get('class_name')!r}")
        value = cls.from_config(dict(value.get("config") or {}))
    if not isinstance(value, (_Cell, RNNCell, StackedRNNCells)):
        raise TypeError(
            f"{owner}: a cell must be a SimpleRNNCell, GRUCell, LSTMCell, a subclass of RNNCell or StackedRNNCells "
            f"(or a list of cells), got {value!r}"
        )
    return value


@register
class StackedRNNCells(Layer):
    """Cells run one after another at each step: each cell's output is the next one's input."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        self.cells = [_cell(c, f"{self.name} (StackedRNNCells)") for c in cells]
        if not self.cells or any(isinstance(c, StackedRNNCells) for c in self.cells):
            raise ValueError(f"{self.name} (StackedRNNCells): needs at least one cell, and no nested stacks")

    def call(self, inputs, training=False):
        raise TypeError(f"{self.name} (StackedRNNCells): run it inside pe.layers.RNN(cell=...)")

    def get_config(self):
        config = super().get_config()
        config["cells"] = [{"class_name": c.class_name, "config": c.get_config()} for c in self.cells]
        return config


@register
class RNN(Layer):
    """A recurrent layer running `cell` (a cell, a list of cells, or StackedRNNCells) over [batch, time, features]."""

    supports_masking = True

    def __init__(
        self,
        cell,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        time_major=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if stateful or time_major:
            raise ValueError(
                f"{self.name} (RNN): stateful and time_major layers are not supported; give batch-major inputs "
                "[batch, time, features] and no stateful=True"
            )
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(list(cell))
        self.cell = _cell(cell, f"{self.name} (RNN)")
        self.cells = self.cell.cells if isinstance(self.cell, StackedRNNCells) else [self.cell]
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.unroll = bool(go_backwards), bool(unroll)

    @classmethod
    def from_config(cls, config):
        return cls(**{k: v for k, v in config.items() if k in _RNN_KEYS})

    @property
    def state_count(self):
        return sum(c.state_count for c in self.cells)

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (RNN): needs inputs [batch, time, features] with known features, got shape "
                f"{tuple(input_shape)}"
            )
        shape = tuple(input_shape)
        single = len(self.cells) == 1 and not isinstance(self.cell, StackedRNNCells)
        for k, cell in enumerate(self.cells):
            # built under the name its weights are saved with (TF.js's name scopes), then known by its own again
            scope = self.name if single else f"{self.name}/RNNCell_{k}"
            own, cell.name = cell.name, scope
            try:
                cell._ensure_built(shape)
            finally:
                cell.name = own
            prefix = "" if single else f"RNNCell_{k}/"
            self._weights += [(prefix + name, v) for name, v in cell._weights]
            shape = (shape[0], shape[1], cell.output_size)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(f"{self.name} (RNN): needs inputs [batch, time, features], got shape {tuple(input_shape)}")
        shape = tuple(input_shape)
        states = []
        for cell in self.cells:
            sequence, *cell_states = cell.compute_output_shape(shape)
            states = cell_states + states  # the last cell's first, as TF.js and Keras list them
            shape = sequence
        batch, units = input_shape[0], self.cells[-1].output_size
        output = (batch, input_shape[1], units) if self.return_sequences else (batch, units)
        return [output, *states] if self.return_state else output

    def compute_mask(self, inputs, mask=None):
        output = mask if self.return_sequences else None
        return [output] + [None] * self.state_count if self.return_state else output

    def call(self, x, training=False, mask=None):
        if self.go_backwards:
            x = ops.reverse(x, 1)
            mask = None if mask is None else ops.reverse(mask, 1)
        states = []
        for cell in self.cells:
            x, *cell_states = cell.sequence(x, training=training, mask=mask)
            states = cell_states + states  # the last cell's first, as TF.js and Keras list them
        output = x if self.return_sequences else states[0]
        return [output, *states] if self.return_state else output

    def get_config(self):
        config = super().get_config()
        config["cell"] = {"class_name": self.cell.class_name, "config": self.cell.get_config()}
        for key in _SEQUENCE_KEYS:
            config[key] = getattr(self, key, False)
        return config
