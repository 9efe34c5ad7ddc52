"""Convolutions, depthwise convolutions and pooling on the SIMD module, forward and backward (NHWC, HWIO).

A convolution is a GEMM over its patches (a 1x1 one over the image itself); the module builds the patches a block of
rows at a time in a scratch array, so a big convolution needs little extra memory. Depthwise convolutions with a
channel multiplier other than 1 run the numpy backend's kernels.
"""

import numpy as np

from ....kernel_registry import register_kernel
from ....window_output_size import window_output_hw
from ...numpy.kernels import fused as numpy_fused
from ...numpy.kernels import math as numpy_math
from ...numpy.kernels import nn as numpy_nn
from .. import native, threads
from ..native import F32, I32, address
from ..op_codes import ACTIVATIONS, UNARY
from .linalg import gemm, pack, pack_kept
from .math import _unary

SCRATCH = 1 << 16  # floats of patches per block (256 KiB: stays in L2 while the GEMM reads it)
# MaxPoolGrad's kernel picks each window's first max with SIMD selects: about 0.85 ns a tap, the time of 7 of the GEMM's
# multiply-adds (the small CNN of bench/train_step.py, one thread), which is the unit threads.worth weighs work in
MAX_POOL_GRAD_TAP = 7


def _geometry(x_shape, window, strides, pad, dilations=(1, 1)):
    """(int32 shape block kernels/nn.c reads, output height, width): H, W, C, OH, OW, KH, KW, strides, dilations, top, left."""
    _, h, w, c = x_shape
    oh, ow = window_output_hw((h, w), window, strides, pad, dilations)
    return native.ints([h, w, c, oh, ow, *window, *strides, *dilations, pad[0][0], pad[1][0]]), oh, ow


