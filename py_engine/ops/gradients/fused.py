"""Gradients of the ops in py_engine/ops/fused.py: through the convolutions' own backprop kernels, so models built
from layers stay differentiable."""

from ...engine import ENGINE
from ...kernel_registry import register_gradient
from ..math import activation_grad
from ..reduce import sum as reduce_sum


def _fused_gradient(conv_kernel):
    def gradient(dy, ins, outs, attrs):
        x, w = ins[:2]
        # every fused activation's derivative is a function of its output
        dz = dy if attrs["activation"] == "linear" else activation_grad(dy, outs[0], attrs["activation"])
        conv = {"strides": attrs["strides"], "pad": attrs["pad"], "dilations": attrs["dilations"]}

        # each only when needed (the tape calls them): the first layer's input, the data, needs no gradient
        def dx():
            return ENGINE.run_kernel(f"{conv_kernel}BackpropInput", (dz, w), {**conv, "input_shape": x.shape})

        def dfilter():
            return ENGINE.run_kernel(f"{conv_kernel}BackpropFilter", (x, dz), {**conv, "filter_shape": w.shape})

        return (dx, dfilter) if len(ins) == 2 else (dx, dfilter, reduce_sum(dz, (0, 1, 2)))

    return gradient


register_gradient("FusedConv2D", _fused_gradient("Conv2D"))
register_gradient("FusedDepthwiseConv2D", _fused_gradient("DepthwiseConv2dNative"))
