"""Fused convolutions in WGSL: kernels/nn.py's shaders with an epilogue whose sums start from the bias and
whose activation is applied as each output is stored, so a conv + bias + activation block is one dispatch.

FusedConv2D is nn.py's implicit GEMM (either variant, recorded as backend.variants["conv"]) and
FusedDepthwiseConv2D its direct depthwise shader, both given the epilogue as a parameter (the GEMM's column, the
depthwise thread's channel, is the output channel). The bias, when there is one, binds after the filter.

linear, relu and relu6 are one clamp whose bounds are uniforms, so one pipeline serves the three (EfficientNet's
linear and relu6 convolutions share theirs: a pipeline fewer to compile in warm-up) at the cost of relu6. The
other activations keep a pipeline each: choosing among them by a uniform `switch` made EfficientNet-Lite0's
forward pass 25% slower on SwiftShader, which runs every case of a switch under a lane mask (it cannot know the
value is the same in every thread).
"""

import functools
import math

from ....kernel_registry import register_kernel
from ..shader_layout import Epilogue
from .math import HELPERS, UNARY
from .nn import conv2d, depthwise

F32 = "float32"
# (low, high) of the clamp that is the activation; NaN passes through, as in Relu and Relu6
CLAMPS = {"linear": (-math.inf, math.inf), "relu": (0.0, math.inf), "relu6": (0.0, 6.0)}
# hard-swish, (x * scale) * relu6(x + 3) in the graph nodes' order, its scale a uniform
HARD_SWISH = "(x * u.scale) * select(clamp(x + 3.0, 0.0, 6.0), x + 3.0, is_nan(x))"


@functools.cache
def _epilogue(activation, has_bias):
    """activation(sum + bias[channel]): each output channel's sum starts from its bias; a clamp between u.low and
    u.high for the activations in CLAMPS; hard-swish's scale is u.scale."""
    start = "Bias[channel]" if has_bias else "0.0"
    if activation in CLAMPS:
        expr, name, uniforms = (
            "select(clamp(x, u.low, u.high), x, is_nan(x))",
            "clamp",
            (("low", "f32"), ("high", "f32")),
        )
    elif activation == "hard_swish":
        expr, name, uniforms = HARD_SWISH, activation, (("scale", "f32"),)
    else:
        expr, name, uniforms = UNARY[activation.capitalize()], activation, ()
        expr = expr.replace("T(", "f32(").replace("IS_NAN(x)", "is_nan(x)")
    wgsl = (
        f"{HELPERS}\nfn epilogue_start(channel: u32) -> f32 {{ return {start}; }}\n"
        f"fn epilogue(x: f32) -> f32 {{ return {expr}; }}\n"
    )
    name += ":bias" if has_bias else ":no-bias"
    return Epilogue(name, wgsl, (("Bias", F32),) if has_bias else (), uniforms)


def _uniforms(activation, hard_swish_scale):
    """The epilogue's uniform values for `activation`."""
    if activation == "hard_swish":
        return {"scale": hard_swish_scale}
    if activation not in CLAMPS:
        return {}
    low, high = CLAMPS[activation]
    return {"low": low, "high": high}


def _fused_conv2d(backend, x, weights, *bias, strides, pad, dilations, activation, hard_swish_scale=None):
    epilogue = _epilogue(activation, bool(bias))
    uniforms = _uniforms(activation, hard_swish_scale)
    return conv2d(backend, x, weights, strides, pad, dilations, epilogue, bias, uniforms)


def _fused_depthwise(backend, x, weights, *bias, strides, pad, dilations, activation, hard_swish_scale=None):
    epilogue = _epilogue(activation, bool(bias))
    uniforms = _uniforms(activation, hard_swish_scale)
    return depthwise(backend, x, weights, strides, pad, dilations, epilogue, bias, uniforms)


register_kernel("FusedConv2D", "webgpu", _fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "webgpu", _fused_depthwise)
