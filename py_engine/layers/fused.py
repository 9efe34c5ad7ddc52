"""Fused convolutions: conv2d or depthwise_conv2d, plus a bias, plus an activation, as one kernel.

What a Conv2D layer (and a BatchNormalization folded into it) runs: one dispatch instead of three.
Kernels "FusedConv2D" and "FusedDepthwiseConv2D" take (x, filter) or (x, filter, bias) and the attrs
of Conv2D (strides, pad, dilations) plus `activation`, one of ACTIVATIONS. Their gradients go through
the convolutions' own backprop kernels, so models built from layers stay differentiable.
"""

from ..autograd import register_gradient
from ..engine import ENGINE
from ..errors import ShapeError
from ..ops.convert import release
from ..ops.math import activation_grad
from ..ops.nn import batched, conv_inputs, float_input
from ..ops.reduce import sum as reduce_sum

# Elementwise activations a fused kernel applies to each output (each backend maps "relu" to its Relu, ...).
ACTIVATIONS = ("linear", "relu", "relu6", "sigmoid", "tanh", "elu", "softplus")


def _fused(op, kernel, depthwise, x, w, bias, activation, strides, padding, dilations):
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: activation must be one of {', '.join(ACTIVATIONS)}; got {activation!r}")
    layout = "h, w, in, multiplier" if depthwise else "h, w, in, out"
    temps = []
    try:
        x, w, attrs = conv_inputs(op, layout, x, w, strides, padding, dilations, temps)
        weights = [w]
        if bias is not None:
            bias = float_input(op, bias, temps, "bias")
            channels = w.shape[2] * w.shape[3] if depthwise else w.shape[3]
            if bias.shape != (channels,):
                raise ShapeError(f"{op}: bias has shape {bias.shape}; expected ({channels},), one per output channel")
            weights.append(bias)
        attrs["activation"] = activation
        return batched(x, lambda batch: ENGINE.run_kernel(kernel, (batch, *weights), attrs))
    finally:
        release(temps)


def fused_conv2d(x, filter, bias=None, activation="linear", strides=1, padding="valid", dilations=1):  # noqa: A002
    """activation(conv2d(x, filter) + bias) in one kernel; filter [h, w, in, out], bias [out] or None."""
    return _fused("fused_conv2d", "FusedConv2D", False, x, filter, bias, activation, strides, padding, dilations)


def fused_depthwise_conv2d(x, filter, bias=None, activation="linear", strides=1, padding="valid", dilations=1):  # noqa: A002
    """activation(depthwise_conv2d(x, filter) + bias) in one kernel; filter [h, w, in, multiplier], bias [in * multiplier]."""
    return _fused(
        "fused_depthwise_conv2d", "FusedDepthwiseConv2D", True, x, filter, bias, activation, strides, padding, dilations
    )


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
