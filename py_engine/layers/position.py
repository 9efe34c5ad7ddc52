"""Positional embeddings, as KerasNLP's (and TF.js's nlp layers): PositionEmbedding (learned), SinePositionEncoding
(fixed sinusoids), and TokenAndPositionEmbedding (token embedding + learned positions, keeping the padding mask).

PositionEmbedding and SinePositionEncoding return the position vectors broadcast to the input's shape (add them
to the input yourself); their output carries the input's mask.
"""

import numpy as np

from .. import ops
from ..errors import ShapeError
from . import initializers
from .base import Layer, register
from .embedding import Embedding, positive_int
from .sublayers import build_part, part_name


def _sequence_input(layer, shape):
    if len(shape) < 3:
        raise ShapeError(f"{layer.name} ({layer.class_name}): needs inputs [batch, time, features], got {tuple(shape)}")


@register
class PositionEmbedding(Layer):
    """A learned vector per position: embeddings [sequence_length, features]; inputs may be shorter."""

    supports_masking = True

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = positive_int(sequence_length, "sequence_length", self.name)
        self.initializer = initializers.serialize(initializer)
        self.embeddings = None

    def build(self, input_shape):
        _sequence_input(self, input_shape)
        self.embeddings = self.add_weight("embeddings", (self.sequence_length, input_shape[-1]), self.initializer)

    def compute_output_shape(self, input_shape):
        _sequence_input(self, input_shape)
        if input_shape[-2] is not None and input_shape[-2] > self.sequence_length:
            raise ShapeError(
                f"{self.name} (PositionEmbedding): inputs of {input_shape[-2]} steps (shape {tuple(input_shape)}) are "
                f"longer than sequence_length {self.sequence_length}"
            )
        return input_shape

    def call(self, x, training=False):
        steps = x.shape[-2]
        return ops.broadcast_to(self.embeddings[:steps], x.shape)

    def layer_config(self):
        return {"sequence_length": self.sequence_length, "initializer": self.initializer}


def sinusoids(steps, features, max_wavelength=10000.0):
    """[steps, features]: sin at even features, cos at odd ones, wavelengths from 2 pi to max_wavelength."""
    position = np.arange(steps, dtype=np.float64)[:, None]
    timescales = (1.0 / max_wavelength) ** ((2 * (np.arange(features) // 2)) / features)
    angles = position * timescales[None, :]
    return np.where(np.arange(features) % 2 == 0, np.sin(angles), np.cos(angles)).astype(np.float32)


@register
class SinePositionEncoding(Layer):
    """Fixed sinusoidal position vectors ("Attention Is All You Need"); no weights."""

    supports_masking = True

    def __init__(self, max_wavelength=10000, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = float(max_wavelength)

    def compute_output_shape(self, input_shape):
        _sequence_input(self, input_shape)
        return input_shape

    def call(self, x, training=False):
        return ops.broadcast_to(ops.tensor(sinusoids(x.shape[-2], x.shape[-1], self.max_wavelength)), x.shape)

    def layer_config(self):
        return {"max_wavelength": self.max_wavelength}


@register
class TokenAndPositionEmbedding(Layer):
    """Embedding(vocabulary_size, embedding_dim) of the ids plus PositionEmbedding(sequence_length); with
    mask_zero=True the output carries the padding mask. Weights: token_embedding/embeddings,
    position_embedding/embeddings."""

    def __init__(
        self,
        vocabulary_size,
        sequence_length,
        embedding_dim,
        embeddings_initializer="random_uniform",
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = positive_int(vocabulary_size, "vocabulary_size", self.name)
        self.sequence_length = positive_int(sequence_length, "sequence_length", self.name)
        self.embedding_dim = positive_int(embedding_dim, "embedding_dim", self.name)
        self.embeddings_initializer = initializers.serialize(embeddings_initializer)
        self.mask_zero = self.supports_masking = bool(mask_zero)
        self.token_embedding = Embedding(
            vocabulary_size,
            embedding_dim,
            self.embeddings_initializer,
            mask_zero,
            name=part_name(self, "token_embedding"),
        )
        self.position_embedding = PositionEmbedding(
            sequence_length, self.embeddings_initializer, name=part_name(self, "position_embedding")
        )

    def build(self, input_shape):
        build_part(self, self.token_embedding, "token_embedding", input_shape)
        build_part(self, self.position_embedding, "position_embedding", (*input_shape, self.embedding_dim))

    def compute_output_shape(self, input_shape):
        return self.position_embedding.compute_output_shape(self.token_embedding.compute_output_shape(input_shape))

    def call(self, ids, training=False):
        tokens = self.token_embedding.call(ids)
        return tokens + self.position_embedding.call(tokens)

    def compute_mask(self, ids, mask=None):
        return self.token_embedding.compute_mask(ids)

    def layer_config(self):
        return {
            "vocabulary_size": self.vocabulary_size,
            "sequence_length": self.sequence_length,
            "embedding_dim": self.embedding_dim,
            "embeddings_initializer": self.embeddings_initializer,
            "mask_zero": self.mask_zero,
        }
