"""TensorFlow's ops, as a TF.js graph model names them, on py_engine's ops: the table graph_model runs.

OPS maps an op name to an Op: `run(call)` computes the node's outputs (a tensor, or a list for several) from a Call,
and `needs` names the py_engine ops it calls, so that a graph needing one this engine lacks is refused at load time.
The control-flow ops (Enter, Exit, Switch, Merge, NextIteration, LoopCond) and the TensorList ops are the
executor's own (graph_control.py); NOT_HERE says why each other op TF.js 4.22 runs is not run here.
"""

import numpy as np

from .. import ops
from ..engine import ENGINE
from ..io.graph_format import engine_dtype


class Op:
    __slots__ = ("needs", "outputs", "run")

    def __init__(self, run, needs=(), outputs=1):
        self.run, self.needs, self.outputs = run, tuple(needs), outputs


class Call:
    """One node's run: its input tensors (`x(i)`), their values on the host (`host(i)`, read back once where they
    are not constants) and its attrs (`attr(name, default)`)."""

    __slots__ = ("host_values", "inputs", "node")

    def __init__(self, node, inputs, host_values):
        self.node, self.inputs, self.host_values = node, inputs, host_values

    def x(self, i):
        return self.inputs[i]

    def host(self, i):
        t = self.inputs[i]
        value = self.host_values.get(t.id)
        return np.asarray(t.numpy()) if value is None else value

    def ints(self, i):
        return [int(v) for v in np.asarray(self.host(i)).reshape(-1)]

    def attr(self, name, default=None):
        value = self.node.attrs.get(name)
        return default if value is None else value


def _op(name):
    return getattr(ops, name)


def unary(name):
    return Op(lambda c: _op(name)(c.x(0)), [name])


def binary(name):
    return Op(lambda c: _op(name)(c.x(0), c.x(1)), [name])


def view(c):
    """Identity and its kin: a new tensor on the same buffer, so each name holds a tensor of its own."""
    x = c.x(0)
    return ENGINE.view(x, x.shape)


def _hw(values):
    """An NHWC attr list [1, h, w, 1] as (h, w)."""
    return (values[1], values[2]) if len(values) == 4 else tuple(values)


def _padding(c):
    """The padding attr as py_engine's conv and pool ops take it ("EXPLICIT": explicit_paddings, NHWC)."""
    padding = c.attr("padding", "VALID")
    if padding == "EXPLICIT":
        p = c.attr("explicit_paddings")
        return [[p[2], p[3]], [p[4], p[5]]]
    return padding.lower()


def _conv_args(c):
    return {"strides": _hw(c.attr("strides", [1, 1, 1, 1])), "padding": _padding(c)}


def _dilations(c):
    return _hw(c.attr("dilations", [1, 1, 1, 1]))


def _activation(x, name, alpha=None, leaky_alpha=0.2):
    """x through a fused op's activation, as TF.js's fused ops apply it."""
    if name in ("", "linear"):
        return x
    if name == "prelu":
        return _prelu(x, alpha)
    if name == "leakyrelu":
        return ops.leaky_relu(x, leaky_alpha)
    return _op(name)(x)


def _prelu(x, alpha):
    """x where x > 0, else alpha * x (TF.js's prelu)."""
    return ops.relu(x) + alpha * ops.minimum(x, 0)


def _fused_parts(c):
    """(bias or None, activation name, prelu alpha or None) of a fused node, as TF.js reads fused_ops and its
    extra arguments: ["BiasAdd", activation?] with bias (and alpha for Prelu), or [activation] alone."""
    fused = [op.lower() for op in c.attr("fused_ops", [])]
    extra, activation = (fused + ["", ""])[:2]
    args = c.inputs[2:]
    if extra == "biasadd":
        return args[0], activation, args[1] if activation == "prelu" else None
    return None, extra, args[0] if extra == "prelu" and args else None


_ENGINE_FUSED = {"": "linear", "relu": "relu", "relu6": "relu6", "sigmoid": "sigmoid", "tanh": "tanh", "elu": "elu"}


def _fused_conv(kind):
    conv, fused = (
        (ops.depthwise_conv2d, ops.fused_depthwise_conv2d) if kind == "depthwise" else (ops.conv2d, ops.fused_conv2d)
    )

    def run(c):
        bias, activation, alpha = _fused_parts(c)
        args = {**_conv_args(c), "dilations": _dilations(c)}
        if activation in _ENGINE_FUSED:  # one kernel
            return fused(c.x(0), c.x(1), bias, _ENGINE_FUSED[activation], **args)
        y = fused(c.x(0), c.x(1), bias, "linear", **args) if bias is not None else conv(c.x(0), c.x(1), **args)
        return _activation(y, activation, alpha, c.attr("leakyrelu_alpha", 0.2))

    return Op(run, ["relu", "minimum", "leaky_relu", "sigmoid", "relu6", "elu", "tanh"])


