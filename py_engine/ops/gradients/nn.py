"""Gradients of the ops in py_engine/ops/nn.py."""

from ...engine import ENGINE
from ...kernel_registry import register_gradient


def _conv_gradient(kernel):
    def gradient(dy, ins, outs, attrs):
        x, filter = ins
        # each only when needed: the first layer's input (the data) needs no gradient
        return (
            lambda: ENGINE.run_kernel(f"{kernel}BackpropInput", (dy, filter), {**attrs, "input_shape": x.shape}),
            lambda: ENGINE.run_kernel(f"{kernel}BackpropFilter", (x, dy), {**attrs, "filter_shape": filter.shape}),
        )

    register_gradient(kernel, gradient)


_conv_gradient("Conv2D")
_conv_gradient("DepthwiseConv2dNative")
register_gradient(
    "MaxPool", lambda dy, ins, outs, attrs: ENGINE.run_kernel("MaxPoolGrad", (dy, ins[0], outs[0]), attrs)
)
register_gradient(
    "AvgPool",
    lambda dy, ins, outs, attrs: ENGINE.run_kernel("AvgPoolGrad", (dy,), {**attrs, "input_shape": ins[0].shape}),
)


# conv2d_transpose runs Conv2DBackpropInput forwards: its gradients are a convolution and a filter gradient
def _conv2d_transpose_gradient(dy, ins, outs, attrs):
    x, kernel = ins
    conv = {key: attrs[key] for key in ("strides", "pad", "dilations")}
    return (
        lambda: ENGINE.run_kernel("Conv2D", (dy, kernel), conv),
        lambda: ENGINE.run_kernel("Conv2DBackpropFilter", (dy, x), {**conv, "filter_shape": kernel.shape}),
    )


register_gradient("Conv2DBackpropInput", _conv2d_transpose_gradient)
