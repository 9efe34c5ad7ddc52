"""The TensorFlow.js graph format: model.json with "format": "graph-model", a TensorFlow GraphDef as JSON in
modelTopology ({node, library, versions}), its weightsManifest (one weight per Const node), and optionally a
signature and userDefinedMetadata. This reads and checks it; py_engine.models.graph_model runs it.

A node is {name, op, input: ["producer", "producer:1", "^control"], attr: {name: AttrValue}}, an AttrValue being
TensorFlow's proto as JSON: {"i": "3"} (int64 as a string), {"f": 1.0}, {"b": true}, {"s": base64}, {"type":
"DT_FLOAT"}, {"shape": {"dim": [{"size": "-1"}]}}, {"list": {...}}, {"tensor": {...}} or {"func": {"name"}}.
"""

import base64
import functools
import json
from dataclasses import dataclass, field

import numpy as np

from . import weights_manifest
from .errors import ModelLoadError

# TensorFlow's dtypes as TF.js takes them (int64 and uint8 computed in int32, double and half in float32).
TF_DTYPES = {
    "DT_FLOAT": "float32",
    "DT_HALF": "float32",
    "DT_DOUBLE": "float32",
    "DT_INT32": "int32",
    "DT_INT64": "int32",
    "DT_INT16": "int32",
    "DT_INT8": "int32",
    "DT_UINT8": "int32",
    "DT_UINT16": "int32",
    "DT_BOOL": "bool",
}


def engine_dtype(tf_dtype):
    """The engine dtype a TensorFlow dtype is computed in, or None for one the engine has no counterpart of."""
    return TF_DTYPES.get(tf_dtype)


@dataclass
class NodeDef:
    name: str
    op: str
    inputs: list  # data inputs, as "producer:index" (index 0 written out)
    control: list  # the nodes it must run after ("^name" inputs), by name
    attrs: dict


@dataclass
class GraphArtifacts:
    """What model.json holds, parsed: nodes in file order, the signature's inputs and outputs ({key: {name, dtype,
    shape}}), the library's functions ({name: GraphArtifacts of its body}), userDefinedMetadata, and
    {weight name: numpy array} (dequantized)."""

    nodes: list
    signature_inputs: dict = field(default_factory=dict)
    signature_outputs: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)


def tensor_name(name):
    """'node', 'node:0' and 'node:2' as (node, output index)."""
    node, _, index = name.partition(":")
    if index and not index.isdigit():  # a function body's "node:output_arg:0"
        node, index = name.split(":")[0], name.rsplit(":", 1)[-1]
    return node, int(index) if index.isdigit() else 0


def attr_value(value):
    """A TensorFlow AttrValue (JSON) as a Python value: int, float, bool, str, a dtype name, a shape (list of ints,
    -1 unknown; None for an unknown rank), a list of these, a numpy array (a tensor), or a function's name."""
    if not isinstance(value, dict):
        raise ValueError(f"an attr must be an AttrValue object, got {value!r}")
    if len(value) == 1:  # as a proto's oneof gives it: its one kind
        for key, item in value.items():
            if key == "list":
                return _list(item)
            convert = _ATTR_KINDS.get(key)
            return None if convert is None else convert(item)
    if "list" in value:
        return _list(value["list"])
    for key, convert in _ATTR_KINDS.items():
        if key in value:
            return convert(value[key])
    return None  # an unset attr ({} or {"placeholder": ...})


def _list(items):
    """A ListValue's items of its one kind, each converted as that kind's AttrValue is."""
    items = items or {}
    for key in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        if key in items:
            convert = _ATTR_KINDS[key]
            return [convert(item) for item in items[key]]
    return []


def _shape(proto):
    if proto.get("unknownRank"):
        return None
    return [int(d.get("size", -1)) for d in proto.get("dim", [])]