def _fused_matmul(c):
    bias, activation, alpha = _fused_parts(c)
    y = ops.matmul(c.x(0), c.x(1), c.attr("transpose_a", False), c.attr("transpose_b", False))
    if bias is not None:
        y = y + bias
    return _activation(y, activation, alpha, c.attr("leakyrelu_alpha", 0.2))


def _conv(name):
    return Op(lambda c: _op(name)(c.x(0), c.x(1), **_conv_args(c), dilations=_dilations(c)), [name])


def _pool(name):
    return Op(lambda c: _op(name)(c.x(0), _hw(c.attr("ksize")), **_conv_args(c)), [name])


def _reduce(name):
    return Op(lambda c: _op(name)(c.x(0), tuple(c.ints(1)), keepdims=c.attr("keep_dims", False)), [name])


def _arg_reduce(name):
    return Op(lambda c: _op(name)(c.x(0), c.ints(1)[0]), [name])


def _div(c):
    a, b = c.x(0), c.x(1)
    return ops.floor_div(a, b) if a.dtype == b.dtype == "int32" else ops.div(a, b)


def _add_n(c):
    total = c.x(0) + c.x(1)
    for x in c.inputs[2:]:
        total = total + x
    return total


def _cast(c):
    dtype = engine_dtype(c.attr("DstT"))
    return ops.cast(c.x(0), dtype)


def _strided_slice(c):
    """x[key] for TensorFlow's StridedSlice: begin/end/strides with its five bit masks as a numpy index."""
    begin, end, strides = c.ints(1), c.ints(2), c.ints(3)
    masks = {m: c.attr(f"{m}_mask", 0) for m in ("begin", "end", "ellipsis", "new_axis", "shrink_axis")}
    key = []
    for k, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << k
        if masks["ellipsis"] & bit:
            key.append(Ellipsis)
        elif masks["new_axis"] & bit:
            key.append(None)
        elif masks["shrink_axis"] & bit:
            key.append(b)
        else:
            key.append(slice(None if masks["begin"] & bit else b, None if masks["end"] & bit else e, s))
    return c.x(0)[tuple(key)]


def _slice(c):
    return ops.slice(c.x(0), c.ints(1), c.ints(2))


def _split(c):
    return ops.split(c.x(1), c.attr("num_split"), c.ints(0)[0])


def _split_v(c):
    return ops.split(c.x(0), c.ints(1), c.ints(2)[0])


def _concat(first_axis):
    def run(c):
        tensors = c.inputs[1:] if first_axis else c.inputs[:-1]
        axis = c.ints(0 if first_axis else len(c.inputs) - 1)[0]
        if len(tensors) == 1:
            return view(Call(c.node, tensors, {}))
        return ops.concat(list(tensors), axis)

    return Op(run, ["concat"])


def _fill(c):
    value = c.host(1)
    dtype = engine_dtype(c.attr("T", "DT_FLOAT"))
    return ops.fill(c.ints(0), value.item(), dtype)


def _range(c):
    dtype = engine_dtype(c.attr("Tidx", "DT_INT32"))
    start, limit, delta = (c.host(i).item() for i in range(3))
    return ops.arange(start, limit, delta, dtype=dtype)


def _shape(c):
    shape = np.asarray(c.x(0).shape, np.int32)
    t = ops.tensor(shape, "int32")
    c.host_values[t.id] = shape  # known here: reading it back later costs nothing
    return t


def _resize(name):
    def run(c):
        return _op(name)(c.x(0), c.ints(1), c.attr("align_corners", False), c.attr("half_pixel_centers", False))

    return Op(run, [name])


def _top_k(c):
    values, indices = ops.top_k(c.x(0), c.ints(1)[0], c.attr("sorted", True))
    return [values, indices]


def _pad(c):
    value = c.host(2).item() if len(c.inputs) > 2 else 0
    return ops.pad(c.x(0), [tuple(p) for p in np.asarray(c.host(1)).reshape(-1, 2).tolist()], value)


def _squeeze(c):
    axes = c.attr("squeeze_dims") or c.attr("axis") or None
    return ops.squeeze(c.x(0), tuple(axes) if axes else None)


def _gather(c):
    axis = c.ints(2)[0] if len(c.inputs) > 2 else 0
    return ops.gather(c.x(0), c.x(1), axis, c.attr("batch_dims", 0))


