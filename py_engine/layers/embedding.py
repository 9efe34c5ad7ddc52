"""Embedding: integer ids to learned vectors, and with mask_zero the mask that says which steps are padding."""

from .. import ops
from ..errors import ShapeError
from . import initializers
from .base import Layer, register


def positive_int(value, what, layer):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer}: {what} must be a positive int, got {value!r}")
    return value


@register
class Embedding(Layer):
    """Row `id` of the embeddings [input_dim, output_dim] for each id of the input (ints, or floats holding ints).

    With mask_zero=True, id 0 is padding: the output carries a mask (ids != 0) that the layers after it honour
    (recurrent layers skip those steps, attention ignores those keys, GlobalAveragePooling1D leaves them out).
    As TF.js, the layer declares an input of shape [batch, input_length] (input_length None: any length), so it
    can start a Sequential model.
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        embeddings_initializer="random_uniform",
        mask_zero=False,
        input_length=None,
        **kwargs,
    ):
        if kwargs.get("input_shape") is None and kwargs.get("batch_input_shape") is None:
            kwargs.setdefault("batch_shape", (kwargs.pop("batch_size", None), input_length))
        super().__init__(**kwargs)
        self.input_dim = positive_int(input_dim, "input_dim", self.name)
        self.output_dim = positive_int(output_dim, "output_dim", self.name)
        self.embeddings_initializer = initializers.serialize(embeddings_initializer)
        self.mask_zero, self.input_length = bool(mask_zero), input_length
        self.supports_masking = self.mask_zero
        self.embeddings = None

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim), self.embeddings_initializer)

    def compute_output_shape(self, input_shape):
        length = self.input_length
        if length is not None and len(input_shape) == 2 and input_shape[1] not in (None, length):
            raise ShapeError(
                f"{self.name} (Embedding): input_length is {length}, but the input has shape {tuple(input_shape)}"
            )
        return (*input_shape, self.output_dim)

    def call(self, ids, training=False):
        return ops.gather(self.embeddings, ids if ids.dtype == "int32" else ops.cast(ids, "int32"))

    def compute_mask(self, ids, mask=None):
        return ops.not_equal(ids, 0) if self.mask_zero else None

    def layer_config(self):
        return {
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "embeddings_initializer": self.embeddings_initializer,
            "mask_zero": self.mask_zero,
            "input_length": self.input_length,
        }
