"""Gradients of the ops in py_engine/ops/fused.py: through the convolutions' own backprop kernels, so models built
from layers stay differentiable."""

import numpy as np

from ...engine import ENGINE
from ...kernel_registry import register_gradient
from ..math import activation_grad, add, mul, relu6
from ..reduce import sum as reduce_sum


def _hard_swish_grad(dy, z, scale):
    """dy through (z * scale) * relu6(z + 3) at its input z: the tape's sum over its two factors' paths."""
    scale = np.float32(scale)
    r = relu6(add(z, np.float32(3)))
    return add(mul(mul(dy, r), scale), activation_grad(mul(dy, mul(z, scale)), r, "relu6"))


def _fused_gradient(kernel, conv_kernel):
    def gradient(dy, ins, outs, attrs):
        x, w = ins[:2]
        if attrs["activation"] == "hard_swish":  # its derivative is no function of its output: of the sum's
            linear = {key: value for key, value in attrs.items() if key != "hard_swish_scale"}
            z = ENGINE.run_kernel(kernel, ins, {**linear, "activation": "linear"})
            dz = _hard_swish_grad(dy, z, attrs["hard_swish_scale"])
        elif attrs["activation"] == "linear":
            dz = dy
        else:  # the others' derivatives are functions of their output
            dz = activation_grad(dy, outs[0], attrs["activation"])
        conv = {"strides": attrs["strides"], "pad": attrs["pad"], "dilations": attrs["dilations"]}

        # each only when needed (the tape calls them): the first layer's input, the data, needs no gradient
        def dx():
            return ENGINE.run_kernel(f"{conv_kernel}BackpropInput", (dz, w), {**conv, "input_shape": x.shape})

        def dfilter():
            return ENGINE.run_kernel(f"{conv_kernel}BackpropFilter", (x, dz), {**conv, "filter_shape": w.shape})

        return (dx, dfilter) if len(ins) == 2 else (dx, dfilter, reduce_sum(dz, (0, 1, 2)))

    return gradient


register_gradient("FusedConv2D", _fused_gradient("FusedConv2D", "Conv2D"))
register_gradient("FusedDepthwiseConv2D", _fused_gradient("FusedDepthwiseConv2D", "DepthwiseConv2dNative"))
