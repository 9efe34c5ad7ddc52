"""Running a graph with control flow (GraphModel.execute_async), as TF.js's executeAsync does.

TensorFlow's while loops are frames: Enter moves a value into a frame (iteration 0), Merge takes whichever of its
inputs arrived (the Enter at iteration 0, the NextIteration after), Switch sends its value to output 1 or 0 as its
predicate says (the other is dead: nothing downstream of it runs), NextIteration moves a value to the next iteration
and Exit out of the frame. A value is kept per context: the frames it is in with their iteration numbers. A node runs
in a context once all its inputs (control inputs too, as in TF.js) have a value there, a Merge once any has; a
constant Enter's value serves every iteration. TensorLists are Python objects holding tensors (TensorList below).

Intermediates are released after their last consumer in their context; whatever a dead branch or a loop leaves is
released by the run's scope (GraphModel.execute_async).
"""

import asyncio

import numpy as np

from .. import ops
from ..engine import ENGINE
from ..io.graph_format import engine_dtype, tensor_name
from .graph_nodes import finish, run_node
from .graph_ops import FUNCTION_OPS, LIST_OPS, Call

ROOT = ()  # the context outside every frame


class TensorList:
    """A TensorList's tensors (None where nothing was set yet), element shape and dtype."""

    def __init__(self, items, element_shape, dtype):
        self.items, self.element_shape, self.dtype = items, element_shape, dtype

    @property
    def id(self):  # values are looked up and released by id
        return id(self)

    kept = False


def tensors_in(value):
    """The tensors a value of a run holds: a tensor itself, a TensorList its items."""
    if isinstance(value, TensorList):
        return [t for t in value.items if t is not None]
    return [value]


def _view(x):
    return x if isinstance(x, TensorList) else ENGINE.view(x, x.shape)


def _element_shape(value):
    shape = [int(v) for v in np.asarray(value).reshape(-1)]
    return None if shape == [-1] else shape


def _index(host, i):
    return int(np.asarray(host(i)).reshape(-1)[0])


def _stacked(tensor_list, items, dtype_attr):
    """The items stacked on a new first axis (unset ones zeros of the element shape)."""
    if not items:
        return ops.zeros([0, *(tensor_list.element_shape or [])], tensor_list.dtype or dtype_attr or "float32")
    return ops.stack(
        [t if t is not None else ops.zeros(tensor_list.element_shape, tensor_list.dtype) for t in items], 0
    )


def _list_op(node, args, host):
    """The outputs of a TensorList op (TF.js's tensor_list.ts, op for op)."""
    op, dtype = node.op, engine_dtype(node.attrs.get("element_dtype"))
    if op == "TensorArrayV3":  # (handle, flow): the flow only orders the array's ops
        shape = node.attrs.get("element_shape")
        array = TensorList([None] * _index(host, 0), shape, engine_dtype(node.attrs.get("dtype")))
        return [array, ops.scalar(1.0)]
    if op == "TensorListReserve":
        return [TensorList([None] * _index(host, 1), _element_shape(host(0)), dtype)]
    if op == "EmptyTensorList":
        return [TensorList([], _element_shape(host(0)), dtype)]
    if op == "TensorListFromTensor":
        items = ops.unstack(args[0], 0) if args[0].shape[0] else []
        return [TensorList(items, _element_shape(host(1)), args[0].dtype)]
    if op in ("TensorListScatter", "TensorListScatterV2"):
        indices = [int(i) for i in np.asarray(host(1)).reshape(-1)]
        size = _index(host, 3) if op == "TensorListScatterV2" and _index(host, 3) >= 0 else max(indices, default=-1) + 1
        items = [None] * size
        for i, item in zip(indices, ops.unstack(args[0], 0) if indices else []):
            items[i] = item
        return [TensorList(items, _element_shape(host(2)), args[0].dtype)]
    if op == "TensorListSplit":
        lengths, at, items = [int(n) for n in np.asarray(host(2)).reshape(-1)], 0, []
        for n in lengths:
            items.append(ops.slice(args[0], [at], [n]))
            at += n
        return [TensorList(items, _element_shape(host(1)), args[0].dtype)]
    tensor_list = args[0]
    if op == "TensorListLength":
        return [ops.scalar(len(tensor_list.items), "int32")]
    if op == "TensorListGetItem":
        item = tensor_list.items[_index(host, 1)]
        if item is None:
            return [ops.zeros(tensor_list.element_shape or [], tensor_list.dtype or "float32")]
        return [ENGINE.view(item, item.shape)]
    if op == "TensorListSetItem":  # in place, as TF.js's TensorList; its items are released with the run
        tensor_list.items[_index(host, 1)] = ENGINE.view(args[2], args[2].shape)
        return [tensor_list]
    if op == "TensorListPushBack":
        tensor_list.items.append(ENGINE.view(args[1], args[1].shape))
        return [tensor_list]
    if op == "TensorListPopBack":
        if not tensor_list.items:
            raise ValueError(f"{node.name}: TensorListPopBack on an empty list")
        item = tensor_list.items.pop()
        return [tensor_list, ENGINE.view(item, item.shape)]
    if op == "TensorListResize":
        size = _index(host, 1)
        tensor_list.items[size:] = []
        tensor_list.items.extend([None] * (size - len(tensor_list.items)))
        return [tensor_list]
    if op == "TensorListStack":
        return [_stacked(tensor_list, tensor_list.items, dtype)]
    if op == "TensorListGather":
        items = [tensor_list.items[int(i)] for i in np.asarray(host(1)).reshape(-1)]
        return [_stacked(tensor_list, items, dtype)]
    if op.startswith("TensorArray"):
        return _array_op(node, args, host)
    if op in ("TensorListConcat", "TensorListConcatV2"):
        items = [t for t in tensor_list.items if t is not None]
        lengths = ops.tensor(np.array([t.shape[0] for t in items], np.int32))
        return [ops.concat(items, 0) if len(items) > 1 else ENGINE.view(items[0], items[0].shape), lengths]
    raise AssertionError(op)


