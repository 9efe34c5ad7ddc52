"""Keras-style layers (NHWC), with TF.js-compatible configs: pe.layers.Conv2D(8, 3, activation="relu6"), ...

Layers compute on tensors when called on tensors, and build a functional model's graph when called on
the symbolic tensors that `Input(shape=...)` starts.
"""

from .advanced_activations import ELU, LeakyReLU, PReLU, ThresholdedReLU
from .attention import MultiHeadAttention
from .base import CLASSES, Layer, SymbolicTensor, WeightSource
from .bidirectional import Bidirectional
from .conv_lstm import ConvLSTM2D, ConvLSTM2DCell
from .convolutional import Conv2D, DepthwiseConv2D, ZeroPadding2D
from .convolutional3d import Conv3D, Conv3DTranspose
from .convolutional_variants import Conv1D, Conv2DTranspose, SeparableConv2D
from .core import Activation, Dense, Dropout, Flatten, ReLU, Reshape, Softmax
from .crf import CRF
from .embedding import Embedding
from .input_layer import Input, InputLayer
from .layer_normalization import LayerNormalization
from .merge import Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply
from .noise import AlphaDropout, GaussianDropout, GaussianNoise, SpatialDropout1D
from .normalization import BatchNormalization
from .pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
)
from .position import PositionEmbedding, SinePositionEncoding, TokenAndPositionEmbedding
from .preprocessing import CategoryEncoding, CenterCrop, RandomHeight, RandomWidth, Rescaling, Resizing
from .recurrent import GRU, LSTM, SimpleRNN
from .recurrent_cells import RNN, GRUCell, LSTMCell, RNNCell, SimpleRNNCell, StackedRNNCells
from .reshaping import Cropping2D, Masking, Permute, RepeatVector, UpSampling2D
from .transformer import TransformerEncoder
from .wrappers import TimeDistributed


def deserialize(entry):
    """A layer from its Keras config entry {"class_name": ..., "config": {...}}."""
    cls = CLASSES.get(entry.get("class_name"))
    if cls is None:
        raise ValueError(f"unknown layer class {entry.get('class_name')!r}; supported: {', '.join(sorted(CLASSES))}")
    return cls.from_config(dict(entry.get("config") or {}))


__all__ = [
    "CLASSES",
    "CRF",
    "ELU",
    "GRU",
    "LSTM",
    "RNN",
    "Activation",
    "Add",
    "AlphaDropout",
    "Average",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "BatchNormalization",
    "Bidirectional",
    "CategoryEncoding",
    "CenterCrop",
    "Concatenate",
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "ConvLSTM2D",
    "ConvLSTM2DCell",
    "Cropping2D",
    "Dense",
    "DepthwiseConv2D",
    "Dot",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "GaussianDropout",
    "GaussianNoise",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "Input",
    "InputLayer",
    "LSTMCell",
    "Layer",
    "LayerNormalization",
    "LeakyReLU",
    "Masking",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "Maximum",
    "Minimum",
    "MultiHeadAttention",
    "Multiply",
    "PReLU",
    "Permute",
    "PositionEmbedding",
    "RNNCell",
    "RandomHeight",
    "RandomWidth",
    "ReLU",
    "RepeatVector",
    "Rescaling",
    "Reshape",
    "Resizing",
    "SeparableConv2D",
    "SimpleRNN",
    "SimpleRNNCell",
    "SinePositionEncoding",
    "Softmax",
    "SpatialDropout1D",
    "StackedRNNCells",
    "SymbolicTensor",
    "ThresholdedReLU",
    "TimeDistributed",
    "TokenAndPositionEmbedding",
    "TransformerEncoder",
    "UpSampling2D",
    "WeightSource",
    "ZeroPadding2D",
    "deserialize",
]
