"""GraphModel: a TF.js graph model (a converted TensorFlow GraphDef) run on py_engine's ops, as tf.loadGraphModel's.

    model = await pe.load_graph_model("models/blazeface/model.json")
    y = model.execute(x)                       # a static graph: the nodes the outputs need, in order
    ys = await model.execute_async(x)          # a graph with while loops, TensorLists or value-sized outputs

Each run computes only the nodes the asked outputs need, releases each intermediate after its last consumer, and
leaves inputs, weights and outputs alive, nothing else. On a backend that captures (webgpu, wasm) a static run is
recorded once per input signature and replayed whole (pe.capture): one submission per execute on webgpu, the
recorded kernel calls without the engine's Python per op on wasm.
"""

import asyncio
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..engine import ENGINE
from ..errors import CaptureError, DTypeError, ShapeError
from ..io import weights_manifest
from ..io.errors import ModelLoadError
from ..io.fetch import Location
from ..io.graph_format import engine_dtype, parse_graph, read_json, tensor_name
from ..tensor import Tensor
from .graph_control import run_dynamic, tensors_in
from .graph_fusion import FusedChain, fuse_chains
from .graph_gather_sink import SunkGather, sink_gathers
from .graph_nodes import finish, run_op
from .graph_ops import (
    CONTROL_OPS,
    DYNAMIC_OPS,
    FUNCTION_OPS,
    LIST_OPS,
    NOT_HERE,
    OPS,
    SOURCE_OPS,
    missing_engine_ops,
)

HOST_VALUE_LIMIT = 64  # Const values up to this many elements stay on the host too: shapes, axes, sizes


@dataclass(frozen=True)
class TensorInfo:
    """An input or output of a graph model: its name, shape (None: unknown; -1: any size) and dtype."""

    name: str
    shape: tuple
    dtype: str