def _array_op(node, args, host):
    """TF1's TensorArray ops on a TensorList (their handle), as TF.js's TensorArray: writes change it in place and
    give a new flow value, which only orders them."""
    op, array = node.op, args[0]
    if op == "TensorArrayWriteV3":
        array.items[_index(host, 1)] = ENGINE.view(args[2], args[2].shape)
        return [ops.scalar(1.0)]
    if op == "TensorArrayScatterV3":
        for k, item in zip(np.asarray(host(1)).reshape(-1), ops.unstack(args[2], 0)):
            array.items[int(k)] = item
        return [ops.scalar(1.0)]
    if op == "TensorArraySplitV3":
        at = 0
        for k, n in enumerate(int(n) for n in np.asarray(host(2)).reshape(-1)):
            array.items[k] = ops.slice(args[1], [at], [n])
            at += n
        return [ops.scalar(1.0)]
    if op == "TensorArrayReadV3":
        item = array.items[_index(host, 1)]
        return [ENGINE.view(item, item.shape)]
    if op == "TensorArrayGatherV3":
        return [_stacked(array, [array.items[int(k)] for k in np.asarray(host(1)).reshape(-1)], array.dtype)]
    if op == "TensorArrayConcatV3":
        items = [t for t in array.items if t is not None]
        lengths = ops.tensor(np.array([t.shape[0] for t in items], np.int32))
        return [ops.concat(items, 0) if len(items) > 1 else ENGINE.view(items[0], items[0].shape), lengths]
    if op == "TensorArraySizeV3":
        return [ops.scalar(len(array.items), "int32")]
    if op == "TensorArrayCloseV3":
        return []
    raise AssertionError(op)