def _batch_norm(c):
    x, scale, offset, mean, variance = c.inputs[:5]
    return ops.batch_norm(x, mean, variance, offset, scale, c.attr("epsilon", 1e-3))


def _cumsum(c):
    return ops.cumsum(c.x(0), c.ints(1)[0], c.attr("exclusive", False), c.attr("reverse", False))


def _one_hot(c):
    on, off = c.host(2).item(), c.host(3).item()
    return ops.one_hot(c.x(0), c.ints(1)[0], on, off, engine_dtype(c.attr("T", "DT_FLOAT")))


def _clip(c):
    return ops.clip_by_value(c.x(0), c.host(1).item(), c.host(2).item())


def _like(fill):
    return Op(lambda c: ops.fill(list(c.x(0).shape), fill, c.x(0).dtype), ["fill"])


OPS = {
    # graph
    "Identity": Op(view),
    "Snapshot": Op(view),
    "StopGradient": Op(view),
    "EnsureShape": Op(view),
    "IdentityN": Op(lambda c: [ENGINE.view(x, x.shape) for x in c.inputs], outputs=None),
    "Shape": Op(_shape),
    "ShapeN": Op(lambda c: [ops.tensor(list(x.shape), "int32") for x in c.inputs], outputs=None),
    "Size": Op(lambda c: ops.scalar(c.x(0).size, "int32")),
    "Rank": Op(lambda c: ops.scalar(c.x(0).rank, "int32")),
    # arithmetic
    "Add": binary("add"),
    "AddV2": binary("add"),
    "BiasAdd": binary("add"),
    "AddN": Op(_add_n),
    "Sub": binary("sub"),
    "Mul": binary("mul"),
    "RealDiv": binary("div"),
    "Div": Op(_div, ["div", "floor_div"]),
    "DivNoNan": Op(lambda c: ops.where(ops.equal(c.x(1), 0), ops.zeros_like(c.x(0)), c.x(0) / c.x(1))),
    "FloorDiv": binary("floor_div"),
    "FloorMod": binary("mod"),
    "Mod": binary("mod"),
    "Maximum": binary("maximum"),
    "Minimum": binary("minimum"),
    "Pow": binary("pow"),
    "SquaredDifference": binary("squared_difference"),
    # basic math
    "Abs": unary("abs"),
    "Ceil": unary("ceil"),
    "Cos": unary("cos"),
    "Elu": unary("elu"),
    "Erf": unary("erf"),
    "Exp": unary("exp"),
    "Expm1": Op(lambda c: ops.exp(c.x(0)) - 1),
    "Floor": unary("floor"),
    "IsNan": unary("is_nan"),
    "LeakyRelu": Op(lambda c: ops.leaky_relu(c.x(0), c.attr("alpha", 0.2))),
    "Log": unary("log"),
    "Log1p": unary("log1p"),
    "Neg": unary("neg"),
    "Prelu": Op(lambda c: _prelu(c.x(0), c.x(1))),
    "Reciprocal": unary("reciprocal"),
    "Relu": unary("relu"),
    "Relu6": unary("relu6"),
    "Round": unary("round"),
    "Rsqrt": unary("rsqrt"),
    "Sigmoid": unary("sigmoid"),
    "Sign": unary("sign"),
    "Sin": unary("sin"),
    "Softplus": unary("softplus"),
    "Sqrt": unary("sqrt"),
    "Square": unary("square"),
    "Tanh": unary("tanh"),
    "ClipByValue": Op(_clip),
    # logical
    "Equal": binary("equal"),
    "NotEqual": binary("not_equal"),
    "Greater": binary("greater"),
    "GreaterEqual": binary("greater_equal"),
    "Less": binary("less"),
    "LessEqual": binary("less_equal"),
    "LogicalAnd": binary("logical_and"),
    "LogicalOr": binary("logical_or"),
    "LogicalNot": unary("logical_not"),
    "Select": Op(lambda c: ops.where(c.x(0), c.x(1), c.x(2))),
    "SelectV2": Op(lambda c: ops.where(c.x(0), c.x(1), c.x(2))),
    # matrices
    "MatMul": Op(lambda c: ops.matmul(c.x(0), c.x(1), c.attr("transpose_a", False), c.attr("transpose_b", False))),
    "BatchMatMul": Op(lambda c: ops.matmul(c.x(0), c.x(1), c.attr("adj_x", False), c.attr("adj_y", False))),
    "BatchMatMulV2": Op(lambda c: ops.matmul(c.x(0), c.x(1), c.attr("adj_x", False), c.attr("adj_y", False))),
    "_FusedMatMul": Op(_fused_matmul, ["matmul", "relu", "relu6", "sigmoid", "elu", "tanh", "leaky_relu"]),
    "Transpose": Op(lambda c: ops.transpose(c.x(0), c.ints(1))),
    # convolution
    "Conv2D": _conv("conv2d"),
    "DepthwiseConv2dNative": _conv("depthwise_conv2d"),
    "DepthwiseConv2d": _conv("depthwise_conv2d"),
    "_FusedConv2D": _fused_conv("conv2d"),
    "FusedDepthwiseConv2dNative": _fused_conv("depthwise"),
    "MaxPool": _pool("max_pool"),
    "AvgPool": _pool("avg_pool"),
    # reduction
    "Sum": _reduce("sum"),
    "Mean": _reduce("mean"),
    "Max": _reduce("max"),
    "Min": _reduce("min"),
    "Prod": _reduce("prod"),
    "All": _reduce("all"),
    "Any": _reduce("any"),
    "ArgMax": _arg_reduce("argmax"),
    "ArgMin": _arg_reduce("argmin"),
    "Cumsum": Op(_cumsum),
    # normalization
    "Softmax": Op(lambda c: ops.softmax(c.x(0), -1)),
    "LogSoftmax": Op(lambda c: ops.log_softmax(c.x(0), -1)),
    "FusedBatchNorm": Op(_batch_norm),
    "FusedBatchNormV2": Op(_batch_norm),
    "FusedBatchNormV3": Op(_batch_norm),
    # slice and join
    "ConcatV2": _concat(first_axis=False),
    "Concat": _concat(first_axis=True),
    "GatherV2": Op(_gather),
    "Gather": Op(_gather),
    "GatherNd": Op(lambda c: ops.gather_nd(c.x(0), c.x(1)), ["gather_nd"]),
    "Pack": Op(lambda c: ops.stack(list(c.inputs), c.attr("axis", 0))),
    "Unpack": Op(lambda c: ops.unstack(c.x(0), c.attr("axis", 0)), outputs=None),
    "Tile": Op(lambda c: ops.tile(c.x(0), c.ints(1))),
    "Slice": Op(_slice),
    "StridedSlice": Op(_strided_slice),
    "Split": Op(_split, outputs=None),
    "SplitV": Op(_split_v, outputs=None),
    "ReverseV2": Op(lambda c: ops.reverse(c.x(0), tuple(c.ints(1)))),
    # transformation
    "Cast": Op(_cast),
    "ExpandDims": Op(lambda c: ops.expand_dims(c.x(0), c.ints(1)[0])),
    "Reshape": Op(lambda c: ops.reshape(c.x(0), c.ints(1))),
    "Squeeze": Op(_squeeze),
    "Pad": Op(_pad),
    "PadV2": Op(_pad),
    "BroadcastTo": Op(lambda c: ops.broadcast_to(c.x(0), c.ints(1))),
    # creation
    "Fill": Op(_fill),
    "Range": Op(_range),
    "ZerosLike": _like(0),
    "OnesLike": _like(1),
    "OneHot": Op(_one_hot),
    # evaluation
    "TopKV2": Op(_top_k, outputs=2),
    # image
    "ResizeBilinear": _resize("resize_bilinear"),
    "ResizeNearestNeighbor": _resize("resize_nearest"),
}

