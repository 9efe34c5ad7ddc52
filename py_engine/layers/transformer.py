"""TransformerEncoder, as KerasNLP's: self-attention and a feed-forward block, each with a residual connection and
layer normalisation (after each block, or before with normalize_first=True).

Its parts keep KerasNLP's names (self_attention_layer, self_attention_layer_norm, feedforward_intermediate_dense,
feedforward_output_dense, feedforward_layer_norm), so its weights are saved as
"<encoder>/self_attention_layer/query/kernel", ... The padding mask the input carries (Embedding or
TokenAndPositionEmbedding with mask_zero=True) keeps every position from attending to padding, and passes on to
the output; with causal=True each position attends only to itself and earlier ones (a decoder-only stack).
"""

from .. import ops
from ..errors import ShapeError
from . import initializers
from .attention import MultiHeadAttention
from .base import Layer, register
from .core import Dense
from .embedding import positive_int
from .layer_normalization import LayerNormalization
from .sublayers import build_part, part_name


@register
class TransformerEncoder(Layer):
    supports_masking = True

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        causal=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_dim = positive_int(intermediate_dim, "intermediate_dim", self.name)
        self.num_heads = positive_int(num_heads, "num_heads", self.name)
        if not 0 <= dropout < 1:
            raise ValueError(f"{self.name} (TransformerEncoder): dropout must be in [0, 1), got {dropout}")
        self.dropout, self.activation = float(dropout), activation
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.normalize_first, self.causal = bool(normalize_first), bool(causal)
        self.attention = self.attention_norm = self.intermediate = self.output_dense = self.feedforward_norm = None

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ShapeError(
                f"{self.name} (TransformerEncoder): needs inputs [batch, time, features] with known features, "
                f"got {tuple(input_shape)}"
            )
        hidden = input_shape[-1]
        if hidden % self.num_heads:
            raise ShapeError(
                f"{self.name} (TransformerEncoder): the {hidden} features do not split into {self.num_heads} heads"
            )
        init = {"kernel_initializer": self.kernel_initializer, "bias_initializer": self.bias_initializer}
        self.attention = MultiHeadAttention(
            self.num_heads,
            hidden // self.num_heads,
            dropout=self.dropout,
            name=part_name(self, "self_attention_layer"),
            **init,
        )
        build_part(self, self.attention, "self_attention_layer", [input_shape, input_shape])
        self.attention_norm = self._norm("self_attention_layer_norm", input_shape)
        self.intermediate = Dense(
            self.intermediate_dim,
            self.activation,
            name=part_name(self, "feedforward_intermediate_dense"),
            **init,
        )
        build_part(self, self.intermediate, "feedforward_intermediate_dense", input_shape)
        self.output_dense = Dense(hidden, name=part_name(self, "feedforward_output_dense"), **init)
        build_part(self, self.output_dense, "feedforward_output_dense", (*input_shape[:-1], self.intermediate_dim))
        self.feedforward_norm = self._norm("feedforward_layer_norm", input_shape)

    def _norm(self, part, input_shape):
        norm = LayerNormalization(epsilon=self.layer_norm_epsilon, name=part_name(self, part))
        return build_part(self, norm, part, input_shape)

    def compute_output_shape(self, input_shape):
        return self.attention.compute_output_shape([input_shape, input_shape])

    def call(self, x, training=False, mask=None):
        allowed = self.attention.attention_mask([x, x], None, (None, mask), self.causal)
        residual = x
        if self.normalize_first:
            x = self.attention_norm.call(x)
        x = self.attention.attend(x, x, None, allowed, False, training)
        x = self._dropout(x, training) + residual
        if not self.normalize_first:
            x = self.attention_norm.call(x)
        residual = x
        if self.normalize_first:
            x = self.feedforward_norm.call(x)
        x = self.output_dense.call(self.intermediate.call(x))
        x = self._dropout(x, training) + residual
        return x if self.normalize_first else self.feedforward_norm.call(x)

    def _dropout(self, x, training):
        return ops.dropout(x, self.dropout) if training and self.dropout else x

    def layer_config(self):
        return {
            "intermediate_dim": self.intermediate_dim,
            "num_heads": self.num_heads,
            "dropout": self.dropout,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
            "normalize_first": self.normalize_first,
            "causal": self.causal,
        }