class GraphModel:
    """A loaded TF.js graph model (pe.load_graph_model): inputs, outputs, execute, execute_async, predict."""

    def __init__(self, graph, weights, host_values, owns_weights=True):
        self.graph, self._weights, self._host_values = graph, weights, host_values
        self._owns_weights, self._functions = owns_weights, {}
        self.nodes = {node.name: node for node in graph.nodes}
        self.producers = _Producers()
        self._plans, self._captured, self.disposed = {}, {}, False
        self._input_nodes = self._io_nodes(
            graph.signature_inputs, [n for n in graph.nodes if n.op.startswith("Placeholder")]
        )
        consumed = {self.producers[name] for node in graph.nodes for name in [*node.inputs, *node.control]}
        sinks = [n for n in graph.nodes if n.name not in consumed]
        self._output_nodes = self._io_nodes(graph.signature_outputs, sinks)

    def _io_nodes(self, entries, fallback):
        """[(key, tensor name, TensorInfo)] from the signature, else from the fallback nodes (TF.js's order)."""
        result = []
        if entries:
            for key, entry in entries.items():
                node_name, index = tensor_name(entry["name"])
                if node_name in self.nodes:
                    info = self._info(self.nodes[node_name], entry["shape"], entry["dtype"])
                    result.append((key, f"{node_name}:{index}", info))
            return result
        return [(n.name, f"{n.name}:0", self._info(n, None, None)) for n in fallback]

    def _info(self, node, shape, dtype):
        if shape is None and isinstance(node.attrs.get("shape"), list):
            shape = node.attrs["shape"]
        dtype = dtype or engine_dtype(node.attrs.get("dtype") or node.attrs.get("T"))
        return TensorInfo(node.name, None if shape is None else tuple(shape), dtype)

    @property
    def inputs(self):
        """[TensorInfo] of the graph's inputs: the signature's, else its placeholders."""
        return [info for _, _, info in self._input_nodes]

    @property
    def outputs(self):
        """[TensorInfo] of the graph's outputs: the signature's, else the nodes nothing consumes."""
        return [info for _, _, info in self._output_nodes]

    @property
    def metadata(self):
        """model.json's userDefinedMetadata ({} when it has none)."""
        return self.graph.metadata

    @property
    def weights(self):
        """{Const node name: its tensor}."""
        return dict(self._weights)

    def predict(self, inputs):
        """execute(inputs) for every output, as TF.js's GraphModel.predict."""
        return self.execute(inputs)

    def execute(self, inputs, outputs=None):
        """The outputs' values for `inputs` (a tensor, a list in the order of `inputs`, or {name: tensor}; names with
        or without ':0', or the signature's keys). `outputs`: a name or a list of names (default: every output);
        returns a tensor for one name (or a one-output model), else a list in the order asked."""
        feeds, names, single = self._arguments("execute", inputs, outputs)
        plan = self._plan(feeds, names)
        if plan.dynamic:
            node = plan.dynamic
            raise RuntimeError(
                f"GraphModel.execute: this graph has the node {node.name!r} ({node.op}), which needs control flow or "
                "reads values to size its outputs: use `await model.execute_async(...)` instead"
            )
        tensors = [feeds[name] for name in plan.feeds]
        if getattr(ENGINE.active(), "captures", False) and plan.capturable:
            results = self._run_captured(plan, tensors)
        else:
            results = self._run(plan, tensors)
        return results[0] if single else results

    async def execute_async(self, inputs, outputs=None):
        """execute for any graph: while loops (Enter/Exit/Switch/Merge/NextIteration frames), TensorLists and ops
        whose output sizes depend on values (TF.js's executeAsync)."""
        feeds, names, single = self._arguments("execute_async", inputs, outputs)
        plan = self._plan(feeds, names)
        if not plan.dynamic:
            results = self._run(plan, [feeds[name] for name in plan.feeds])
        else:
            with ENGINE.scope("execute_async") as scope:
                results = await run_dynamic(self, plan, feeds)
                scope.export(results)
        await asyncio.sleep(0)
        return results[0] if single else results

    def dispose(self):
        """Release the weights and any recorded GPU programs."""
        for forward in self._captured.values():
            forward.dispose()
        self._captured.clear()
        if self._owns_weights:  # a library function's model shares its graph's
            ENGINE.dispose(list(self._weights.values()))
        # the small weights' host copies too: views of float16 weights widened together hold all of them
        self._weights, self._host_values, self.disposed = {}, {}, True

    # ---- arguments -------------------------------------------------------------------------------------------

    def _arguments(self, method, inputs, outputs):
        if self.disposed:
            raise RuntimeError(f"GraphModel.{method}: the model is disposed")
        feeds = self._feeds(method, inputs)
        single = isinstance(outputs, str) or (outputs is None and len(self._output_nodes) == 1)
        if outputs is None:
            names = [name for _, name, _ in self._output_nodes]
        else:
            names = [
                self._tensor(method, name, "output") for name in ([outputs] if isinstance(outputs, str) else outputs)
            ]
        return feeds, names, single

    def _tensor(self, method, name, what):
        """A name of the caller's (a signature key, node name, or 'node:k') as the graph's 'node:k'."""
        if not isinstance(name, str):
            raise TypeError(f"GraphModel.{method}: an {what} name must be a str, got {type(name).__name__}")
        for key, tensor, _ in self._input_nodes if what == "input" else self._output_nodes:
            if name == key:
                return tensor
        node, index = tensor_name(name)
        if node not in self.nodes:
            known = ", ".join(repr(k) for k, _, _ in (self._input_nodes if what == "input" else self._output_nodes))
            raise ValueError(f"GraphModel.{method}: the graph has no node {node!r} (its {what}s: {known})")
        return f"{node}:{index}"

    def _feeds(self, method, inputs):
        """{graph tensor name: tensor}, each checked against its placeholder's shape and dtype."""
        expected = [(key, tensor) for key, tensor, _ in self._input_nodes]
        if isinstance(inputs, Tensor):
            inputs = [inputs]
        if isinstance(inputs, dict):
            given = {self._tensor(method, name, "input"): (repr(name), t) for name, t in inputs.items()}
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(expected):
                raise ValueError(
                    f"GraphModel.{method}: the model has {len(expected)} input(s) "
                    f"({', '.join(k for k, _ in expected)}), got {len(inputs)} tensor(s)"
                )
            given = {tensor: (repr(key), t) for (key, tensor), t in zip(expected, inputs)}
        else:
            raise TypeError(
                f"GraphModel.{method}: inputs must be a Tensor, a list or a dict, got {type(inputs).__name__}"
            )
        feeds = {}
        for tensor, (shown, t) in given.items():
            if not isinstance(t, Tensor):
                raise TypeError(f"GraphModel.{method}: input {shown} must be a Tensor, got {type(t).__name__}")
            self._check_input(method, shown, tensor, t)
            feeds[tensor] = t
        return feeds

    def _check_input(self, method, shown, tensor, t):
        node = self.nodes[tensor_name(tensor)[0]]
        info = next((i for _, name, i in self._input_nodes if name == tensor), None) or self._info(node, None, None)
        if info.shape is not None:
            fits = len(info.shape) == t.rank and all(d == -1 or d == s for d, s in zip(info.shape, t.shape))
            if not fits:
                raise ShapeError(
                    f"GraphModel.{method}: input {shown} must have shape {list(info.shape)} (-1: any size), "
                    f"got {list(t.shape)}"
                )
        if info.dtype is not None and t.dtype != info.dtype:
            raise DTypeError(
                f"GraphModel.{method}: input {shown} must be {info.dtype}, got {t.dtype} (pe.cast(x, {info.dtype!r}))"
            )

    # ---- plans -----------------------------------------------------------------------------------------------

    def _plan(self, feeds, names):
        key = (tuple(sorted(feeds)), tuple(names))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = Plan(self, sorted(feeds), names)
        return plan

    def _run(self, plan, tensors):
        with ENGINE.scope("execute") as scope:
            results = run_static(self, plan, tensors)
            scope.export(results)
        return results

    def _run_captured(self, plan, tensors):
        forward = self._captured.get(plan.key)
        if forward is None:
            forward = self._captured[plan.key] = ENGINE.capture(lambda *xs: run_static(self, plan, list(xs)))
        try:
            return list(forward(*tensors))
        except CaptureError:  # the graph reads a computed value back (a shape): it runs op by op
            self._captured.pop(plan.key).dispose()
            plan.capturable = False
            return self._run(plan, tensors)

    def function(self, name):
        """The library function `name` as a GraphModel of its body (sharing this model's weights): what If and
        While nodes call."""
        if name not in self._functions:
            self._functions[name] = GraphModel(self.graph.functions[name], self._weights, self._host_values, False)
        return self._functions[name]

    async def call(self, args):
        """This library function's outputs (a list) for `args`, in its signature's order: tensors and TensorLists,
        as If and While nodes pass them. What a TensorList given or returned holds outlives the call."""
        if len(args) != len(self._input_nodes):
            raise ValueError(f"the function takes {len(self._input_nodes)} argument(s), its caller passed {len(args)}")
        feeds = {tensor: value for (_, tensor, _), value in zip(self._input_nodes, args)}
        plan = self._plan(feeds, [name for _, name, _ in self._output_nodes])
        with ENGINE.scope("function") as scope:
            results = await run_dynamic(self, plan, feeds)
            scope.export([t for value in [*args, *results] for t in tensors_in(value)])
        return results

    def host_values(self):
        """{tensor id: numpy array} of the small constants (shapes, axes) a run reads on the host; a run adds its
        own (a Shape's result) to its copy."""
        return dict(self._host_values)

    def weight(self, node_name):
        return self._weights[node_name]


