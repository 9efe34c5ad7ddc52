"""Activation functions by Keras name ("relu", "relu6", "softmax", ...), as Dense/Conv2D/Activation use them."""

from .. import ops
from .fused import ACTIVATIONS as FUSABLE  # noqa: F401 - the ones a fused convolution applies itself

FUNCTIONS = {
    "linear": lambda x: x,
    "relu": ops.relu,
    "relu6": ops.relu6,
    "sigmoid": ops.sigmoid,
    "tanh": ops.tanh,
    "softmax": lambda x: ops.softmax(x, -1),
    "elu": ops.elu,
    "softplus": ops.softplus,
    "swish": lambda x: x * ops.sigmoid(x),
}


def normalize(activation, layer):
    """The activation's name ("linear" for None); a name that is not known here is refused, naming the layer."""
    name = "linear" if activation is None else activation
    if isinstance(name, dict):  # Keras 3 writes {"class_name": "function", "config": "relu", ...}
        name = name.get("config")
    if name not in FUNCTIONS:
        raise ValueError(f"{layer}: unknown activation {activation!r}; supported: {', '.join(FUNCTIONS)}")
    return name


def apply(name, x):
    return FUNCTIONS[name](x)
