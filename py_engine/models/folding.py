"""The inference plan predict() runs: BatchNormalization folded into the convolution before it, and the
activation after it fused in, so a conv + BN + ReLU6 block is one FusedConv2D/FusedDepthwiseConv2D kernel.
A ZeroPadding2D in front of a "valid" convolution becomes that convolution's explicit padding. A Dense layer on
vectors (a classifier's head after global pooling) runs as a fused 1x1 convolution: its bias and activation are
stored by the GEMM's epilogue, and a GPU compiles no pipeline for it beyond the convolutions' own.

Folding: with s = gamma / sqrt(moving_variance + epsilon), the folded kernel is kernel * s (per output
channel) and the folded bias (bias - moving_mean) * s + beta. They are computed once, on the active
backend, into variables the plan owns; the layers keep their own weights (what get_weights and save
see). The plan notices when a source weight has been assigned since and is then rebuilt.
"""

from ..engine import ENGINE
from ..engine.warmup import dry_running
from ..layers import activations
from ..layers.convolutional import Conv2D, DepthwiseConv2D, ZeroPadding2D
from ..layers.core import Dense
from ..layers.normalization import BatchNormalization
from ..ops import neg, reshape, rsqrt
from ..ops.fused import fused_conv2d
from .execution import Step, layer_steps


def _inference_step(node):
    """A layer that predicts differently from how it trains (a CRF decodes) says so with inference_call."""
    infer = getattr(node.layer, "inference_call", None)
    if infer is None:
        return None
    return Step(lambda x, mask=None: infer(x, mask), node.inputs, node.list_input, node.outputs, node.layer)


class InferencePlan:
    def __init__(self, model):
        nodes = [node for node in model.nodes if node.inputs]
        self.consumers = {}
        for node in nodes:
            for s in node.inputs:
                self.consumers.setdefault(id(s), []).append(node)
        self.outputs = {id(s) for s in model.outputs}
        self.steps, self.variables, self.sources, self.folded = [], [], [], 0
        # pe.warmup records shaders without running them: weights folded then are garbage, to be refolded
        self.dry = dry_running(ENGINE.active())
        absorbed, self.padding = set(), {}  # id(conv node) -> the ZeroPadding2D node whose padding it takes over
        for node in nodes:
            conv = self._sole_consumer(node.outputs[0])
            if (
                isinstance(node.layer, ZeroPadding2D)
                and conv
                and _is_conv(conv.layer)
                and conv.layer.padding == "valid"
            ):
                self.padding[id(conv)] = node
                absorbed.add(id(node))
        for node in nodes:
            if id(node) not in absorbed:
                step = self._fused(node, absorbed) if _is_conv(node.layer) else _dense_as_conv(node)
                self.steps.append(step or _inference_step(node) or layer_steps([node])[0])

    def _sole_consumer(self, symbol):
        """The one node that takes `symbol` as its only input, if nothing else (model outputs included) uses it."""
        nodes = self.consumers.get(id(symbol), [])
        if len(nodes) == 1 and id(symbol) not in self.outputs and len(nodes[0].inputs) == 1:
            return nodes[0]
        return None

    def _fused(self, node, absorbed):
        conv = node.layer
        activation, end, bn = conv.activation, node.outputs[0], None
        following = self._sole_consumer(end)
        if activation == "linear" and following is not None and isinstance(following.layer, BatchNormalization):
            bn, end = following.layer, following.outputs[0]
            absorbed.add(id(following))
            following = self._sole_consumer(end)
        fusable = getattr(following.layer, "fused_activation", None) if following is not None else None
        if activation == "linear" and fusable in activations.FUSABLE:
            activation, end = fusable, following.outputs[0]
            absorbed.add(id(following))
        pad = self.padding.get(id(node))
        if end is node.outputs[0] and pad is None:
            return None  # nothing to fuse: the layer's own (fused) call is as good
        kernel, bias = (conv.kernel, conv.bias) if bn is None else self._fold(conv, bn)
        inputs, padding = (node.inputs, conv.padding) if pad is None else (pad.inputs, pad.layer.padding)

        def run(x):
            return conv.fused_op(x, kernel, bias, activation, conv.strides, padding, conv.dilation_rate)

        return Step(run, inputs, False, end)

    def _fold(self, conv, bn):
        def folded():
            factor = rsqrt(bn.moving_variance + bn.epsilon)
            if bn.gamma is not None:
                factor = factor * bn.gamma
            shift = neg(bn.moving_mean) * factor if conv.bias is None else (conv.bias - bn.moving_mean) * factor
            if bn.beta is not None:
                shift = shift + bn.beta
            if isinstance(conv, DepthwiseConv2D):  # output channel c * multiplier + m scales kernel[..., c, m]
                factor = reshape(factor, conv.kernel.shape[2:])
            return conv.kernel * factor, shift

        values = ENGINE.tidy(folded)
        made = [
            ENGINE.variable(value, trainable=False, name=ENGINE.unused_variable_name(f"{conv.name}/folded_{what}"))
            for value, what in zip(values, ("kernel", "bias"))
        ]
        ENGINE.dispose(values)
        self.variables += made
        self.sources += [(v, v._buf) for v in conv.weights + bn.weights]
        self.folded += 1
        return made

    @property
    def stale(self):
        """True once a weight the folded ones came from has been assigned (set_weights, v.assign) or disposed,
        and after a warm-up (which only recorded the folding)."""
        return self.dry or any(v._buf is not buf for v, buf in self.sources)

    def release_sources(self):
        """Free the weights the folded variables were made from; returns them. Nothing can assign them any
        more, so the plan stops watching them (it is never stale again)."""
        if self.dry:
            raise RuntimeError("release_unfolded: the weights cannot be released during pe.warmup (a dry run)")
        released = [v for v, _ in self.sources]
        ENGINE.dispose(released)
        self.sources = []
        return released

    def dispose(self):
        ENGINE.dispose(self.variables)
        self.variables = []


def _dense_as_conv(node):
    """Dense on [batch, features] as activation(conv1x1(x, kernel) + bias), or None for other inputs. An
    activation the convolution cannot apply itself (softmax) follows it."""
    dense = node.layer
    if not isinstance(dense, Dense) or len(node.inputs[0].shape) != 2:
        return None
    fused = dense.activation if dense.activation in activations.FUSABLE else "linear"

    def run(x):
        (n, k), units = x.shape, dense.units
        filter_ = reshape(dense.kernel, (1, 1, k, units))  # views: no copy
        y = reshape(fused_conv2d(reshape(x, (n, 1, 1, k)), filter_, dense.bias, fused), (n, units))
        return y if fused == dense.activation else activations.apply(dense.activation, y)

    return Step(run, node.inputs, False, node.outputs[0])


def _is_conv(layer):
    return isinstance(layer, (Conv2D, DepthwiseConv2D))
