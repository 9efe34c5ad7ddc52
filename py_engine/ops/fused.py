"""Fused convolutions: conv2d or depthwise_conv2d, plus a bias, plus an activation, as one kernel.

What a Conv2D layer (and a BatchNormalization folded into it) runs: one dispatch instead of three.
Kernels "FusedConv2D" and "FusedDepthwiseConv2D" take (x, filter) or (x, filter, bias) and the attrs
of Conv2D (strides, pad, dilations) plus `activation`, one of ACTIVATIONS (and `hard_swish_scale` for
hard_swish). Their gradients
(ops/gradients/fused.py) go through the convolutions' own backprop kernels.
"""

__all__ = ["fused_conv2d", "fused_depthwise_conv2d"]

import numpy as np

from ..engine import ENGINE
from ..errors import ShapeError
from ..tensor import Tensor
from .nn import batched, conv_inputs, float_input
from .operands import release

# Elementwise activations a fused kernel applies to each output (each backend maps "relu" to its Relu, ...);
# hard_swish is (x * hard_swish_scale) * relu6(x + 3), MobileNetV3's, in the order of its graph nodes (a graph's
# scale is 1/6 rounded to its weights' precision: models/graph_fusion.py).
ACTIVATIONS = ("linear", "relu", "relu6", "sigmoid", "tanh", "elu", "softplus", "hard_swish")


def _fused(op, kernel, depthwise, x, w, bias, activation, strides, padding, dilations, hard_swish_scale):
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: activation must be one of {', '.join(ACTIVATIONS)}; got {activation!r}")
    layout = "h, w, in, multiplier" if depthwise else "h, w, in, out"
    temps = []
    try:
        x, w, attrs = conv_inputs(op, layout, x, w, strides, padding, dilations, temps)
        weights = [w]
        if bias is not None:
            bias = float_input(op, bias, temps, "bias")
            channels = w.shape[2] * w.shape[3] if depthwise else w.shape[3]
            if bias.shape != (channels,):
                raise ShapeError(f"{op}: bias has shape {bias.shape}; expected ({channels},), one per output channel")
            weights.append(bias)
        attrs["activation"] = activation
        if activation == "hard_swish":
            attrs["hard_swish_scale"] = float(np.float32(hard_swish_scale))
        return batched(x, lambda batch: ENGINE.run_kernel(kernel, (batch, *weights), attrs))
    finally:
        release(temps)


def fused_conv2d(
    x, filter, bias=None, activation="linear", strides=1, padding="valid", dilations=1, hard_swish_scale=1 / 6
) -> Tensor:
    """activation(conv2d(x, filter) + bias) in one kernel; filter [h, w, in, out], bias [out] or None;
    hard_swish_scale: s of hard_swish, (y * s) * relu6(y + 3)."""
    return _fused(
        "fused_conv2d", "FusedConv2D", False, x, filter, bias, activation, strides, padding, dilations, hard_swish_scale
    )


def fused_depthwise_conv2d(
    x, filter, bias=None, activation="linear", strides=1, padding="valid", dilations=1, hard_swish_scale=1 / 6
) -> Tensor:
    """activation(depthwise_conv2d(x, filter) + bias) in one kernel; filter [h, w, in, multiplier], bias
    [in * multiplier]; hard_swish_scale: s of hard_swish, (y * s) * relu6(y + 3)."""
    return _fused(
        "fused_depthwise_conv2d", "FusedDepthwiseConv2D", True, x, filter, bias, activation, strides, padding,
        dilations, hard_swish_scale,
    )  # fmt: skip
