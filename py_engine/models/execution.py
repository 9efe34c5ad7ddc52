"""Running a model's graph: steps in order, each intermediate released right after its last use."""

from collections import Counter

from ..engine import ENGINE


class Step:
    """fn(inputs) -> tensor, where inputs are the values of `inputs` (a list for merge layers, else one)."""

    __slots__ = ("fn", "inputs", "list_input", "output")

    def __init__(self, fn, inputs, list_input, output):
        self.fn, self.inputs, self.list_input, self.output = fn, list(inputs), list_input, output


def layer_steps(nodes, training=False):
    """One step per layer call of the graph (input layers have nothing to run)."""
    return [
        Step(
            lambda x, layer=node.layer: layer.call(x, training=training), node.inputs, node.list_input, node.outputs[0]
        )
        for node in nodes
        if node.inputs
    ]


def execute(steps, input_symbols, inputs, output_symbols):
    """The output tensors of `steps` run on `inputs` (tensors for `input_symbols`).

    An intermediate is disposed as soon as no later step needs it, so a forward pass holds a few
    activations at a time, not all of them; the inputs are the caller's and are never disposed.
    """
    uses = Counter(id(s) for step in steps for s in step.inputs)
    uses.update(id(s) for s in output_symbols)
    values = {id(s): t for s, t in zip(input_symbols, inputs)}
    holders = Counter(t.id for t in values.values())  # one tensor may be the value of several symbols
    callers = {t.id for t in inputs}
    for step in steps:
        args = [values[id(s)] for s in step.inputs]
        out = step.fn(args if step.list_input else args[0])
        values[id(step.output)] = out
        holders[out.id] += 1
        for s in step.inputs:
            uses[id(s)] -= 1
            if uses[id(s)] == 0:
                t = values.pop(id(s))
                holders[t.id] -= 1
                if holders[t.id] == 0 and t.id not in callers:
                    t.dispose()
    outputs, seen = [], set()
    for s in output_symbols:
        t = values[id(s)]
        if t.id in callers or t.id in seen:  # the caller may dispose each result without touching its inputs
            t = ENGINE.view(t, t.shape)
        seen.add(t.id)
        outputs.append(t)
    return outputs