async def run_dynamic(model, plan, feeds):
    """The plan's outputs for `feeds` ({tensor name: tensor}), with frames and dead branches."""
    nodes = {n.name: n for n in plan.nodes}
    consumers = {}
    for node in plan.nodes:
        for name in {tensor_name(i)[0] for i in [*node.inputs, *node.control]}:
            consumers.setdefault(name, []).append(node)
    host_values = model.host_values()
    values = {}  # (tensor name, context) -> tensor or TensorList
    uses = {}  # (tensor name, context) -> consumers still to read it there
    done, produced, stack = set(), set(), []

    def lookup(name, context):
        """The value of `name` in `context`, or None: feeds and weights are everywhere, a constant Enter's value
        in every iteration of its frame."""
        if name in feeds:
            return feeds[name], None
        producer = model.nodes[tensor_name(name)[0]]
        if producer.op == "Const":
            return model.weight(producer.name), None
        key = (name, context)
        if key in values:
            return values[key], key
        if producer.op == "Enter" and context:
            key = (name, (*context[:-1], (context[-1][0], 0)))
            if key in values:
                return values[key], None  # read by every iteration: released with the run
        return None, None

    def ready(control, context):
        """Whether the node named `control` has run in `context` (or is no node of this run: a Const, an input)."""
        if control not in nodes:
            return True
        if (control, context) in produced:
            return True
        return (
            nodes[control].op == "Enter"
            and bool(context)
            and (control, (*context[:-1], (context[-1][0], 0))) in produced
        )

    def store(name, context, value):
        node_name = tensor_name(name)[0]
        produced.add((node_name, context))
        if value is not None:
            values[(name, context)] = value
            uses[(name, context)] = plan.uses.get(name, 0)
        for consumer in consumers.get(node_name, ()):
            stack.append((consumer, context))

    def release(key):
        uses[key] -= 1
        if uses[key] <= 0 and tensor_name(key[0])[0] in nodes:
            value = values.pop(key)
            if not isinstance(value, TensorList) and key[0] not in plan.outputs:
                value.dispose()

    for node in reversed(plan.nodes):  # those that read only inputs and weights start; the others follow
        if not any(tensor_name(name)[0] in nodes for name in [*node.inputs, *node.control]):
            stack.append((node, ROOT))

    while stack:
        node, context = stack.pop()
        if (node.name, context) in done:
            continue
        if node.op == "Merge":
            present = [(k, *lookup(name, context)) for k, name in enumerate(node.inputs)]
            present = [p for p in present if p[1] is not None]
            if not present:
                continue
            index, value, key = present[0]
            done.add((node.name, context))
            store(f"{node.name}:0", context, _view(value))
            store(f"{node.name}:1", context, ops.scalar(index, "int32"))
            if key is not None:
                release(key)
            continue
        if not all(ready(c, context) for c in node.control):
            continue
        found = [lookup(name, context) for name in node.inputs]
        if any(value is None for value, _ in found):
            continue
        done.add((node.name, context))
        args = [value for value, _ in found]
        for out, out_context, value in await _run(model, node, context, args, host_values):
            store(f"{node.name}:{out}", out_context, value)
        for _, key in found:
            if key is not None:
                release(key)
        await asyncio.sleep(0)  # a long loop lets other tasks run, as TF.js's awaits do

    missing = [name for name in plan.outputs if lookup(name, ROOT)[0] is None]
    if missing:
        raise RuntimeError(
            f"GraphModel.execute_async: the graph computed no value for {', '.join(map(repr, missing))} "
            "(a branch that did not run)"
        )
    return finish(model, {name: lookup(name, ROOT)[0] for name in plan.outputs}, plan.outputs, list(feeds.values()))


async def _run(model, node, context, args, host_values):
    """[(output index, context, value)] of one node in `context`."""
    op = node.op
    if op == "NoOp":
        return [(0, context, None)]
    if op == "Enter":
        frame = node.attrs.get("frame_name", "")
        return [(0, (*context, (frame, 0)), _view(args[0]))]
    if op == "Exit":
        return [(0, context[:-1], _view(args[0]))]
    if op == "NextIteration":
        frame, iteration = context[-1]
        return [(0, (*context[:-1], (frame, iteration + 1)), _view(args[0]))]
    if op == "LoopCond":
        return [(0, context, _view(args[0]))]
    if op == "Switch":
        predicate = args[1]
        value = host_values.get(predicate.id)
        taken = bool(np.asarray(await predicate.data() if value is None else value).reshape(-1)[0])
        return [(1 if taken else 0, context, _view(args[0]))]
    if op in LIST_OPS:
        return [(k, context, v) for k, v in enumerate(_list_op(node, args, Call(node, args, host_values).host))]
    if op in FUNCTION_OPS:
        call = _if if op in ("If", "StatelessIf") else _while
        return [(k, context, v) for k, v in enumerate(await call(model, node, args))]
    return [(k, context, v) for k, v in enumerate(run_node(model, node, args, host_values))]


async def _call(model, function, args):
    """The outputs (a list) of the library function named `function` on `args` (tensors and TensorLists)."""
    try:
        return await model.function(function).call(list(args))
    except Exception as e:
        e.add_note(f"in the graph's library function {function!r}")
        raise


async def _true(t):
    return bool(np.asarray(await t.data()).reshape(-1)[0])


async def _if(model, node, args):
    """If(cond, *inputs): then_branch(*inputs) where cond holds, else else_branch(*inputs)."""
    branch = node.attrs["then_branch"] if await _true(args[0]) else node.attrs["else_branch"]
    return await _call(model, branch, args[1:])


async def _while(model, node, args):
    """While(*inputs): body applied while cond holds, as TF.js runs it; each round's tensors are released when the
    next round has replaced them (a TensorList goes round as itself, changed in place)."""
    values = [_view(a) for a in args]
    while True:
        condition = await _call(model, node.attrs["cond"], values)
        holds = await _true(condition[0])
        ENGINE.dispose(condition)
        if not holds:
            return values
        after = await _call(model, node.attrs["body"], values)
        ENGINE.dispose([v for v in values if not isinstance(v, TensorList)])
        values = after
