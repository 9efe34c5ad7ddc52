"""Fused convolutions in WGSL: kernels/conv.py's shaders with an epilogue that adds the bias and applies the
activation as each output is stored, so a conv + bias + activation block is one dispatch.

FusedConv2D is conv.py's implicit GEMM (either variant, recorded as backend.variants["conv"]) and
FusedDepthwiseConv2D its direct depthwise shader, both given the epilogue as a parameter (the GEMM's column, the
depthwise thread's channel, is the output channel). The bias, when there is one, binds after the filter.
"""

import functools

from ....kernels import register_kernel
from ..program import Epilogue
from .conv import conv2d, depthwise
from .elementwise import HELPERS, UNARY

F32 = "float32"


@functools.cache
def _epilogue(activation, has_bias):
    """v + bias[channel] through the activation (UNARY["Relu"] for "relu", ...)."""
    expr = "x" if activation == "linear" else UNARY[activation.capitalize()]
    expr = expr.replace("T(", "f32(").replace("IS_NAN(x)", "is_nan(x)")
    bias = " + Bias[channel]" if has_bias else ""
    wgsl = f"{HELPERS}\nfn epilogue(v: f32, channel: u32) -> f32 {{\n  let x = v{bias};\n  return {expr};\n}}\n"
    name = f"{activation}:{'bias' if has_bias else 'no-bias'}"
    return Epilogue(name, wgsl, (("Bias", F32),) if has_bias else ())


def _fused_conv2d(backend, x, weights, *bias, strides, pad, dilations, activation):
    return conv2d(backend, x, weights, strides, pad, dilations, _epilogue(activation, bool(bias)), bias)


def _fused_depthwise(backend, x, weights, *bias, strides, pad, dilations, activation):
    return depthwise(backend, x, weights, strides, pad, dilations, _epilogue(activation, bool(bias)), bias)


register_kernel("FusedConv2D", "webgpu", _fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "webgpu", _fused_depthwise)
