"""Keras-style layers (NHWC), with TF.js-compatible configs: pe.layers.Conv2D(8, 3, activation="relu6"), ...

Layers compute on tensors when called on tensors, and build a functional model's graph when called on
the symbolic tensors that `Input(shape=...)` starts.
"""

from .base import CLASSES, Layer, SymbolicTensor, WeightSource
from .convolutional import Conv2D, DepthwiseConv2D, ZeroPadding2D
from .core import Activation, Dense, Dropout, Flatten, ReLU, Reshape, Softmax
from .fused import fused_conv2d, fused_depthwise_conv2d
from .input_layer import Input, InputLayer
from .merge import Add, Concatenate
from .normalization import BatchNormalization
from .pooling import AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D


def deserialize(entry):
    """A layer from its Keras config entry {"class_name": ..., "config": {...}}."""
    cls = CLASSES.get(entry.get("class_name"))
    if cls is None:
        raise ValueError(f"unknown layer class {entry.get('class_name')!r}; supported: {', '.join(sorted(CLASSES))}")
    return cls.from_config(dict(entry.get("config") or {}))


__all__ = [
    "CLASSES",
    "Activation",
    "Add",
    "AveragePooling2D",
    "BatchNormalization",
    "Concatenate",
    "Conv2D",
    "Dense",
    "DepthwiseConv2D",
    "Dropout",
    "Flatten",
    "GlobalAveragePooling2D",
    "Input",
    "InputLayer",
    "Layer",
    "MaxPooling2D",
    "ReLU",
    "Reshape",
    "Softmax",
    "SymbolicTensor",
    "WeightSource",
    "ZeroPadding2D",
    "deserialize",
    "fused_conv2d",
    "fused_depthwise_conv2d",
]