class _Producers(dict):
    """{tensor name: the node that makes it} (graph_format.tensor_name's node), each name parsed once: a plan looks
    each input up in three passes (movenet's: 1484 lookups of 508 names)."""

    def __missing__(self, name):
        node = self[name] = tensor_name(name)[0]
        return node


class Plan:
    """What a run for given inputs and outputs computes: the nodes the outputs need, in an order that runs each
    after its inputs (static graphs), and how many consumers each value has."""

    def __init__(self, model, feeds, outputs):
        self.key, self.feeds, self.outputs = (tuple(feeds), tuple(outputs)), list(feeds), list(outputs)
        self.capturable = True
        producers = model.producers
        fed = {producers[name] for name in feeds}
        needed, stack = set(), [producers[name] for name in outputs]
        while stack:
            name = stack.pop()
            if name in needed:
                continue
            needed.add(name)
            node = model.nodes[name]
            if name in fed or node.op == "Const":
                continue
            if node.op == "Placeholder":
                raise ValueError(
                    f"GraphModel: the outputs {', '.join(map(repr, outputs))} need the input {name!r}, "
                    f"which was not given (given: {', '.join(map(repr, feeds)) or 'none'})"
                )
            stack.extend(producers[n] for n in [*node.inputs, *node.control])
        self.nodes = [n for n in model.graph.nodes if n.name in needed and n.name not in fed and n.op != "Const"]
        special = (*CONTROL_OPS, *LIST_OPS, *DYNAMIC_OPS, *FUNCTION_OPS)
        self.dynamic = next((n for n in self.nodes if n.op in special), None)
        self.uses = {}
        for node in self.nodes:
            for name in node.inputs:
                self.uses[name] = self.uses.get(name, 0) + 1
        if not self.dynamic:
            self.nodes = _ordered(self.nodes, fed | {n for n in needed if model.nodes[n].op == "Const"}, model)
            self._static_steps(model)

    def _static_steps(self, model):
        """What run_static does per node, worked out once: the op, and the values to release once it has run (those
        it read for the last time). `weights`: {tensor name: weight} of the Const values the nodes read."""
        self.weights = {}
        made = {node.name for node in self.nodes}
        last = {}  # tensor name -> the index of the step reading it last
        steps = fuse_chains([node for node in self.nodes if node.op not in SOURCE_OPS], model, self.outputs)
        steps = sink_gathers(steps, model, self.outputs)
        for k, node in enumerate(steps):
            for name in node.inputs:
                producer = model.producers[name]
                if producer in made:
                    last[name] = k
                elif model.nodes[producer].op == "Const":
                    self.weights[name] = model.weight(producer)
        releases = [[] for _ in steps]
        for name, k in last.items():
            if name not in self.outputs:
                releases[k].append(name)
        self.steps = [
            (node, node.run if isinstance(node, (FusedChain, SunkGather)) else OPS[node.op].run, tuple(release))
            for node, release in zip(steps, releases)
        ]


