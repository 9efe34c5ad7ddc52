"""CRF: a linear-chain conditional random field as a sequence tagger's last layer.

    emissions = pe.layers.Dense(num_tags)(bilstm_outputs)      # [batch, steps, num_tags]
    crf = pe.layers.CRF(num_tags)
    model = pe.Model(ids, crf(emissions))
    model.compile(optimizer="adam", loss=crf.loss, metrics=[crf.accuracy])
    model.fit(ids, tags)                 # tags [batch, steps] int; padded steps (the input's mask) are ignored
    model.predict(ids)                   # the Viterbi tags [batch, steps] int32, 0 past each sequence's length

While training and evaluating, the layer outputs its emissions with the mask as one more channel, [batch, steps,
num_tags + 1], which is what its loss (the negative log-likelihood, pe.crf_log_likelihood with its registered
forward-backward gradient) and its accuracy read. predict() runs the model's inference plan, where the layer
decodes with pe.crf_decode instead. Both kernels exist per backend; nothing in the loop reads back.
"""

from .. import ops
from ..engine import ENGINE
from ..errors import ShapeError
from ..train.losses import Loss
from . import initializers
from .base import Layer, register


@register
class CRF(Layer):
    supports_masking = True

    def __init__(self, num_tags, transitions_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_tags, int) or isinstance(num_tags, bool) or num_tags < 1:
            raise ValueError(f"{self.name} (CRF): num_tags must be a positive int, got {num_tags!r}")
        self.num_tags = num_tags
        self.transitions_initializer = initializers.serialize(transitions_initializer)
        self.transitions = None

    def build(self, input_shape):
        self._check(input_shape)
        self.transitions = self.add_weight("transitions", (self.num_tags, self.num_tags), self.transitions_initializer)

    def _check(self, shape):
        if len(shape) != 3 or shape[-1] != self.num_tags:
            raise ShapeError(
                f"{self.name} (CRF): needs emissions [batch, steps, {self.num_tags}] (a Dense({self.num_tags}) in "
                f"front of it), got shape {tuple(shape)}"
            )

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        return (*input_shape[:-1], self.num_tags + 1)

    def compute_mask(self, inputs, mask=None):
        return None  # the mask travels inside the output, as its last channel

    def call(self, emissions, training=False, mask=None):
        steps = ops.ones(emissions.shape[:2]) if mask is None else ops.cast(mask, "float32")
        return ops.concat([emissions, ops.expand_dims(steps, -1)], -1)

    def inference_call(self, emissions, mask=None):
        """What predict() runs: the Viterbi tags, [batch, steps] int32."""
        tags, _ = ops.crf_decode(emissions, self.transitions, _lengths(emissions, mask), validate=False)
        return tags

    def split(self, outputs):
        """(emissions, lengths) from what the layer outputs in training."""
        k = self.num_tags
        batch, steps, _ = outputs.shape
        emissions = ops.slice(outputs, (0, 0, 0), (batch, steps, k))
        lengths = ops.cast(ops.sum(ops.slice(outputs, (0, 0, k), (batch, steps, 1)), (1, 2)), "int32")
        return emissions, lengths

    @property
    def loss(self):
        return CRFLoss(self)

    @property
    def accuracy(self):
        """A metric: the share of a sequence's unpadded steps whose Viterbi tag is right (per example)."""

        def crf_accuracy(y_true, y_pred):
            return ENGINE.tidy(correct_share, y_true, y_pred)

        def correct_share(y_true, y_pred):
            emissions, lengths = self.split(y_pred)
            tags, _ = ops.crf_decode(emissions, self.transitions, lengths, validate=False)
            batch, steps = tags.shape
            inside = ops.cast(
                ops.less(ops.reshape(ops.arange(steps, dtype="int32"), (1, steps)), ops.reshape(lengths, (batch, 1))),
                "float32",
            )
            right = ops.cast(ops.equal(tags, ops.cast(y_true, "int32")), "float32") * inside
            return ops.sum(right, 1) / ops.maximum(ops.sum(inside, 1), 1.0)

        return crf_accuracy

    def layer_config(self):
        return {"num_tags": self.num_tags, "transitions_initializer": self.transitions_initializer}


def _lengths(emissions, mask):
    if mask is None:
        return ops.fill((emissions.shape[0],), emissions.shape[1], "int32")
    return ops.cast(ops.sum(ops.cast(mask, "float32"), 1), "int32")


class CRFLoss(Loss):
    """The mean negative log-likelihood of the gold tags under the layer's CRF (pe.crf_log_likelihood)."""

    name = "crf_loss"
    tfjs_name = None

    def __init__(self, layer):
        self.layer = layer

    def per_example(self, y_true, y_pred):
        emissions, lengths = self.layer.split(y_pred)
        tags = ops.cast(y_true, "int32") if y_true.dtype != "int32" else y_true
        return ops.neg(ops.crf_log_likelihood(emissions, tags, self.layer.transitions, lengths, validate=False))

    def check(self, y_true_shape, y_true_dtype, y_pred_shape):
        if tuple(y_true_shape[1:]) != tuple(y_pred_shape[1:-1]):
            raise ShapeError(
                f"crf_loss: the tags must be [batch, steps] = [batch, {y_pred_shape[1]}] integers, got shape "
                f"{tuple(y_true_shape)}"
            )

    def check_labels(self, y_true, num_classes):
        bad = (y_true < 0) | (y_true >= self.layer.num_tags) | (y_true != y_true.astype("int64"))
        if bad.any():
            index = tuple(int(i) for i in zip(*bad.nonzero()).__next__())
            raise ValueError(
                f"crf_loss: tag {y_true[index]} at y_true{list(index)} is outside [0, {self.layer.num_tags}) "
                f"(the CRF has {self.layer.num_tags} tags)"
            )

    def get_config(self):
        return {"layer": self.layer.name}
