"""Running a model's graph: steps in order, each intermediate released right after its last use.

Masks travel with the values (as TF.js's executor runs them): a step whose layer supports masking gets the masks of
its inputs and gives its outputs the masks its compute_mask returns; any other step drops them.
"""

from collections import Counter

from ..engine import ENGINE


class Step:
    """fn(inputs) -> tensor (a list for several outputs), where inputs are the values of `inputs` (a list for merge
    layers, else one); a step of `layer` is called fn(inputs, mask) when its inputs carry a mask."""

    __slots__ = ("fn", "inputs", "layer", "list_input", "outputs")

    def __init__(self, fn, inputs, list_input, output, layer=None):
        self.fn, self.inputs, self.list_input = fn, list(inputs), list_input
        self.outputs = list(output) if isinstance(output, (list, tuple)) else [output]
        self.layer = layer


def layer_steps(nodes, training=False):
    """One step per layer call of the graph (input layers have nothing to run)."""
    return [
        Step(
            lambda x, mask=None, layer=node.layer: layer.call_masked(x, training, mask),
            node.inputs,
            node.list_input,
            node.outputs,
            node.layer,
        )
        for node in nodes
        if node.inputs
    ]


def _as_list(value, n):
    return list(value) if n > 1 else [value]


def execute(steps, input_symbols, inputs, output_symbols):
    """The output tensors of `steps` run on `inputs` (tensors for `input_symbols`).

    An intermediate (and its mask) is disposed as soon as no later step needs it, so a forward pass holds a few
    activations at a time, not all of them; the inputs are the caller's and are never disposed.
    """
    uses = Counter(id(s) for step in steps for s in step.inputs)
    uses.update(id(s) for s in output_symbols)
    values = {id(s): t for s, t in zip(input_symbols, inputs)}
    masks = {}  # id(symbol) -> its mask, for the symbols that carry one
    holders = Counter(t.id for t in values.values())  # one tensor may be the value or mask of several symbols
    callers = {t.id for t in inputs}

    def release(t):
        holders[t.id] -= 1
        if holders[t.id] == 0 and t.id not in callers:
            t.dispose()

    for step in steps:
        args = [values[id(s)] for s in step.inputs]
        arg = args if step.list_input else args[0]
        layer = step.layer
        mask = None
        if layer is not None and layer.supports_masking:
            given = [masks.get(id(s)) for s in step.inputs]
            if any(m is not None for m in given):
                mask = given if step.list_input else given[0]
        n = len(step.outputs)
        outs = _as_list(step.fn(arg) if mask is None else step.fn(arg, mask), n)
        out_masks = [None] * n
        if layer is not None and layer.supports_masking:
            out_masks = _as_list(layer.compute_mask(arg, mask), n)
        for s, t, m in zip(step.outputs, outs, out_masks):
            values[id(s)] = t
            holders[t.id] += 1
            if m is not None:
                masks[id(s)] = m
                holders[m.id] += 1
        for s in step.inputs:
            uses[id(s)] -= 1
            if uses[id(s)] == 0:
                release(values.pop(id(s)))
                if id(s) in masks:
                    release(masks.pop(id(s)))
        for s in step.outputs:  # an output nothing uses (a state a model does not return)
            if not uses[id(s)]:
                release(values.pop(id(s)))
                if id(s) in masks:
                    release(masks.pop(id(s)))
    outputs, seen = [], set()
    for s in output_symbols:
        t = values[id(s)]
        if t.id in callers or t.id in seen:  # the caller may dispose each result without touching its inputs
            t = ENGINE.view(t, t.shape)
        seen.add(t.id)
        outputs.append(t)
    for m in list(masks.values()):  # the outputs' masks: a model returns values only
        if m.id not in seen:
            release(m)
    return outputs
