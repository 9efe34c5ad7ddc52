"""Fused convolutions in WGSL: kernels/conv.py's shaders with an epilogue that adds the bias and applies the
activation as each output is stored, so a conv + bias + activation block is one dispatch.

FusedConv2D is conv.py's implicit GEMM (either variant, recorded as backend.variants["conv"]) and
FusedDepthwiseConv2D its direct depthwise shader, both given the epilogue as a parameter (the GEMM's column, the
depthwise thread's channel, is the output channel). The bias, when there is one, binds after the filter.

The activation is a uniform (`u.activation`, an index into ACTIVATIONS) switched on at the store: every
thread of a dispatch takes the same case, so it costs no divergence, and one pipeline serves every activation
(EfficientNet's linear and relu6 convolutions share theirs: a pipeline fewer to compile in warm-up).
"""

import functools

from ....kernels import register_kernel
from ..program import Epilogue
from .conv import conv2d, depthwise
from .elementwise import HELPERS, UNARY

F32 = "float32"
ACTIVATIONS = ("linear", "relu", "relu6", "sigmoid", "tanh", "elu", "softplus")  # the fused ops' (layers/fused.py)


def _activation_case(index, name):
    expr = UNARY[name.capitalize()].replace("T(", "f32(").replace("IS_NAN(x)", "is_nan(x)")
    return f"    case {index}u: {{ return {expr}; }}"


@functools.cache
def _epilogue(has_bias):
    """activation(v + bias[channel]), the activation chosen by u.activation."""
    cases = "\n".join(_activation_case(i, name) for i, name in enumerate(ACTIVATIONS) if name != "linear")
    bias = " + Bias[channel]" if has_bias else ""
    wgsl = f"""{HELPERS}
fn activate(x: f32) -> f32 {{
  switch u.activation {{
{cases}
    default: {{ return x; }}
  }}
}}
fn epilogue(v: f32, channel: u32) -> f32 {{ return activate(v{bias}); }}
"""
    name = "activation:bias" if has_bias else "activation"
    return Epilogue(name, wgsl, (("Bias", F32),) if has_bias else (), (("activation", "u32"),))


def _activation(activation):
    if activation not in ACTIVATIONS:
        raise ValueError(f"fused convolution: activation {activation!r} is not one of {', '.join(ACTIVATIONS)}")
    return {"activation": ACTIVATIONS.index(activation)}


def _fused_conv2d(backend, x, weights, *bias, strides, pad, dilations, activation):
    epilogue = _epilogue(bool(bias))
    return conv2d(backend, x, weights, strides, pad, dilations, epilogue, bias, _activation(activation))


def _fused_depthwise(backend, x, weights, *bias, strides, pad, dilations, activation):
    epilogue = _epilogue(bool(bias))
    return depthwise(backend, x, weights, strides, pad, dilations, epilogue, bias, _activation(activation))


register_kernel("FusedConv2D", "webgpu", _fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "webgpu", _fused_depthwise)
