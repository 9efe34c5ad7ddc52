"""Running one node of a graph model and collecting a run's outputs: what the static executor (graph_model.py) and
the one with control flow (graph_control.py) share."""

from ..engine import ENGINE
from ..io.graph_format import tensor_name
from ..tensor import Tensor
from .graph_ops import OPS, Call


def run_node(model, node, args, host_values):
    """A node's outputs (a list) from its input values."""
    return run_op(node, OPS[node.op].run, args, host_values)


def run_op(node, run, args, host_values):
    """A node's outputs (a list) from its input values, `run` being its op's (OPS[node.op].run)."""
    try:
        result = ENGINE.tidy(run, Call(node, args, host_values))
    except Exception as e:
        e.add_note(f"in node {node.name!r} ({node.op}) of the graph model")
        raise
    return list(result) if isinstance(result, (list, tuple)) else [result]


def node_value(model, values, name):
    """The value of tensor `name` in a run: what the run made, else the model's weight of that name."""
    value = values.get(name)
    if value is None:
        return model.weight(tensor_name(name)[0])
    return value


def finish(model, values, outputs, callers):
    """The output tensors: each a tensor of its own (a view where an output is an input, a weight or another
    output), so the caller may dispose each. A TensorList (a library function's output) stays itself."""
    results, seen = [], {t.id for t in callers}
    for name in outputs:
        t = node_value(model, values, name)
        if isinstance(t, Tensor) and (t.id in seen or t.kept):
            t = ENGINE.view(t, t.shape)
        seen.add(t.id)
        results.append(t)
    return results
