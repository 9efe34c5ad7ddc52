"""Fused convolutions on the SIMD module: nn.py's convolutions, which add the bias and apply the activation as they
store each output (the GEMM's epilogue)."""

from ....kernel_registry import register_kernel
from .nn import _conv2d, _depthwise


def _fused_conv2d(x, weights, *bias, strides, pad, dilations, activation, hard_swish_scale=None):
    return _conv2d(x, weights, strides, pad, dilations, bias[0] if bias else None, activation, hard_swish_scale)


def _fused_depthwise(x, weights, *bias, strides, pad, dilations, activation, hard_swish_scale=None):
    return _depthwise(x, weights, strides, pad, dilations, bias[0] if bias else None, activation, hard_swish_scale)


register_kernel("FusedConv2D", "wasm", _fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "wasm", _fused_depthwise)
