"""MultiHeadAttention, as Keras's: scaled dot-product attention over num_heads projections, with padding and causal
masks.

Weights as Keras names and shapes them: query/kernel [query_dim, heads, key_dim], query/bias [heads, key_dim],
key/..., value/... [value_dim], attention_output/kernel [heads, value_dim, output_dim], attention_output/bias.
A position that may not be attended (a padded key, or with use_causal_mask a later position) gets a score of
-1e9 before the softmax, so its weight is exactly zero.

Called on tensors: mha(query, value, key=None, attention_mask=None, return_attention_scores=False,
use_causal_mask=False, query_mask=None, value_mask=None, key_mask=None). Called on symbolic tensors (a functional
model) it takes mha(query, value[, key]) and the padding masks the graph carries (Embedding(mask_zero=True)).
"""

import math

import numpy as np

from .. import ops
from ..engine import ENGINE
from ..errors import ShapeError
from ..tensor import Tensor
from . import initializers
from .base import Layer, SymbolicTensor, register

MASKED_SCORE = -1e9  # exp(-1e9 - max) is exactly 0 in float32


@register
class MultiHeadAttention(Layer):
    supports_masking = True
    takes_list = True

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        attention_axes=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for what, value in (("num_heads", num_heads), ("key_dim", key_dim), ("value_dim", value_dim or key_dim)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{self.name} (MultiHeadAttention): {what} must be a positive int, got {value!r}")
        if attention_axes not in (None, 1, -2, [1], [-2], (1,), (-2,)):
            raise ValueError(
                f"{self.name} (MultiHeadAttention): attention over axes {attention_axes!r} is not supported; "
                "inputs are [batch, time, features] and attention runs over time"
            )
        if isinstance(output_shape, (list, tuple)):
            if len(output_shape) != 1:
                raise ValueError(f"{self.name} (MultiHeadAttention): output_shape must be one size, got {output_shape}")
            output_shape = output_shape[0]
        if not 0 <= dropout < 1:
            raise ValueError(f"{self.name} (MultiHeadAttention): dropout must be in [0, 1), got {dropout}")
        self.num_heads, self.key_dim, self.value_dim = num_heads, key_dim, value_dim or key_dim
        self.dropout, self.use_bias, self.output_shape, self.seed = float(dropout), bool(use_bias), output_shape, seed
        self.attention_axes = attention_axes
        self.kernel_initializer = initializers.serialize(kernel_initializer)
        self.bias_initializer = initializers.serialize(bias_initializer)
        self.projections = {}  # "query" / "key" / "value" / "attention_output" -> (kernel, bias or None)

    # ---- building ------------------------------------------------------------------------------

    def _shapes(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        if len(shapes) not in (2, 3) or any(len(s) != 3 for s in shapes):
            raise ShapeError(
                f"{self.name} (MultiHeadAttention): takes query, value (and key), each [batch, time, features]; "
                f"got shapes {shapes}"
            )
        query, value = shapes[:2]
        key = shapes[2] if len(shapes) == 3 else value
        if value[1] is not None and key[1] is not None and value[1] != key[1]:
            raise ShapeError(f"{self.name} (MultiHeadAttention): value {value} and key {key} differ in length")
        return query, value, key

    def build(self, input_shape):
        query, value, key = self._shapes(input_shape)
        heads = self.num_heads
        for name, shape, size in (
            ("query", query, self.key_dim),
            ("key", key, self.key_dim),
            ("value", value, self.value_dim),
        ):
            if shape[-1] is None:
                raise ShapeError(f"{self.name} (MultiHeadAttention): the {name} needs a known last axis, got {shape}")
            self._projection(name, (shape[-1], heads, size), (heads, size))
        out = self.output_shape or query[-1]
        self._projection("attention_output", (heads, self.value_dim, out), (out,))

    def _projection(self, name, kernel_shape, bias_shape):
        kernel = self.add_weight(f"{name}/kernel", kernel_shape, self.kernel_initializer)
        bias = self.add_weight(f"{name}/bias", bias_shape, self.bias_initializer) if self.use_bias else None
        self.projections[name] = (kernel, bias)

    def compute_output_shape(self, input_shape):
        query, value, key = self._shapes(input_shape)
        for name, shape in (("query", query), ("key", key), ("value", value)):
            kernel = self.projections[name][0]
            if shape[-1] is not None and shape[-1] != kernel.shape[0]:
                raise ShapeError(
                    f"{self.name} (MultiHeadAttention): the {name} has {shape[-1]} features (shape {shape}); "
                    f"the layer was built for {kernel.shape[0]}"
                )
        return (*query[:2], self.projections["attention_output"][0].shape[-1])

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, list) else None  # the output has the query's steps

    # ---- calling -------------------------------------------------------------------------------

    def __call__(
        self,
        query,
        value=None,
        key=None,
        attention_mask=None,
        return_attention_scores=False,
        training=False,
        use_causal_mask=False,
        query_mask=None,
        value_mask=None,
        key_mask=None,
    ):
        if isinstance(query, (list, tuple)):  # a functional model's config calls it on a list
            query, value, key = (*query, None)[:3] if len(query) in (2, 3) else (query, value, key)
        value = query if value is None else value
        inputs = [query, value] + ([] if key is None else [key])
        if isinstance(query, SymbolicTensor):
            options = (attention_mask, query_mask, value_mask, key_mask)
            if return_attention_scores or use_causal_mask or any(m is not None for m in options):
                raise TypeError(
                    f"{self.name}: in a functional model, attention takes the padding masks the graph carries; "
                    "explicit masks, use_causal_mask and return_attention_scores work on tensors"
                )
            return super().__call__(inputs)
        if not all(isinstance(t, Tensor) for t in inputs):
            raise TypeError(f"{self.name}: query, value and key must be tensors")
        self._ensure_built([(None, *t.shape[1:]) for t in inputs])
        self.compute_output_shape([(None, *t.shape[1:]) for t in inputs])
        return ENGINE.tidy(
            lambda: self.attend(
                *inputs[:2],
                key,
                self.attention_mask(inputs, attention_mask, (query_mask, value_mask, key_mask), use_causal_mask),
                return_attention_scores,
                training,
            )
        )

    def call(self, inputs, training=False, mask=None):
        masks = list(mask) if isinstance(mask, list) else [None] * len(inputs)
        key = inputs[2] if len(inputs) == 3 else None
        return self.attend(inputs[0], inputs[1], key, self.attention_mask(inputs, None, masks, False), False, training)

    def attention_mask(self, inputs, attention_mask, masks, causal):
        """A bool [batch or 1, query steps, key steps] (True: may attend) from Keras's rules, or None."""
        query_mask, value_mask, key_mask = (list(masks) + [None] * 3)[:3]
        allowed = None
        if query_mask is not None:
            allowed = ops.expand_dims(query_mask, -1)  # a padded query attends to nothing ...
        for m in (value_mask, key_mask):
            if m is not None:  # ... and nothing attends to a padded key
                m = ops.expand_dims(m, -2)
                allowed = m if allowed is None else ops.logical_and(allowed, m)
        if causal:
            steps_q, steps_k = inputs[0].shape[1], inputs[1].shape[1]
            lower = ops.tensor(np.tri(steps_q, steps_k, dtype=bool)[None])  # position i sees 0..i
            allowed = lower if allowed is None else ops.logical_and(allowed, lower)
        if attention_mask is not None:
            given = attention_mask if attention_mask.dtype == "bool" else ops.not_equal(attention_mask, 0)
            allowed = given if allowed is None else ops.logical_and(allowed, given)
        return allowed

    def _project(self, name, x, size):
        """x [batch, time, features] through projection `name`: [batch, heads, time, size]."""
        kernel, bias = self.projections[name]
        batch, time, features = x.shape
        y = ops.matmul(ops.reshape(x, (batch * time, features)), ops.reshape(kernel, (features, -1)))
        if bias is not None:
            y = y + ops.reshape(bias, (-1,))
        return ops.transpose(ops.reshape(y, (batch, time, self.num_heads, size)), (0, 2, 1, 3))

    def attend(self, query, value, key, allowed, return_scores, training):
        """The attention output [batch, query steps, output_dim] (and the weights [batch, heads, query, key])."""
        key = value if key is None else key
        q = self._project("query", query, self.key_dim) * (1 / math.sqrt(self.key_dim))
        k, v = self._project("key", key, self.key_dim), self._project("value", value, self.value_dim)
        scores = ops.matmul(q, k, transpose_b=True)
        if allowed is not None:
            scores = ops.where(ops.expand_dims(allowed, 1), scores, MASKED_SCORE)
        weights = ops.softmax(scores, -1)
        dropped = ops.dropout(weights, self.dropout) if training and self.dropout else weights
        mixed = ops.transpose(ops.matmul(dropped, v), (0, 2, 1, 3))  # [batch, query steps, heads, value_dim]
        batch, steps = query.shape[:2]
        kernel, bias = self.projections["attention_output"]
        out = ops.matmul(ops.reshape(mixed, (batch * steps, -1)), ops.reshape(kernel, (-1, kernel.shape[-1])))
        if bias is not None:
            out = out + bias
        out = ops.reshape(out, (batch, steps, kernel.shape[-1]))
        return [out, weights] if return_scores else out

    def layer_config(self):
        return {
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "dropout": self.dropout,
            "use_bias": self.use_bias,
            "output_shape": self.output_shape,
            "attention_axes": self.attention_axes,
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
            "seed": self.seed,
        }
