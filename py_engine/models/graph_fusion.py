"""A static plan's elementwise chains as one step: the nodes of a chain such as MobileNetV3's hard-swish
(x * (1/6) * relu6(x + 3): Add, Relu6, Mul, Mul) run as one FusedElementwise kernel (ops.elementwise_rules), one pass
over memory on wasm and one dispatch on webgpu instead of one per node, with the values of the nodes run one at a
time, bit for bit.

A chain is a tree of float32 nodes of the ops in RULES whose inputs are one tensor (the same one wherever it is read)
and scalar float32 constants; each of its nodes but the last is read by the next node of the chain alone, so no other
node sees its value. The chain runs where its last node ran (every node of the chain comes before it in the plan's order).
"""

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..io.graph_format import engine_dtype, tensor_name
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
    result = []
    for node in steps:
        nodes, tensor, scalars = chains.get(node.name, ((node,), None, ()))
        if node.name in taken:
            continue
        if len(nodes) < 2:
            result.append(node)
        else:
            values = [host_values[model.weight(tensor_name(s)[0]).id] for s in scalars]
            result.append(FusedChain(list(nodes), tensor, list(scalars), values))
    return result


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
