"""A static plan's GatherNd of pointwise convolutions' output, computed on the gathered pixels alone.

A pose model's heads read a few pixels of a whole map: movenet-lightning's keypoint regression and offset heads each
run two 1x1 convolutions over its 48x48 map (24 -> 96 -> 34 channels), of which a GatherNd then keeps 1 and 17
pixels. A 1x1 convolution reads each pixel's channels alone, so gathering first and convolving the gathered pixels
gives the same values: the same fused convolution (bias, activation) on a [1, 1, pixels, channels] tensor, whose sums
run in the same order whatever the pixels' count on wasm and webgpu (bit for bit there; numpy's BLAS blocks its sums
by the matrices' sizes: float32 rounding).

The chain is each 1x1 convolution (a `_FusedConv2D` of stride and dilation 1, not padded, NHWC) that the GatherNd or
the chain's next convolution alone reads, its output neither returned nor a control input. Where the indices reach
into the channels (their last dimension is the map's rank), the run convolves the whole map and gathers after, as
the graph says.
"""

import math

from .. import ops
from ..io.graph_format import NodeDef, tensor_name
from .graph_ops import OPS, Call


class SunkGather:
    """One step of a plan standing for a GatherNd and the pointwise convolutions before it: named as the GatherNd,
    reading the first convolution's input, the indices and the convolutions' weights (`inputs`)."""

    def __init__(self, gather, convs):
        self.convs, self.name, self.control, self.attrs = convs, gather.name, [], {}
        self.op = "+".join([*(conv.op for conv in convs), gather.op])  # what an error's note names
        self.inputs = [convs[0].inputs[0], gather.inputs[1], *(name for conv in convs for name in conv.inputs[1:])]

    def run(self, c):
        x, indices, weights = c.x(0), c.x(1), c.inputs[2:]
        if indices.shape[-1] >= x.ndim:  # the indices pick channels too: the graph's order
            for conv, args in self._each(weights):
                x = OPS[conv.op].run(Call(conv, [x, *args], c.host_values))
            return ops.gather_nd(x, indices)
        pixels = ops.gather_nd(x, indices)
        shape = pixels.shape[:-1]
        y = pixels.reshape((1, 1, math.prod(shape), pixels.shape[-1]))
        for conv, args in self._each(weights):
            y = OPS[conv.op].run(Call(conv, [y, *args], c.host_values))
        return y.reshape((*shape, y.shape[-1]))

    def _each(self, weights):
        """(convolution, its weight tensors) in the chain's order."""
        at = 0
        for conv in self.convs:
            count = len(conv.inputs) - 1
            yield conv, weights[at : at + count]
            at += count


def sink_gathers(steps, model, outputs):
    """The plan's steps (in order) with each GatherNd of a chain of pointwise convolutions replaced by a SunkGather at
    the GatherNd's position, the chain's convolutions gone. `outputs`: the tensors the run returns."""
    readers = {}
    for node in steps:
        for name in node.inputs:
            readers.setdefault(name, set()).add(node.name)
    controlled = {name for node in steps for name in node.control}
    producers = {node.name: node for node in steps}
    sunk, taken = {}, set()
    for node in steps:
        if node.op != "GatherNd" or node.control:
            continue
        convs, reader, params = [], node.name, node.inputs[0]
        while True:
            conv = producers.get(tensor_name(params)[0])
            if (
                not _pointwise(conv, model)
                or not params.endswith(":0")
                or readers[params] != {reader}
                or params in outputs
                or conv.name in controlled
            ):
                break
            convs.insert(0, conv)
            reader, params = conv.name, conv.inputs[0]
        if convs:
            sunk[node.name] = SunkGather(node, convs)
            taken.update(conv.name for conv in convs)
    return [sunk.get(node.name, node) for node in steps if node.name not in taken]


def _pointwise(node, model):
    """Whether node is a 1x1 convolution that reads each pixel alone: stride and dilation 1, no padding, NHWC, its
    filter a weight."""
    if not isinstance(node, NodeDef) or node.op != "_FusedConv2D" or node.control:
        return False
    attrs = node.attrs
    if any(attrs.get(key, [1, 1, 1, 1]) != [1, 1, 1, 1] for key in ("strides", "dilations")):
        return False
    if attrs.get("padding", "VALID") not in ("VALID", "SAME") or attrs.get("data_format", "NHWC") != "NHWC":
        return False
    producer = model.nodes.get(model.producers[node.inputs[1]]) if len(node.inputs) > 1 else None
    return producer is not None and producer.op == "Const" and tuple(model.weight(producer.name).shape[:2]) == (1, 1)
