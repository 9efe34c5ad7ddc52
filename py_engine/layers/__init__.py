"""Keras-style layers (NHWC), with TF.js-compatible configs: pe.layers.Conv2D(8, 3, activation="relu6"), ...

Layers compute on tensors when called on tensors, and build a functional model's graph when called on
the symbolic tensors that `Input(shape=...)` starts.
"""

from .attention import MultiHeadAttention
from .base import CLASSES, Layer, SymbolicTensor, WeightSource
from .bidirectional import Bidirectional
from .convolutional import Conv2D, DepthwiseConv2D, ZeroPadding2D
from .convolutional_variants import Conv1D, Conv2DTranspose, SeparableConv2D
from .core import Activation, Dense, Dropout, Flatten, ReLU, Reshape, Softmax
from .crf import CRF
from .embedding import Embedding
from .fused import fused_conv2d, fused_depthwise_conv2d
from .global_pooling1d import GlobalAveragePooling1D
from .input_layer import Input, InputLayer
from .layer_normalization import LayerNormalization
from .merge import Add, Concatenate
from .normalization import BatchNormalization
from .pooling import AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D
from .position import PositionEmbedding, SinePositionEncoding, TokenAndPositionEmbedding
from .recurrent import GRU, LSTM, SimpleRNN
from .recurrent_ops import gru_sequence, lstm_sequence, simple_rnn_sequence
from .transformer import TransformerEncoder


def deserialize(entry):
    """A layer from its Keras config entry {"class_name": ..., "config": {...}}."""
    cls = CLASSES.get(entry.get("class_name"))
    if cls is None:
        raise ValueError(f"unknown layer class {entry.get('class_name')!r}; supported: {', '.join(sorted(CLASSES))}")
    return cls.from_config(dict(entry.get("config") or {}))


__all__ = [
    "CLASSES",
    "CRF",
    "GRU",
    "LSTM",
    "Activation",
    "Add",
    "AveragePooling2D",
    "BatchNormalization",
    "Bidirectional",
    "Concatenate",
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Dense",
    "DepthwiseConv2D",
    "Dropout",
    "Embedding",
    "Flatten",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "Input",
    "InputLayer",
    "Layer",
    "LayerNormalization",
    "MaxPooling2D",
    "MultiHeadAttention",
    "PositionEmbedding",
    "ReLU",
    "Reshape",
    "SeparableConv2D",
    "SimpleRNN",
    "SinePositionEncoding",
    "Softmax",
    "SymbolicTensor",
    "TokenAndPositionEmbedding",
    "TransformerEncoder",
    "WeightSource",
    "ZeroPadding2D",
    "deserialize",
    "fused_conv2d",
    "fused_depthwise_conv2d",
    "gru_sequence",
    "lstm_sequence",
    "simple_rnn_sequence",
]