def _tensor(proto):
    """A TensorProto attr (rare in converted graphs: their constants are weights) as a numpy array."""
    dtype = engine_dtype(proto.get("dtype"))
    shape = _shape(proto.get("tensorShape", {})) or []
    if dtype is None:
        raise ValueError(f"a tensor attr has dtype {proto.get('dtype')!r}, which the engine has no counterpart of")
    np_dtype = weights_manifest.DTYPES[dtype]
    if "tensorContent" in proto:
        raw = base64.b64decode(proto["tensorContent"])
        source = {"DT_FLOAT": "<f4", "DT_INT32": "<i4", "DT_INT64": "<i8", "DT_BOOL": "?", "DT_DOUBLE": "<f8"}
        return np.frombuffer(raw, source[proto["dtype"]]).astype(np_dtype).reshape(shape)
    for key in ("floatVal", "intVal", "int64Val", "boolVal", "doubleVal", "halfVal"):
        if key in proto:
            values = np.asarray([float(v) if np_dtype.kind == "f" else int(v) for v in proto[key]], np_dtype)
            return np.broadcast_to(values, shape).copy() if values.size == 1 else values.reshape(shape)
    # no values: zeros, as TensorFlow reads it. A converted graph's Const nodes are all so (their values are weights),
    # so this allocates nothing: a read-only view of one zero
    return np.ndarray(shape, np_dtype, _ZERO, strides=(0,) * len(shape))


_ZERO = bytes(8)  # one zero of any dtype


@functools.lru_cache(maxsize=256)
def _string(s):
    """A bytes attr (base64) as text; graphs repeat a few ("SAME", "NHWC", "BiasAdd") in most nodes."""
    return base64.b64decode(s).decode("utf-8", "replace")


_ATTR_KINDS = {
    "s": _string,
    "i": int,
    "f": float,
    "b": bool,
    "type": str,
    "shape": _shape,
    "tensor": _tensor,
    "func": lambda f: f.get("name"),
}


def parse_node(node, where, weights=()):
    """A NodeDef of model.json (or of a library function) as a NodeDef; `where` names it in errors. A Const node named
    in `weights` (the weights manifest's names) takes its value from its weight, as TF.js's does: its "value" attr
    (a shape without values in every converted graph) is not read."""
    if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not isinstance(node.get("op"), str):
        raise ModelLoadError(f"{where}: a node needs a 'name' and an 'op', got {str(node)[:200]}")
    name, op = node["name"], node["op"]
    inputs, control = [], []
    for tensor in node.get("input") or []:
        if tensor.startswith("^"):
            control.append(tensor[1:])
        elif ":" not in tensor:  # most inputs: a node's first output
            inputs.append(tensor + ":0")
        else:
            producer, index = tensor_name(tensor)
            inputs.append(f"{producer}:{index}")
    attrs = {}
    weight = op == "Const" and name in weights
    for key, value in (node.get("attr") or {}).items():
        if weight and key == "value":
            continue
        try:
            attrs[key] = attr_value(value)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise ModelLoadError(f"{where}: node {name!r} ({op}) has an unreadable attr {key!r}: {e}") from None
    return NodeDef(name, op, inputs, control, attrs)


