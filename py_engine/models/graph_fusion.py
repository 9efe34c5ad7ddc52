"""A static plan's elementwise chains as one step: the nodes of a chain such as MobileNetV3's hard-swish
(x * (1/6) * relu6(x + 3): Add, Relu6, Mul, Mul) run as one FusedElementwise kernel (ops.elementwise_rules), one pass
over memory on wasm and one dispatch on webgpu instead of one per node, with the values of the nodes run one at a
time, bit for bit.

A chain is a tree of float32 nodes of the ops in RULES whose inputs are one tensor (the same one wherever it is read)
and scalar float32 constants; each of its nodes but the last is read by the next node of the chain alone, so no other
node sees its value. The chain runs where its last node ran (every node of the chain comes before it in the plan's order).

A hard-swish chain whose tensor is a fused convolution's (conv + bias, no activation) that no other node reads goes
into the convolution itself: the convolution with activation hard_swish (ops.fused), which applies it to each output
as it is stored, the same operations in the same order, so the same values, without a pass over memory.
"""

import dataclasses

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..io.graph_format import NodeDef, engine_dtype, tensor_name
from ..ops import elementwise_rules as rules

# graph op -> its step in a rule, on traced values
RULES = {
    "Add": lambda a, b: a + b,
    "AddV2": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "RealDiv": lambda a, b: a / b,
    "Maximum": rules.maximum,
    "Minimum": rules.minimum,
    "Neg": lambda a: -a,
    "Sqrt": rules.sqrt,
    "Square": rules.square,
    "Abs": rules.abs,
    "Relu": rules.relu,
    "Relu6": rules.relu6,
}


class FusedChain:
    """One step of a plan standing for a chain of nodes: named as the chain's last node (its output is that node's),
    reading the chain's tensor and its scalar constants (`inputs`), running them as one rule (`run`)."""

    def __init__(self, nodes, tensor, scalars, values):
        self.nodes, self.name, self.control, self.attrs = nodes, nodes[-1].name, [], {}
        self.op = "+".join(node.op for node in nodes)  # what an error's note names: "Add+Relu6+Mul+Mul"
        self.inputs = [tensor, *scalars]
        self._values = np.array(values, np.float32)
        # each step's operands: an argument of the rule (0: the tensor, 1...: the scalars) or an earlier step's value
        slots = {name: ("argument", k) for k, name in enumerate(self.inputs)}
        slots.update({f"{node.name}:0": ("step", k) for k, node in enumerate(nodes)})
        steps = [(RULES[node.op], [slots[name] for name in node.inputs]) for node in nodes]

        def rule(*arguments):
            computed = []
            for fn, operands in steps:
                computed.append(fn(*(arguments[k] if kind == "argument" else computed[k] for kind, k in operands)))
            return computed[-1]

        rule.__name__ = rule.__qualname__ = self.op
        self._rule = rule

    def run(self, c):
        # the scalars as the rule's vector: a tensor of the run's (so nothing outlives it)
        scalars = ENGINE.from_numpy(self._values.copy(), dtypes.float32) if self._values.size else None
        return rules.fuse_elementwise(self._rule, [c.x(0)], scalars)[0]