# The ops the executor runs itself (graph_control.py): frames of while loops, and TensorLists.
CONTROL_OPS = ("Enter", "Exit", "Switch", "Merge", "NextIteration", "LoopCond")
LIST_OPS = (
    "TensorListReserve",
    "TensorListFromTensor",
    "TensorListGetItem",
    "TensorListSetItem",
    "TensorListStack",
    "TensorListLength",
)
# Nodes whose values the executor provides (inputs, weights) or that compute nothing.
SOURCE_OPS = ("Const", "Placeholder", "PlaceholderWithDefault", "NoOp")
# Ops whose output sizes depend on values: a graph with one runs with execute_async, as in TF.js.
DYNAMIC_OPS = ("NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5", "Where")


def missing_engine_ops(op):
    """The py_engine ops an op of the table needs that this engine does not have (none: it runs)."""
    return [name for name in OPS[op].needs if not hasattr(ops, name)]


def output_count(node, inputs):
    """How many outputs a node of a multi-output op makes (None in the table: it depends on the node)."""
    count = OPS[node.op].outputs
    if count is not None:
        return count
    if node.op in ("Split", "SplitV"):
        return node.attrs.get("num_split", 1)
    if node.op == "Unpack":
        return node.attrs.get("num", 1)
    return len(inputs)
