"""Fused convolutions in WGSL: the convolution shaders of kernels/conv.py, with bias and activation applied
as each output is stored, so a conv + bias + activation block is one dispatch.

FusedConv2D is conv.py's implicit GEMM (either variant, recorded as backend.variants["conv"]) whose stores
`C[at] = v` become `C[at] = epilogue(v, at % cols())` (columns are output channels); FusedDepthwiseConv2D is
conv.py's direct depthwise shader with the same epilogue. The bias, when there is one, binds after the filter.
"""

import functools
import re

from ....kernels import register_kernel
from ..wgsl import PRELUDE, Shader, bindings, linear_groups, linear_main
from .conv import CONV_HOOKS, GEO, GEOMETRY, depthwise_body
from .elementwise import HELPERS, UNARY
from .linalg import F32, PROBLEM, SPLIT_SLAB, gemm_shader, run_gemm, variant

_STORE = re.compile(r"C\[([^\]]+)\] = ([^;]+);")


def _epilogue(activation, has_bias):
    """WGSL fn epilogue(v, channel): v + bias[channel] through the activation (UNARY["Relu"] for "relu", ...)."""
    expr = "x" if activation == "linear" else UNARY[activation.capitalize()]
    expr = expr.replace("T(", "f32(").replace("IS_NAN(x)", "is_nan(x)")
    bias = " + Bias[channel]" if has_bias else ""
    return f"\nfn epilogue(v: f32, channel: u32) -> f32 {{\n  let x = v{bias};\n  return {expr};\n}}\n"


def _inputs(first, has_bias):
    return [(first, F32), ("F" if first == "X" else "B", F32)] + ([("Bias", F32)] if has_bias else [])


def _patched(source, pattern, replacement, what):
    """source with `pattern` replaced; kernels/conv.py owns the source, so a change there must fail loudly here."""
    patched, count = (
        pattern.subn(replacement, source)
        if isinstance(pattern, re.Pattern)
        else (source.replace(pattern, replacement), source.count(pattern))
    )
    if not count:
        raise RuntimeError(f"fused convolution: cannot find {what} in the conv shader; kernels/conv.py has changed")
    return patched


@functools.cache
def _gemm_shader(chosen, activation, has_bias):
    base = gemm_shader("conv2d", GEO + SPLIT_SLAB + CONV_HOOKS, F32, chosen)
    plain, fused = bindings(_inputs("A", False), [("C", F32)]), bindings(_inputs("A", has_bias), [("C", F32)])
    source = _patched(base.source, plain, fused + HELPERS + _epilogue(activation, has_bias), "the GEMM bindings")
    source = _patched(source, _STORE, r"C[\1] = epilogue(\2, (\1) % cols());", "the GEMM's stores")
    key = f"FusedGemm:conv2d:{chosen}:{activation}:{'bias' if has_bias else 'no-bias'}"
    return Shader(key, source, 2 + has_bias, 1)


# The depthwise bodies' stores, and the same with the epilogue: one channel per thread, or four
_DEPTHWISE_STORES = {
    1: ("out[i] = acc;", "out[i] = epilogue(acc, u32(oc));"),
    4: ("out[o + k] = acc[k];", "out[o + k] = epilogue(acc[k], u32(c + k));"),
}


@functools.cache
def _depthwise_shader(activation, has_bias, channels, mult):
    body, lanes = depthwise_body(channels, mult)
    body = _patched(body, *_DEPTHWISE_STORES[lanes], "the depthwise store")
    source = PRELUDE + GEO + HELPERS + bindings(_inputs("X", has_bias), [("out", F32)])
    source += _epilogue(activation, has_bias) + linear_main("  let g = geo();\n" + body)
    key = f"FusedDepthwiseConv2D:x{lanes}:{activation}:{'bias' if has_bias else 'no-bias'}"
    return Shader(key, source, 2 + has_bias, 1), lanes


def _geometry(x_shape, out_shape, filter_shape, strides, pad, dilations, mult):
    """The uniform words conv.py's GEO reads, in GEOMETRY's order."""
    (_, h, w, c), (_, oh, ow, o) = x_shape, out_shape
    values = {"h": h, "w": w, "c": c, "oh": oh, "ow": ow, "o": o, "kh": filter_shape[0], "kw": filter_shape[1]}
    values |= {"sh": strides[0], "sw": strides[1], "dh": dilations[0], "dw": dilations[1]}
    values |= {"top": pad[0][0], "left": pad[1][0], "mult": mult}
    return [values[name] for name in GEOMETRY]


def _output(backend, x, filter_shape, strides, pad, dilations, channels):
    (n, h, w, _), (kh, kw) = x.shape, filter_shape[:2]
    oh = (h + sum(pad[0]) - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (w + sum(pad[1]) - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    return backend.empty((n, oh, ow, channels), F32)


class _BiasBound:
    """run_gemm dispatches [A, B, C]; the fused GEMM binds the bias between B and C."""

    def __init__(self, backend, bias):
        self.backend, self.bias = backend, bias

    def dispatch(self, shader, arrays, uniforms, workgroups):
        a, b, c = arrays
        self.backend.dispatch(shader, [a, b, self.bias, c], uniforms, workgroups)


def _fused_conv2d(backend, x, weights, *bias, strides, pad, dilations, activation):
    (kh, kw, c, o) = weights.shape
    out = _output(backend, x, weights.shape, strides, pad, dilations, o)
    if out.size == 0:
        return out
    chosen = variant(backend, "conv")
    shader = _gemm_shader(chosen, activation, bool(bias))
    geometry = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations, 1)
    target = _BiasBound(backend, bias[0]) if bias else backend
    rows = out.shape[0] * out.shape[1] * out.shape[2]
    # one slab holding every segment (filter tap): chunk = kh * kw, as conv.py's unsplit GEMM
    run_gemm(target, shader, chosen, x, weights, out, (rows, o), (kh * kw, c, 1, o, 1), 1, kh * kw, geometry)
    return out


def _fused_depthwise(backend, x, weights, *bias, strides, pad, dilations, activation):
    mult = weights.shape[3]
    out = _output(backend, x, weights.shape, strides, pad, dilations, weights.shape[2] * mult)
    if out.size == 0:
        return out
    shader, lanes = _depthwise_shader(activation, bool(bias), weights.shape[2], mult)
    geometry = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations, mult)
    threads = out.size // lanes
    backend.dispatch(
        shader, [x, weights, *bias, out], [threads] + [0] * (PROBLEM - 1) + geometry, linear_groups(threads)
    )
    return out


register_kernel("FusedConv2D", "webgpu", _fused_conv2d)
register_kernel("FusedDepthwiseConv2D", "webgpu", _fused_depthwise)
