"""Fused convolution kernels on numpy: the convolution, then + bias, then the activation, in one kernel."""

import numpy as np

from ....kernel_registry import register_kernel
from .math import UNARY
from .nn import _conv2d, _depthwise


def hard_swish(x, scale):
    """(x * scale) * relu6(x + 3): MobileNetV3's graph nodes (Mul, Add, Relu6, Mul) one at a time, their values."""
    return (x * np.float32(scale)) * UNARY["Relu6"](x + np.float32(3))


def _epilogue(out, bias, activation, hard_swish_scale):
    """out (a fresh float32 array) + bias, through the activation's elementwise kernel ("relu" -> Relu)."""
    if bias:
        out += bias[0]
    if activation == "hard_swish":
        return hard_swish(out, hard_swish_scale)
    return out if activation == "linear" else UNARY[activation.capitalize()](out)


def fused_conv2d(x, weights, *bias, strides, pad, dilations, activation, hard_swish_scale=None):
    return _epilogue(_conv2d(x, weights, strides, pad, dilations), bias, activation, hard_swish_scale)


def fused_depthwise(x, weights, *bias, strides, pad, dilations, activation, hard_swish_scale=None):
    return _epilogue(_depthwise(x, weights, strides, pad, dilations), bias, activation, hard_swish_scale)


register_kernel("FusedConv2D", "numpy", fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "numpy", fused_depthwise)