def _ordered(nodes, ready, model):
    """The nodes in an order that runs each after its data and control inputs (Kahn's algorithm)."""
    waiting = {n.name: {model.producers[i] for i in [*n.inputs, *n.control]} - ready for n in nodes}
    consumers = {}
    for name, deps in waiting.items():
        for dep in deps:
            consumers.setdefault(dep, []).append(name)
    order, queue = [], [n.name for n in nodes if not waiting[n.name]]
    while queue:
        name = queue.pop()
        order.append(model.nodes[name])
        for consumer in consumers.get(name, ()):
            waiting[consumer].discard(name)
            if not waiting[consumer]:
                queue.append(consumer)
    if len(order) != len(nodes):
        stuck = [n.name for n in nodes if waiting[n.name]]
        raise ValueError(f"GraphModel: the graph has a cycle through {', '.join(map(repr, stuck[:5]))}")
    return order


def run_static(model, plan, tensors):
    """The plan's outputs for its feeds' tensors, node by node, each intermediate released after its last use."""
    values = {**plan.weights, **dict(zip(plan.feeds, tensors))}
    uses, outputs = plan.uses, plan.outputs
    host_values = model.host_values()
    for node, run, release in plan.steps:
        results = run_op(node, run, [values[name] for name in node.inputs], host_values)
        for k, out in enumerate(results):
            name = f"{node.name}:{k}"
            values[name] = out
            if name not in uses and name not in outputs:  # an output nothing reads
                out.dispose()
        for name in release:
            values.pop(name).dispose()
    return finish(model, values, plan.outputs, tensors)


# ---- loading ---------------------------------------------------------------------------------------------------


async def load_graph_model(url_or_path, on_progress=None):
    """The TF.js graph model at url_or_path: model.json (whatever its file name), the folder holding it, or a URL.

    Shards are fetched concurrently and checked (sizes and sha256 where the manifest has them); quantized weights
    (uint8, uint16, float16) are dequantized. Every op the engine cannot run is named, with its nodes, here. Any
    failure raises ModelLoadError naming the file, weight or node at fault, and leaves nothing allocated.
    on_progress(bytes_loaded, bytes_total), sync or async, is called at the start and after each shard.
    """
    location = Location(url_or_path)
    try:
        with location.files_ahead():
            return await _load(location, on_progress)
    except ModelLoadError as e:
        raise ModelLoadError(f"load_graph_model({location.target}): {e}") from e.__cause__