def fuse_chains(steps, model, outputs):
    """The plan's steps (nodes in order) with each elementwise chain of two nodes or more replaced by a FusedChain,
    at the position of its last node. `outputs`: the tensors the run returns (never hidden inside a chain)."""
    readers = {}
    for node in steps:
        for name in node.inputs:
            readers.setdefault(name, set()).add(node.name)
    controlled = {name for node in steps for name in node.control}
    host_values = model.host_values()
    scalar = {}  # tensor name -> whether it is a float32 Const of shape ()
    for node in steps:
        for name in node.inputs:
            producer = model.nodes[model.producers[name]]
            if producer.op == "Const":
                weight = model.weight(producer.name)
                scalar[name] = weight.dtype == dtypes.float32 and weight.shape == () and weight.id in host_values
    chains, taken = {}, set()  # node name -> (its chain's nodes, tensor, scalars); the nodes inside a later chain
    for node in steps:
        if node.op not in RULES or engine_dtype(node.attrs.get("T")) != dtypes.float32 or node.control:
            continue
        chain, producers = _chain(node, chains, readers, controlled, outputs, scalar)
        if chain is not None:
            chains[node.name] = chain
            taken.update(producers)

    def value(name):
        return host_values[model.weight(tensor_name(name)[0]).id]

    # hard-swish chains taken into their convolution: the convolution's name -> the chain's last node
    producers = {node.name: node for node in steps}
    into_conv, scales = {}, {}
    for name, (nodes, tensor, scalars) in chains.items():
        conv = producers.get(tensor_name(tensor)[0])
        scale = _hard_swish_scale(nodes, tensor, {s: value(s) for s in scalars})
        if (
            name not in taken
            and scale is not None
            and _linear_fused_conv(conv)
            and tensor.endswith(":0")
            and readers[tensor] <= {node.name for node in nodes}
            and tensor not in outputs
            and conv.name not in controlled
        ):
            into_conv[conv.name], scales[conv.name] = nodes[-1], scale
    convs = {into_conv[name].name: node for name, node in producers.items() if name in into_conv}
    result = []
    for node in steps:
        nodes, tensor, scalars = chains.get(node.name, ((node,), None, ()))
        if node.name in taken or node.name in into_conv:
            continue
        if node.name in convs:  # the convolution, named as the chain's last node, whose output it now makes
            conv = convs[node.name]
            attrs = {**conv.attrs, "fused_ops": ["BiasAdd", "HardSwish"], "hard_swish_scale": scales[conv.name]}
            result.append(dataclasses.replace(conv, name=node.name, attrs=attrs))
        elif len(nodes) < 2:
            result.append(node)
        else:
            result.append(FusedChain(list(nodes), tensor, list(scalars), [value(s) for s in scalars]))
    return result


def _linear_fused_conv(node):
    """Whether node is a convolution plus a bias and no activation, which an activation can join."""
    return (
        isinstance(node, NodeDef)
        and node.op in ("_FusedConv2D", "FusedDepthwiseConv2dNative")
        and [op.lower() for op in node.attrs.get("fused_ops", [])] == ["biasadd"]
        and engine_dtype(node.attrs.get("T")) == dtypes.float32
    )


def _hard_swish_scale(nodes, tensor, scalars):
    """s where a chain is (tensor * s) * relu6(tensor + 3) (either operand first in each Add and Mul: the order of
    operations of the fused activation hard_swish), else None. `scalars`: {name: value} of its constants."""
    if len(nodes) != 4 or nodes[-1].op != "Mul":
        return None
    made = {f"{node.name}:0": node for node in nodes}
    if any(name not in made for name in nodes[-1].inputs):
        return None
    by_op = {made[name].op: made[name] for name in nodes[-1].inputs}
    scaled, relu = by_op.get("Mul"), by_op.get("Relu6")
    shifted = made.get(relu.inputs[0]) if relu is not None else None
    if scaled is None or shifted is None or shifted.op not in ("Add", "AddV2"):
        return None
    scale, three = _constant(scaled, tensor, scalars), _constant(shifted, tensor, scalars)
    return float(scale) if scale is not None and three == 3 else None


def _constant(node, tensor, scalars):
    """The scalar constant a binary node reads besides the tensor, or None."""
    others = [name for name in node.inputs if name != tensor]
    if len(node.inputs) != 2 or len(others) != 1 or others[0] not in scalars:
        return None
    return scalars[others[0]]


def _chain(node, chains, readers, controlled, outputs, scalar):
    """(the chain ending at `node`: its nodes in plan order, its tensor, its scalar constants; the producers whose
    chains it took in), or (None, ()) where it cannot be one. A producer's chain is taken in when this node alone
    reads it; where the chains taken in and the node's other inputs read more than one tensor, there is none."""
    scalars = [name for name in node.inputs if scalar.get(name)]
    own = list(dict.fromkeys(name for name in node.inputs if not scalar.get(name)))
    merged, tensors, producers = [], set(), []
    for name in own:
        producer = tensor_name(name)[0]
        chain = chains.get(producer)
        if (
            chain is None
            or not name.endswith(":0")
            or readers[name] != {node.name}
            or name in outputs
            or producer in controlled
        ):
            tensors.add(name)
            continue
        merged += chain[0]
        tensors.add(chain[1])
        scalars += [s for s in chain[2] if s not in scalars]
        producers.append(producer)
    if len(tensors) != 1:
        return None, ()
    return ([*merged, node], tensors.pop(), scalars), producers
