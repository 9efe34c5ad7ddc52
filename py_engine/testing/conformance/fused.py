"""Conformance cases: fused_conv2d and fused_depthwise_conv2d (FusedConv2D, FusedDepthwiseConv2D) and their gradients.

Every activation, with and without a bias, on the convolution geometries of nn.py (strides, dilations,
explicit padding, batch 0, many workgroups along rows and columns). Inputs span [-3, 3] so relu6 clips at both ends. FusedConv2D
cases also run as "...-tiled" (the real-GPU GEMM variant).
"""

from ...autograd import grads
from ...ops.fused import ACTIVATIONS, fused_conv2d, fused_depthwise_conv2d
from .case import FLOAT_EDGES, Case, rand, with_edges
from .linalg import both_variants
from .nn import GEOMETRIES, TOLERANCE, output_hw

LABELS = [
    "stride1-same",
    "explicit-pad-stride2-dilated",
    "1x1-stride2",
    "uneven-strides-dilations",
    "batch0",
    "large",
    "channels-in-fours",
    "1x1-rows-wrap",
]
GRADIENTS = [("stride1-same", "relu6", True), ("explicit-pad-stride2-dilated", "sigmoid", False)]


def _op(op, activation, with_bias, strides=1, padding="same", dilations=1):
    if with_bias:
        return lambda x, f, b: op(x, f, b, activation, strides, padding, dilations)
    return lambda x, f: op(x, f, None, activation, strides, padding, dilations)


def _grads(op, activation, with_bias, strides, padding, dilations):
    """Gradients of sum(op(...) * w) with respect to x, the filter and the bias (w: a different weight per output)."""
    if with_bias:
        fn = grads(lambda x, f, b, w: (op(x, f, b, activation, strides, padding, dilations) * w).sum())
        return lambda x, f, b, w: tuple(fn(x, f, b, w))
    fn = grads(lambda x, f, w: (op(x, f, None, activation, strides, padding, dilations) * w).sum())
    return lambda x, f, w: tuple(fn(x, f, w))


def _cases(name, op, depthwise, seed):
    def arrays(label, k, with_bias):
        x_shape, window, *_ = GEOMETRIES[label]
        channels = x_shape[-1]
        # "large": 70 output channels need several workgroups along the GEMM's columns too
        mult = 1 if label == "channels-in-fours" else 2  # depthwise: multiplier 1 takes the 4-channel shader
        out_channels = channels * mult if depthwise else 70 if label == "large" else 5
        f_shape = (*window, channels, mult if depthwise else out_channels)
        bias = [rand((out_channels,), seed + 100 + k, -1, 1)] if with_bias else []
        return [rand(x_shape, seed + k, -3, 3), rand(f_shape, seed + 50 + k, -1, 1), *bias], out_channels

    cases = []
    for k, label in enumerate(LABELS):  # each geometry, with a bias, with the activations in turn
        activation = ACTIVATIONS[k % len(ACTIVATIONS)]
        inputs, _ = arrays(label, k, True)
        _, _, strides, padding, dilations = GEOMETRIES[label]
        cases.append(
            Case(f"{name}/{label}-{activation}", _op(op, activation, True, strides, padding, dilations), inputs)
        )
    for k, activation in enumerate(ACTIVATIONS):  # every activation, with and without a bias
        with_bias = k % 2 == 0
        inputs, _ = arrays("stride1-same", 10 + k, with_bias)
        label = f"{activation}-{'bias' if with_bias else 'no-bias'}"
        cases.append(Case(f"{name}/{label}", _op(op, activation, with_bias), inputs))
    for k, (label, activation, with_bias) in enumerate(GRADIENTS):
        inputs, out_channels = arrays(label, 20 + k, with_bias)
        x_shape, window, strides, padding, dilations = GEOMETRIES[label]
        w = rand((x_shape[0], *output_hw(x_shape, window, strides, padding, dilations), out_channels), seed + 90 + k)
        fn = _grads(op, activation, with_bias, strides, padding, dilations)
        cases.append(Case(f"{name}/grad-{label}-{activation}", fn, [*inputs, w]))
    for k, activation in enumerate(ACTIVATIONS):  # NaN, the infinities and signed zeros through each activation
        inputs, _ = arrays("stride1-same", 30 + k, True)
        inputs[0] = with_edges(inputs[0], FLOAT_EDGES, k)
        cases.append(Case(f"{name}/special-values-{activation}", _op(op, activation, True), inputs))
    image, f = rand((6, 5, 3), seed + 200, -3, 3), rand((3, 3, 3, 2), seed + 201, -1, 1)
    bias = rand((6 if depthwise else 2,), seed + 202)
    cases.append(Case(f"{name}/single-image", _op(op, "relu", True), [image, f, bias]))
    return [Case(c.id, c.fn, c.inputs, **TOLERANCE) for c in cases]


CASES = both_variants(_cases("fused_conv2d", fused_conv2d, False, 3000)) + _cases(
    "fused_depthwise_conv2d", fused_depthwise_conv2d, True, 4000
)