def _all_nodes(graph):
    """The graph's nodes and its library functions' nodes."""
    return [*graph.nodes, *(node for function in graph.functions.values() for node in function.nodes)]


def unsupported_ops(graph):
    """{op: [node names]} of the graph's nodes (its functions' too) this engine cannot run."""
    unknown = {}
    for node in _all_nodes(graph):
        op = node.op
        if op in SOURCE_OPS or op in CONTROL_OPS or op in LIST_OPS or op in FUNCTION_OPS:
            continue
        if op not in OPS or missing_engine_ops(op):
            unknown.setdefault(op, []).append(node.name)
    return unknown


def _check_calls(graph):
    """Every function an If or While node calls is in the library."""
    for node in _all_nodes(graph):
        if node.op in FUNCTION_OPS:
            for key in ("then_branch", "else_branch", "cond", "body"):
                name = node.attrs.get(key)
                if key in node.attrs and name not in graph.functions:
                    raise ModelLoadError(
                        f"node {node.name!r} ({node.op}) calls the function {name!r}, which the graph's library lacks"
                    )


async def _load(location, on_progress):
    artifacts = read_json(await location.read(location.target, "model.json"))
    # the shards' requests go out before the graph is parsed and checked
    fetching = await weights_manifest.start_fetch(location, artifacts.get("weightsManifest") or [], on_progress)
    try:
        graph, consts = _checked_graph(artifacts)
    except BaseException:
        weights_manifest.abandon(fetching)
        raise
    return _model(graph, consts, await fetching)


def from_bytes(model_json, shards):
    """The GraphModel of model.json's bytes and its shards' (bytes, in the manifest's order), already in memory:
    parsed, checked and unpacked as load_graph_model does it, without a turn of the event loop (the page's worker
    runs a small model of its own so once idle, static/worker/playground_ahead.py)."""
    artifacts = read_json(model_json)
    graph, consts = _checked_graph(artifacts)
    return _model(graph, consts, weights_manifest.unpack_all(artifacts.get("weightsManifest") or [], shards))


def _model(graph, consts, arrays):
    """The GraphModel of a checked graph and its weights' arrays ({name: array}, fresh: the tensors take them)."""
    missing = [n.name for n in consts if n.name not in arrays and not isinstance(n.attrs.get("value"), np.ndarray)]
    if missing:
        raise ModelLoadError(
            f"Const node(s) {', '.join(map(repr, missing[:5]))} have no weight in the weights manifest"
        )
    weights, host_values = {}, {}
    try:
        for node in consts:
            if node.name in weights:  # a library function's Const named as one of the graph's: one weight, as TF.js
                continue
            # a weight's array is fresh, the tensor takes it as it is; a value from the graph is copied
            array = arrays[node.name] if node.name in arrays else np.array(node.attrs["value"])
            t = ENGINE.keep(ENGINE.from_numpy(array, dtypes.of_numpy(array.dtype)))
            weights[node.name] = t
            if array.size <= HOST_VALUE_LIMIT:
                host_values[t.id] = array
        return GraphModel(graph, weights, host_values)
    except BaseException:
        ENGINE.dispose(list(weights.values()))
        raise


def _checked_graph(artifacts):
    """(the parsed graph, its Const nodes), or ModelLoadError naming an op the engine lacks (with its nodes), a
    function the library lacks, or a Const's dtype the engine lacks."""
    graph = parse_graph(artifacts)
    unknown = unsupported_ops(graph)
    if unknown:
        listed = "; ".join(
            f"{op} (node{'s' if len(names) > 1 else ''} {', '.join(map(repr, names[:3]))}"
            f"{f' and {len(names) - 3} more' if len(names) > 3 else ''}{': ' + NOT_HERE[op] if op in NOT_HERE else ''})"
            for op, names in sorted(unknown.items())
        )
        raise ModelLoadError(
            f"the graph has ops this engine cannot run: {listed}. docs/graph_models.md lists the ops it runs"
        )
    _check_calls(graph)
    consts = [node for node in _all_nodes(graph) if node.op == "Const"]
    for node in consts:
        if node.attrs.get("dtype") is not None and engine_dtype(node.attrs["dtype"]) is None:
            raise ModelLoadError(f"Const node {node.name!r} has dtype {node.attrs['dtype']}, which the engine lacks")
    return graph, consts
