"""GlobalAveragePooling1D: the mean over time of [batch, time, features]; with a mask, over the real steps only."""

from .. import ops
from ..errors import ShapeError
from .base import Layer, register


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