def _block(rows, k):
    return max(4, min(rows, SCRATCH // max(k, 1)))


def _is_plain_1x1(w_shape, strides, pad, dilations):
    return w_shape[:2] == (1, 1) and tuple(strides) == (1, 1) and pad == ((0, 0), (0, 0))


def _activate(y, activation, hard_swish_scale=None):
    """The epilogue the module applies itself, or linear there and the activation's kernel after it (the module's
    unary kernel where it has one, as for sigmoid, else numpy's). A hard-swish's code is its scale's float32 bits
    (kernels/simd.h's activate), which exceed every ACT_ code where the scale is positive."""
    code = ACTIVATIONS.get(activation)
    if code is not None:
        return code, None
    if activation == "hard_swish":
        bits = int(np.float32(hard_swish_scale).view(np.int32))
        if bits > max(ACTIVATIONS.values()):
            return bits, None
        return 0, lambda out: numpy_fused.hard_swish(out, hard_swish_scale)
    name = activation.capitalize()
    return 0, _unary(name) if name in UNARY else numpy_math.UNARY[name]


# ---- conv2d ------------------------------------------------------------------------------------------------------


def _conv2d(x, weights, strides, pad, dilations, bias=None, activation="linear", hard_swish_scale=None):
    kh, kw, c, o = weights.shape
    if x.dtype != F32 or weights.dtype != F32 or 0 in x.shape or 0 in weights.shape:
        return numpy_fused.fused_conv2d(x, weights, *([bias] if bias is not None else []), strides=strides, pad=pad,
                                         dilations=dilations, activation=activation,
                                         hard_swish_scale=hard_swish_scale)  # fmt: skip
    x, weights = native.f32(x), native.f32(weights)
    bias = native.f32(bias) if bias is not None else None
    shape, oh, ow = _geometry(x.shape, (kh, kw), strides, pad, dilations)
    rows, k = x.shape[0] * oh * ow, kh * kw * c
    y = native.out((x.shape[0], oh, ow, o))
    if rows <= 0:
        return y
    code, after = _activate(y, activation, hard_swish_scale)
    plain = _is_plain_1x1(weights.shape, strides, pad, dilations)
    pool = threads.worth(rows * k * o, x, out=(y,), kept=(weights, bias))
    if pool:
        done = (
            threads.gemm(pool, x, weights, rows, o, k, False, y, bias, code)
            if plain
            else threads.conv2d(
                pool,
                x,
                shape,
                rows,
                weights,
                k,
                o,
                bias,
                code,
                y,
                _block(-(-rows // (pool.threads * threads.GUIDED)), k),  # the first chunk's rows at most
            )
        )
        if done is not None:
            return after(y) if after else y
    packed = pack_kept(weights, k, o)
    if plain:
        gemm(x, packed, rows, o, k, y, bias=bias, activation=code)
    else:
        block = _block(rows, k)
        scratch = native.aligned(block * k)
        native.exports.conv2d(
            address(x, x.size), address(shape, 13, I32), 0, rows, address(packed, packed.size), o,
            address(bias, o) if bias is not None else 0, code, address(y, y.size), address(scratch, scratch.size), block,
        )  # fmt: skip
    return after(y) if after else y


def _conv2d_backprop_filter(x, dy, strides, pad, dilations, filter_shape):
    kh, kw, c, o = filter_shape
    if x.dtype != F32 or dy.dtype != F32 or 0 in x.shape or 0 in dy.shape or 0 in filter_shape:
        return numpy_nn.conv2d_backprop_filter(x, dy, strides, pad, dilations, filter_shape)
    x, dy = native.f32(x), native.f32(dy)
    shape, oh, ow = _geometry(x.shape, (kh, kw), strides, pad, dilations)
    rows, k = dy.shape[0] * oh * ow, kh * kw * c
    block, dw = _block(rows, k), native.out(filter_shape)
    pool = threads.worth(rows * k * o, x, dy, out=(dw,))  # split by blocks of rows or by taps, where it can
    if pool and threads.conv2d_filter_grad(pool, x, shape, rows, dy, kh * kw, c, o, dw, block) is not None:
        return dw
    native.zero(dw)
    scratch, packed = native.aligned(block * k), native.aligned(block * -(-o // 8) * 8)
    native.exports.conv2d_filter_grad(
        address(x, x.size), address(shape, 13, I32), rows, address(dy, rows * o), o, address(dw, dw.size),
        address(scratch, scratch.size), address(packed, packed.size), block,
    )  # fmt: skip
    return dw


def _conv2d_backprop_input(dy, weights, strides, pad, dilations, input_shape):
    kh, kw, c, o = weights.shape
    if dy.dtype != F32 or weights.dtype != F32 or 0 in dy.shape or 0 in weights.shape or 0 in input_shape:
        return numpy_nn.conv2d_backprop_input(dy, weights, strides, pad, dilations, input_shape)
    dy, weights = native.f32(dy), native.f32(weights)
    shape, oh, ow = _geometry(input_shape, (kh, kw), strides, pad, dilations)
    rows, k = dy.shape[0] * oh * ow, kh * kw * c
    plain, block, images = _is_plain_1x1(weights.shape, strides, pad, dilations), _block(rows, k), dy.shape[0]
    dx = native.out(input_shape)
    pool = (
        threads.worth(rows * k * o, dy, out=(dx,), kept=(weights,)) if plain or images > 1 else None
    )  # split by images
    if (
        pool
        and (
            threads.gemm(pool, dy, weights, rows, k, o, True, dx)
            if plain
            else threads.conv2d_input_grad(pool, dy, shape, images, rows // images, weights, k, o, dx, block)
        )
        is not None
    ):
        return dx
    transposed = pack(weights, o, k, transposed=True)  # W^T: o x k
    native.zero(dx)
    if plain:
        return gemm(dy, transposed, rows, k, o, dx)
    scratch = native.aligned(block * k)
    native.exports.conv2d_input_grad(
        address(dy, rows * o), address(shape, 13, I32), rows, address(transposed, transposed.size), o,
        address(dx, dx.size), address(scratch, scratch.size), block,
    )  # fmt: skip
    return dx


# ---- depthwise conv2d (multiplier 1) ---------------------------------------------------------------------------


def _depthwise(x, weights, strides, pad, dilations, bias=None, activation="linear", hard_swish_scale=None):
    kh, kw, c, m = weights.shape
    if m != 1 or x.dtype != F32 or weights.dtype != F32 or 0 in x.shape or 0 in weights.shape:
        return numpy_fused.fused_depthwise(x, weights, *([bias] if bias is not None else []), strides=strides,
                                            pad=pad, dilations=dilations, activation=activation,
                                            hard_swish_scale=hard_swish_scale)  # fmt: skip
    x, weights = native.f32(x), native.f32(weights)
    bias = native.f32(bias) if bias is not None else None
    shape, oh, ow = _geometry(x.shape, (kh, kw), strides, pad, dilations)
    y = native.out((x.shape[0], max(oh, 0), max(ow, 0), c))
    if y.size == 0:
        return y
    code, after = _activate(y, activation, hard_swish_scale)
    pool, rows = threads.worth(y.size * kh * kw, x, out=(y,)) or threads.in_place(y.size, x), x.shape[0] * oh
    # the taps as the GEMM's panels, read at constant offsets (kernels/nn.c depthwise_four_panels)
    paneled = kw in (3, 5) and strides[1] in (1, 2) and dilations[1] == 1 and c % 4 == 0
    extra = (weights, threads.Panels(weights, kh * kw, c) if paneled else 0, bias if bias is not None else 0, code)
    if pool and threads.rows_kernel(pool, "depthwise", x, shape, rows, y, *extra) is not None:
        return after(y) if after else y
    panels = pack_kept(weights, kh * kw, c) if paneled else None
    native.exports.depthwise(
        address(x, x.size), 0, rows, address(shape, 13, I32), address(weights, weights.size),
        address(panels, panels.size) if panels is not None else 0, address(bias, c) if bias is not None else 0, code,
        address(y, y.size),
    )  # fmt: skip
    return after(y) if after else y


def _depthwise_backprop_input(dy, weights, strides, pad, dilations, input_shape):
    kh, kw, _, m = weights.shape
    if m != 1 or dy.dtype != F32 or weights.dtype != F32 or 0 in dy.shape or 0 in input_shape:
        return numpy_nn.depthwise_backprop_input(dy, weights, strides, pad, dilations, input_shape)
    dy, weights = native.f32(dy), native.f32(weights)
    shape, _, _ = _geometry(input_shape, (kh, kw), strides, pad, dilations)
    images, dx = dy.shape[0], native.out(input_shape)
    pool = threads.worth(dy.size * kh * kw, dy, out=(dx,), kept=(weights,)) if images > 1 else None  # split by images
    if pool and threads.images_kernel(pool, "depthwise_input_grad", images, (dy,), shape, weights, dx) is not None:
        return dx
    native.zero(dx)
    native.exports.depthwise_input_grad(
        address(dy, dy.size), dy.shape[0], address(shape, 13, I32), address(weights, weights.size), address(dx, dx.size)
    )
    return dx


def _depthwise_backprop_filter(x, dy, strides, pad, dilations, filter_shape):
    kh, kw, _, m = filter_shape
    if m != 1 or x.dtype != F32 or dy.dtype != F32 or 0 in x.shape or 0 in dy.shape:
        return numpy_nn.depthwise_backprop_filter(x, dy, strides, pad, dilations, filter_shape)
    x, dy = native.f32(x), native.f32(dy)
    shape, _, _ = _geometry(x.shape, (kh, kw), strides, pad, dilations)
    channels, dw = x.shape[3], native.out(filter_shape)
    pool = threads.worth(dy.size * kh * kw, x, dy) if channels > 4 else None  # split by channels, 4 at a time
    if pool and threads.depthwise_filter_grad(pool, x, dy, x.shape[0], shape, channels, dw) is not None:
        return dw
    native.zero(dw)
    native.exports.depthwise_filter_grad(
        address(x, x.size), address(dy, dy.size), x.shape[0], address(shape, 13, I32), address(dw, dw.size), 0,
        channels,
    )  # fmt: skip
    return dw


# ---- pooling -----------------------------------------------------------------------------------------------------


def _pool(average):
    fallback = numpy_nn.avg_pool if average else numpy_nn.max_pool

    def kernel(x, ksize, strides, pad):
        if x.dtype != F32 or 0 in x.shape:
            return fallback(x, ksize, strides, pad)
        x = native.f32(x)
        shape, oh, ow = _geometry(x.shape, ksize, strides, pad)
        y = native.out((x.shape[0], max(oh, 0), max(ow, 0), x.shape[3]))
        pool = (
            threads.worth(y.size * ksize[0] * ksize[1], x, out=(y,)) or threads.in_place(y.size, x) if y.size else None
        )
        rows = x.shape[0] * oh
        if pool and threads.rows_kernel(pool, "pool", x, shape, rows, y, int(average)) is not None:
            return y
        if y.size:
            native.exports.pool(
                address(x, x.size), 0, x.shape[0] * oh, address(shape, 13, I32), int(average), address(y, y.size)
            )
        return y

    return kernel


def _max_pool_grad(dy, x, y, ksize, strides, pad):
    if dy.dtype != F32 or x.dtype != F32 or y.dtype != F32 or 0 in x.shape:
        return numpy_nn.max_pool_grad(dy, x, y, ksize, strides, pad)
    dy, x, y = native.f32(dy), native.f32(x), native.f32(y)
    shape, _, _ = _geometry(x.shape, ksize, strides, pad)
    images, dx = x.shape[0], native.out(x.shape)
    work = dy.size * ksize[0] * ksize[1] * MAX_POOL_GRAD_TAP
    pool = threads.worth(work, dy, x, y, out=(dx,)) if images > 1 else None  # split by images
    arrays = (dy, x, y)
    if pool and threads.images_kernel(pool, "max_pool_grad", images, arrays, shape, None, dx, zeroed=True) is not None:
        return dx
    native.exports.max_pool_grad(  # it zeroes dx itself
        address(dy, dy.size),
        address(x, x.size),
        address(y, y.size),
        x.shape[0],
        address(shape, 13, I32),
        address(dx, dx.size),
    )
    return dx


register_kernel("Conv2D", "wasm", _conv2d)
register_kernel("Conv2DBackpropInput", "wasm", _conv2d_backprop_input)
register_kernel("Conv2DBackpropFilter", "wasm", _conv2d_backprop_filter)
register_kernel("DepthwiseConv2dNative", "wasm", _depthwise)
register_kernel("DepthwiseConv2dNativeBackpropInput", "wasm", _depthwise_backprop_input)
register_kernel("DepthwiseConv2dNativeBackpropFilter", "wasm", _depthwise_backprop_filter)
register_kernel("MaxPool", "wasm", _pool(average=False))
register_kernel("AvgPool", "wasm", _pool(average=True))
register_kernel("MaxPoolGrad", "wasm", _max_pool_grad)
