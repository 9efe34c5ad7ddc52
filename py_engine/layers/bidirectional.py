"""Bidirectional: a recurrent layer run forwards and backwards over the sequence, the two outputs merged.

As TF.js: the wrapped layer's config makes two copies, "forward_<name>" and "backward_<name>" (go_backwards
flipped), whose weights are saved as "<bidirectional>/forward_<name>/kernel", ... forward ones first. The
backward copy's sequence output is reversed back into time order before merging. A mask reaches both copies.
"""

from .. import ops
from .base import CLASSES, Layer, register
from .sublayers import build_part, part_name

MERGE_MODES = ("concat", "sum", "ave", "mul", None)


def _merge(mode, forward, backward):
    if mode == "concat":
        return ops.concat([forward, backward], -1)
    if mode == "sum":
        return forward + backward
    if mode == "ave":
        return (forward + backward) * 0.5
    if mode == "mul":
        return forward * backward
    return [forward, backward]


@register
class Bidirectional(Layer):
    supports_masking = True

    def __init__(self, layer, merge_mode="concat", backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(layer, dict):  # from a config: {"class_name": "LSTM", "config": {...}}
            cls = CLASSES.get(layer.get("class_name"))
            if cls is None:
                raise ValueError(f"{self.name} (Bidirectional): unknown layer class {layer.get('class_name')!r}")
            layer = cls.from_config(dict(layer.get("config") or {}))
        if not hasattr(layer, "return_sequences") or not hasattr(layer, "go_backwards"):
            raise TypeError(
                f"{self.name} (Bidirectional): wraps a recurrent layer (LSTM, GRU, SimpleRNN), got {layer!r}"
            )
        if backward_layer is not None:
            raise ValueError(f"{self.name} (Bidirectional): a separate backward_layer is not supported")
        if merge_mode not in MERGE_MODES:
            raise ValueError(
                f"{self.name} (Bidirectional): merge_mode must be one of {MERGE_MODES}, got {merge_mode!r}"
            )
        self.layer, self.merge_mode = layer, merge_mode
        self.return_sequences, self.return_state = layer.return_sequences, layer.return_state
        config = layer.get_config()
        forward, backward = (f"{direction}_{layer.name}" for direction in ("forward", "backward"))
        self.forward_layer = type(layer).from_config({**config, "name": part_name(self, forward)})
        flipped = {**config, "name": part_name(self, backward), "go_backwards": not layer.go_backwards}
        self.backward_layer = type(layer).from_config(flipped)

    def build(self, input_shape):
        build_part(self, self.forward_layer, f"forward_{self.layer.name}", input_shape)
        build_part(self, self.backward_layer, f"backward_{self.layer.name}", input_shape)

    def compute_output_shape(self, input_shape):
        shapes = self.forward_layer.compute_output_shape(input_shape)
        output, states = (shapes[0], shapes[1:]) if self.return_state else (shapes, [])
        if self.merge_mode == "concat":
            output = (*output[:-1], 2 * output[-1])
        outputs = [output, output] if self.merge_mode is None else [output]
        if states or len(outputs) > 1:
            return outputs + states + states
        return output

    def compute_mask(self, inputs, mask=None):
        output = mask if self.return_sequences else None
        outputs = [output, output] if self.merge_mode is None else [output]
        states = [None] * 2 * self.forward_layer.state_count if self.return_state else []
        return outputs + states if len(outputs) + len(states) > 1 else output

    def call(self, x, training=False, mask=None):
        forward = self.forward_layer.call(x, training=training, mask=mask)
        backward = self.backward_layer.call(x, training=training, mask=mask)
        states = []
        if self.return_state:
            states = forward[1:] + backward[1:]
            forward, backward = forward[0], backward[0]
        if self.return_sequences:
            backward = ops.reverse(backward, 1)
        output = _merge(self.merge_mode, forward, backward)
        outputs = output if isinstance(output, list) else [output]
        return outputs + states if len(outputs) + len(states) > 1 else output

    def get_config(self):
        config = super().get_config()
        config["layer"] = {"class_name": self.layer.class_name, "config": self.layer.get_config()}
        config["merge_mode"] = self.merge_mode
        return config