def _signature_entries(entries, what):
    """{key: {"name", "dtype", "shape"}} of the signature's inputs or outputs."""
    result = {}
    for key, entry in (entries or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ModelLoadError(f"model.json's signature {what} {key!r} needs a 'name'")
        shape = _shape(entry["tensorShape"]) if "tensorShape" in entry else None
        result[key] = {"name": entry["name"], "dtype": engine_dtype(entry.get("dtype")), "shape": shape}
    return result


# Ops whose outputs are several named arguments of one tensor each: a function body names their outputs
# "node:argument:0", the graph "node:k" (an op with one list argument, Split's "output", needs no entry).
OUTPUT_ARGS = {
    "Switch": ("output_false", "output_true"),
    "Merge": ("output", "value_index"),
    "TopKV2": ("values", "indices"),
    "Unique": ("y", "idx"),
    "UniqueV2": ("y", "idx"),
    "ListDiff": ("out", "idx"),
    "NonMaxSuppressionV4": ("selected_indices", "valid_outputs"),
    "NonMaxSuppressionV5": ("selected_indices", "selected_scores", "valid_outputs"),
    "MaxPoolWithArgmax": ("output", "argmax"),
    "TensorListPopBack": ("output_handle", "tensor"),
    "TensorListConcat": ("tensor", "lengths"),
    "TensorListConcatV2": ("tensor", "lengths"),
}


def _body_tensor(name, ops_of):
    """A function body's "node:argument:k" (or an argument's name) as the graph's "node:index"."""
    parts = name.split(":")
    if len(parts) < 3:
        producer, index = tensor_name(name)
        return f"{producer}:{index}"
    producer, argument, index = parts[0], parts[1], int(parts[2])
    names = OUTPUT_ARGS.get(ops_of.get(producer), ())
    return f"{producer}:{names.index(argument) + index if argument in names else index}"


def _function(function, weights):
    """A library FunctionDef as a GraphArtifacts: a Placeholder per input argument (in order, as its signature's
    inputs), its nodes, and its signature's outputs from its ret map."""
    signature = function.get("signature") or {}
    name = signature.get("name", "?")
    where = f"library function {name!r}"
    raw = function.get("nodeDef") or []
    ops_of = {node.get("name"): node.get("op") for node in raw if isinstance(node, dict)}
    args = signature.get("inputArg") or []
    nodes = [NodeDef(arg["name"], "Placeholder", [], [], {"dtype": arg.get("type")}) for arg in args]
    for node in raw:
        parsed = parse_node(node, where, weights)
        parsed.inputs = [_body_tensor(i, ops_of) for i in (n for n in node.get("input") or [] if not n.startswith("^"))]
        nodes.append(parsed)
    inputs = {
        arg["name"]: {"name": f"{arg['name']}:0", "dtype": engine_dtype(arg.get("type")), "shape": None} for arg in args
    }
    ret = function.get("ret") or {}
    outputs = {}
    for arg in signature.get("outputArg") or []:
        if arg["name"] not in ret:
            raise ModelLoadError(f"{where}: its output {arg['name']!r} has no entry in 'ret'")
        outputs[arg["name"]] = {
            "name": _body_tensor(ret[arg["name"]], ops_of),
            "dtype": engine_dtype(arg.get("type")),
            "shape": None,
        }
    _check_references(nodes, f"{where}: ")
    return GraphArtifacts(nodes, inputs, outputs)


def _check_references(nodes, where):
    known = {node.name for node in nodes}
    for node in nodes:
        # inputs are "producer:index" already (parse_node), control inputs as the file gives them
        missing = [n for n in node.inputs if n.partition(":")[0] not in known]
        missing += [n for n in node.control if tensor_name(n)[0] not in known]
        if missing:
            raise ModelLoadError(f"{where}node {node.name!r} ({node.op}) reads {missing[0]!r}, which no node makes")


def parse_graph(artifacts):
    """GraphArtifacts (weights not yet read) from model.json's parsed JSON."""
    if not isinstance(artifacts, dict) or not isinstance(artifacts.get("modelTopology"), dict):
        raise ModelLoadError("model.json has no 'modelTopology': it is not a TF.js graph model")
    if artifacts.get("format", "graph-model") != "graph-model":
        raise ModelLoadError(
            f"model.json's format is {artifacts['format']!r}; this loader reads 'graph-model' "
            "(a layers model loads with pe.load_layers_model)"
        )
    topology = artifacts["modelTopology"]
    if not isinstance(topology.get("node"), list):
        raise ModelLoadError("model.json's modelTopology has no list of 'node': it is not a TensorFlow GraphDef")
    weights = _weight_names(artifacts.get("weightsManifest"))
    nodes = [parse_node(node, "modelTopology", weights) for node in topology["node"]]
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ModelLoadError(f"modelTopology names nodes twice: {', '.join(map(repr, twice[:10]))}")
    _check_references(nodes, "")
    metadata = artifacts.get("userDefinedMetadata") or {}
    # as TF.js's loader: a signature in userDefinedMetadata wins over model.json's own
    signature = metadata.get("signature") or artifacts.get("signature") or {}
    library = topology.get("library") or {}
    functions = {}
    for function in library.get("function") or []:
        functions[(function.get("signature") or {}).get("name", "?")] = _function(function, weights)
    return GraphArtifacts(
        nodes,
        _signature_entries(signature.get("inputs"), "input"),
        _signature_entries(signature.get("outputs"), "output"),
        functions,
        metadata,
        versions=dict(topology.get("versions") or {}),
    )


def _weight_names(manifest):
    """The names the weights manifest gives its weights (none for a manifest the shards' loader refuses)."""
    try:
        return {spec["name"] for group in manifest for spec in group["weights"]}
    except (TypeError, KeyError):
        return set()


def read_json(raw):
    """model.json's bytes as JSON, or a ModelLoadError saying why not."""
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ModelLoadError(f"model.json is not valid JSON ({e})") from None
