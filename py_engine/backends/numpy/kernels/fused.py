"""Fused convolution kernels on numpy: the convolution, then + bias, then the activation, in one kernel."""

from ....kernel_registry import register_kernel
from .math import UNARY
from .nn import _conv2d, _depthwise


def _epilogue(out, bias, activation):
    """out (a fresh float32 array) + bias, through the activation's elementwise kernel ("relu" -> Relu)."""
    if bias:
        out += bias[0]
    return out if activation == "linear" else UNARY[activation.capitalize()](out)


def fused_conv2d(x, weights, *bias, strides, pad, dilations, activation):
    return _epilogue(_conv2d(x, weights, strides, pad, dilations), bias, activation)


def fused_depthwise(x, weights, *bias, strides, pad, dilations, activation):
    return _epilogue(_depthwise(x, weights, strides, pad, dilations), bias, activation)


register_kernel("FusedConv2D", "numpy", fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "numpy", fused_depthwise)
