"""TimeDistributed: one layer applied to every time step of [batch, time, ...], as TensorFlow.js 4.22 has it.

The steps run as one batch (batch * time rows) through the wrapped layer, which gives what TF.js's step-by-step loop
gives. As in TF.js, the wrapped layer is built inside the wrapper's name scope, so its weights are saved as
"<wrapper>/kernel", ... (the wrapped layer's own name appears only in the config); a mask passes through unchanged
(the wrapped layer does not see it).
"""

from .. import ops
from ..errors import ShapeError
from .base import CLASSES, Layer, register


@register
class TimeDistributed(Layer):
    supports_masking = True

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if isinstance(layer, dict):  # from a config: {"class_name": "Dense", "config": {...}}
            cls = CLASSES.get(layer.get("class_name"))
            if cls is None:
                raise ValueError(f"{self.name} (TimeDistributed): unknown layer class {layer.get('class_name')!r}")
            layer = cls.from_config(dict(layer.get("config") or {}))
        if not isinstance(layer, Layer) or layer.takes_list:
            raise TypeError(f"{self.name} (TimeDistributed): wraps a layer that takes one tensor, got {layer!r}")
        layer.trainable = layer.trainable and self._trainable
        self.layer = layer

    # As TF.js's wrappers: trainable is the wrapped layer's (here frozen if either was given trainable=False).
    @property
    def trainable(self):
        return self.layer.trainable if "layer" in self.__dict__ else self._trainable

    @trainable.setter
    def trainable(self, value):
        if "layer" in self.__dict__:
            self.layer.trainable = bool(value)
        else:
            self._trainable = bool(value)

    def _step_shape(self, input_shape):
        if len(input_shape) < 3:
            raise ShapeError(
                f"{self.name} (TimeDistributed): needs inputs of rank >= 3 [batch, time, ...], got shape "
                f"{tuple(input_shape)}"
            )
        return (input_shape[0], *input_shape[2:])

    def build(self, input_shape):
        # built under the wrapper's name, the scope TF.js saves its weights in, then known by its own name again
        own, self.layer.name = self.layer.name, self.name
        try:
            self.layer._ensure_built(self._step_shape(input_shape))
        finally:
            self.layer.name = own
        self._weights += self.layer._weights

    def compute_output_shape(self, input_shape):
        step = self.layer.compute_output_shape(self._step_shape(input_shape))
        if isinstance(step, list):
            raise ShapeError(f"{self.name} (TimeDistributed): the wrapped layer {self.layer.name} has several outputs")
        return (input_shape[0], input_shape[1], *step[1:])

    def call(self, x, training=False):
        batch, time = x.shape[:2]
        steps = ops.reshape(x, (batch * time, *x.shape[2:]))
        y = self.layer.call_masked(steps, training=training)
        return ops.reshape(y, (batch, time, *y.shape[1:]))

    def get_config(self):
        config = super().get_config()
        config["layer"] = {"class_name": self.layer.class_name, "config": self.layer.get_config()}
        return config
