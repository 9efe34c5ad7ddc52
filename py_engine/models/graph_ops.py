"""TensorFlow's ops, as a TF.js graph model names them, on py_engine's ops: the table graph_model runs.

OPS maps an op name to an Op: `run(call)` computes the node's outputs (a tensor, or a list for several) from a Call,
and `needs` names the py_engine ops it calls, so that a graph needing one this engine lacks is refused at load time.
The control-flow ops (Enter, Exit, Switch, Merge, NextIteration, LoopCond; If and While), the TensorList and
TensorArray ops are the executor's own (graph_control.py); NOT_HERE says why each other op TF.js 4.22 runs is not
run here.
"""

import numpy as np

from .. import ops
from ..engine import ENGINE
from ..io.graph_format import engine_dtype
from ..ops import nn


class Op:
    __slots__ = ("needs", "run")

    def __init__(self, run, needs=()):
        self.run, self.needs = run, tuple(needs)


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
        return ops.prelu(x, alpha)
    if name == "leakyrelu":
        return ops.leaky_relu(x, leaky_alpha)
    return _op(name)(x)


def _fused_parts(c):
    """(bias or None, activation name, prelu alpha or None) of a fused node, as TF.js reads fused_ops and its
    extra arguments: ["BiasAdd", activation?] with bias (and alpha for Prelu), or [activation] alone."""
    fused = [op.lower() for op in c.attr("fused_ops", [])]
    extra, activation = (fused + ["", ""])[:2]
    args = c.inputs[2:]
    if extra == "biasadd":
        return args[0], activation, args[1] if activation == "prelu" else None
    return None, extra, args[0] if extra == "prelu" and args else None


_ENGINE_FUSED = {
    "": "linear",
    "relu": "relu",
    "relu6": "relu6",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "elu": "elu",
    "hardswish": "hard_swish",  # a hard-swish chain taken into its convolution (graph_fusion.py)
}


def _fused_conv(kind):
    conv, fused = (
        (ops.depthwise_conv2d, ops.fused_depthwise_conv2d) if kind == "depthwise" else (ops.conv2d, ops.fused_conv2d)
    )

    def run(c):
        bias, activation, alpha = _fused_parts(c)
        args = {**_conv_args(c), "dilations": _dilations(c)}
        if activation in _ENGINE_FUSED:  # one kernel
            scale = c.attr("hard_swish_scale", 1 / 6)
            return fused(c.x(0), c.x(1), bias, _ENGINE_FUSED[activation], **args, hard_swish_scale=scale)
        y = fused(c.x(0), c.x(1), bias, "linear", **args) if bias is not None else conv(c.x(0), c.x(1), **args)
        return _activation(y, activation, alpha, c.attr("leakyrelu_alpha", 0.2))

    return Op(run, ["prelu", "leaky_relu", "sigmoid", "relu6", "elu", "tanh"])


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


def _cast(c):
    dtype = engine_dtype(c.attr("DstT"))
    return ops.cast(c.x(0), dtype)


def _strided_slice(c):
    masks = {f"{m}_mask": c.attr(f"{m}_mask", 0) for m in ("begin", "end", "ellipsis", "new_axis", "shrink_axis")}
    return ops.strided_slice(c.x(0), c.ints(1), c.ints(2), c.ints(3), **masks)


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


def _nms_args(c):
    """boxes, scores, max_output_size, iou_threshold, score_threshold of a NonMaxSuppression node."""
    numbers = [c.host(i).item() for i in range(2, min(len(c.inputs), 5))]
    return (c.x(0), c.x(1), int(numbers[0]), *numbers[1:])


def _nms_v5(c):
    boxes, scores, size, iou, score = _nms_args(c)
    return list(ops.non_max_suppression_with_score(boxes, scores, size, iou, score, c.host(5).item()))


def _nms_v4(c):
    boxes, scores, size, iou, score = _nms_args(c)
    return list(
        ops.non_max_suppression_padded(boxes, scores, size, iou, score, c.attr("pad_to_max_output_size", False))
    )


def _conv1d(c):
    padding = c.attr("padding", "VALID").lower()
    return ops.conv1d(c.x(0), c.x(1), c.attr("stride", 1), padding, c.attr("data_format", "NWC"), c.attr("dilation", 1))


def _dilation2d(c):
    return ops.dilation2d(c.x(0), c.x(1), _hw(c.attr("strides")), c.attr("padding").lower(), _hw(c.attr("rates")))


def _max_pool_with_argmax(c):
    result = ops.max_pool_with_argmax(
        c.x(0), _hw(c.attr("ksize")), **_conv_args(c), include_batch_in_index=c.attr("include_batch_in_index", False)
    )
    return list(result)


def _lrn(c):
    return ops.local_response_normalization(
        c.x(0), c.attr("depth_radius", 5), c.attr("bias", 1.0), c.attr("alpha", 1.0), c.attr("beta", 0.5)
    )


def _euclidean_norm(c):
    return ops.euclidean_norm(c.x(0), tuple(c.ints(1)), c.attr("keep_dims", False))


def _crop_and_resize(c):
    method, extrapolation = c.attr("method", "bilinear"), c.attr("extrapolation_value", 0.0)
    return ops.crop_and_resize(c.x(0), c.x(1), c.x(2), c.ints(3), method, extrapolation)


def _transform(c):
    """ImageProjectiveTransformV3(images, transforms, output_shape, fill_value)."""
    interpolation, fill_mode = c.attr("interpolation", "NEAREST").lower(), c.attr("fill_mode", "CONSTANT").lower()
    return ops.transform(c.x(0), c.x(1), interpolation, fill_mode, c.host(3).item(), c.ints(2))


def _pairs(value):
    return [tuple(p) for p in np.asarray(value).reshape(-1, 2).tolist()]


def _sparse_to_dense(c):
    return ops.sparse_to_dense(c.x(0), c.x(2), c.ints(1), c.host(3).item())


def _conv3d(c):
    strides, dilations = c.attr("strides")[1:4], c.attr("dilations", [1, 1, 1, 1, 1])[1:4]
    return nn.conv3d(c.x(0), c.x(1), tuple(strides), c.attr("padding").lower(), tuple(dilations))


def _pool3d(name):
    return Op(
        lambda c: getattr(nn, name)(
            c.x(0), tuple(c.attr("ksize")[1:4]), tuple(c.attr("strides")[1:4]), c.attr("padding").lower()
        )
    )


def _conv2d_backprop_input(c):
    """The gradient of a conv2d for its input: conv2d_transpose of out_backprop (input 2) with the filter."""
    size = c.ints(0)
    return nn.conv2d_transpose(c.x(2), c.x(1), size[1:3], _hw(c.attr("strides")), c.attr("padding").lower())


def _broadcast_args(c):
    return ops.tensor(np.array(np.broadcast_shapes(tuple(c.ints(0)), tuple(c.ints(1))), np.int32))


def _random(name):
    def run(c):
        seed = c.attr("seed", 0) or None
        dtype = engine_dtype(c.attr("dtype", "DT_FLOAT"))
        if name == "random_uniform":
            return ops.random_uniform(c.ints(0), c.attr("minval", 0.0), c.attr("maxval", 1.0), dtype, seed)
        return getattr(ops, name)(c.ints(0), 0.0, 1.0, dtype, seed)

    return Op(run, [name])


def _reverse_v1(c):
    dims = np.asarray(c.host(1)).reshape(-1)
    return ops.reverse(c.x(0), tuple(int(k) for k in np.flatnonzero(dims)))


def _ragged_gather(c):
    """RaggedGather(*params_nested_splits, params_dense_values, indices): the output's splits, then its values."""
    splits, values = ops.ragged_gather(list(c.inputs[:-2]), c.x(-2), c.x(-1), c.attr("OUTPUT_RAGGED_RANK"))
    return [*splits, values]


def _ragged_to_tensor(c):
    """RaggedTensorToTensor(shape, values, default_value, *row_partition_tensors)."""
    partitions = list(c.inputs[3:])
    return ops.ragged_tensor_to_tensor(c.x(0), c.x(1), c.x(2), partitions, c.attr("row_partition_types"))


def _like(fill):
    return Op(lambda c: ops.fill(list(c.x(0).shape), fill, c.x(0).dtype), ["fill"])


OPS = {
    # graph
    "Identity": Op(view),
    "Snapshot": Op(view),
    "PlaceholderWithDefault": Op(view),  # its input, where it is not fed
    "Print": Op(view),
    "StopGradient": Op(view),
    "EnsureShape": Op(view),
    "IdentityN": Op(lambda c: [ENGINE.view(x, x.shape) for x in c.inputs]),
    "Shape": Op(_shape),
    "ShapeN": Op(lambda c: [ops.tensor(list(x.shape), "int32") for x in c.inputs]),
    "Size": Op(lambda c: ops.scalar(c.x(0).size, "int32")),
    "Rank": Op(lambda c: ops.scalar(c.x(0).rank, "int32")),
    # arithmetic
    "Add": binary("add"),
    "AddV2": binary("add"),
    "BiasAdd": binary("add"),
    "AddN": Op(lambda c: ops.add_n(list(c.inputs)), ["add_n"]),
    "Sub": binary("sub"),
    "Mul": binary("mul"),
    "RealDiv": binary("div"),
    "Div": Op(_div, ["div", "floor_div"]),
    "DivNoNan": binary("div_no_nan"),
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
    "Expm1": unary("expm1"),
    "Floor": unary("floor"),
    "IsNan": unary("is_nan"),
    "LeakyRelu": Op(lambda c: ops.leaky_relu(c.x(0), c.attr("alpha", 0.2))),
    "Log": unary("log"),
    "Log1p": unary("log1p"),
    "Neg": unary("neg"),
    "Prelu": binary("prelu"),
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
    "Selu": unary("selu"),
    "Cosh": unary("cosh"),
    "Sinh": unary("sinh"),
    "Tan": unary("tan"),
    "Acos": unary("acos"),
    "Asin": unary("asin"),
    "Atan": unary("atan"),
    "Atan2": binary("atan2"),
    "Asinh": unary("asinh"),
    "Acosh": unary("acosh"),
    "Atanh": unary("atanh"),
    "IsInf": unary("is_inf"),
    "IsFinite": unary("is_finite"),
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
    "BitwiseAnd": binary("bitwise_and"),
    "Select": Op(lambda c: ops.where(c.x(0), c.x(1), c.x(2))),
    "SelectV2": Op(lambda c: ops.where(c.x(0), c.x(1), c.x(2))),
    # matrices
    "MatMul": Op(lambda c: ops.matmul(c.x(0), c.x(1), c.attr("transpose_a", False), c.attr("transpose_b", False))),
    "BatchMatMul": Op(lambda c: ops.matmul(c.x(0), c.x(1), c.attr("adj_x", False), c.attr("adj_y", False))),
    "BatchMatMulV2": Op(lambda c: ops.matmul(c.x(0), c.x(1), c.attr("adj_x", False), c.attr("adj_y", False))),
    "_FusedMatMul": Op(_fused_matmul, ["matmul", "relu", "relu6", "sigmoid", "elu", "tanh", "prelu", "leaky_relu"]),
    "Transpose": Op(lambda c: ops.transpose(c.x(0), c.ints(1))),
    # TF's inputs (TF.js 4.22 reads num_lower for num_upper too)
    "MatrixBandPart": Op(
        lambda c: ops.matrix_band_part(c.x(0), c.host(1).item(), c.host(2).item()), ["matrix_band_part"]
    ),
    "Einsum": Op(lambda c: ops.einsum(c.attr("equation"), *c.inputs), ["einsum"]),
    # convolution
    "Conv2D": _conv("conv2d"),
    "DepthwiseConv2dNative": _conv("depthwise_conv2d"),
    "DepthwiseConv2d": _conv("depthwise_conv2d"),
    "_FusedConv2D": _fused_conv("conv2d"),
    "FusedDepthwiseConv2dNative": _fused_conv("depthwise"),
    "MaxPool": _pool("max_pool"),
    "AvgPool": _pool("avg_pool"),
    "Conv1D": Op(_conv1d, ["conv1d"]),
    "Dilation2D": Op(_dilation2d, ["dilation2d"]),
    "MaxPoolWithArgmax": Op(_max_pool_with_argmax, ["max_pool_with_argmax"]),
    "Conv3D": Op(_conv3d),
    "MaxPool3D": _pool3d("max_pool3d"),
    "AvgPool3D": _pool3d("avg_pool3d"),
    "Conv2DBackpropInput": Op(_conv2d_backprop_input),
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
    "Cumprod": Op(
        lambda c: ops.cumprod(c.x(0), c.ints(1)[0], c.attr("exclusive", False), c.attr("reverse", False)), ["cumprod"]
    ),
    "Bincount": Op(lambda c: ops.bincount(c.x(0), c.x(2), c.ints(1)[0]), ["bincount"]),
    "DenseBincount": Op(
        lambda c: ops.dense_bincount(c.x(0), c.x(2), c.ints(1)[0], c.attr("binary_output", False)), ["dense_bincount"]
    ),
    # normalization
    "Softmax": Op(lambda c: ops.softmax(c.x(0), -1)),
    "LogSoftmax": Op(lambda c: ops.log_softmax(c.x(0), -1)),
    "EuclideanNorm": Op(_euclidean_norm, ["euclidean_norm"]),
    "LRN": Op(_lrn, ["local_response_normalization"]),
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
    "Unpack": Op(lambda c: ops.unstack(c.x(0), c.attr("axis", 0))),
    "Tile": Op(lambda c: ops.tile(c.x(0), c.ints(1))),
    "Slice": Op(_slice),
    "StridedSlice": Op(_strided_slice, ["strided_slice"]),
    "Split": Op(_split),
    "SplitV": Op(_split_v),
    "ReverseV2": Op(lambda c: ops.reverse(c.x(0), tuple(c.ints(1)))),
    "Reverse": Op(_reverse_v1),
    "ScatterNd": Op(lambda c: ops.scatter_nd(c.x(0), c.x(1), c.ints(2)), ["scatter_nd"]),
    "TensorScatterUpdate": Op(lambda c: ops.tensor_scatter_update(c.x(0), c.x(1), c.x(2)), ["tensor_scatter_update"]),
    "SparseToDense": Op(_sparse_to_dense, ["sparse_to_dense"]),
    # transformation
    "Cast": Op(_cast),
    "ExpandDims": Op(lambda c: ops.expand_dims(c.x(0), c.ints(1)[0])),
    "Reshape": Op(lambda c: ops.reshape(c.x(0), c.ints(1))),
    "Squeeze": Op(_squeeze),
    "Pad": Op(_pad),
    "PadV2": Op(_pad),
    "BroadcastTo": Op(lambda c: ops.broadcast_to(c.x(0), c.ints(1))),
    "BroadcastArgs": Op(_broadcast_args),
    "DepthToSpace": Op(
        lambda c: ops.depth_to_space(c.x(0), c.attr("block_size"), c.attr("data_format", "NHWC")), ["depth_to_space"]
    ),
    "SpaceToBatchND": Op(lambda c: ops.space_to_batch_nd(c.x(0), c.ints(1), _pairs(c.host(2))), ["space_to_batch_nd"]),
    "BatchToSpaceND": Op(lambda c: ops.batch_to_space_nd(c.x(0), c.ints(1), _pairs(c.host(2))), ["batch_to_space_nd"]),
    "MirrorPad": Op(lambda c: ops.mirror_pad(c.x(0), _pairs(c.host(1)), c.attr("mode").lower()), ["mirror_pad"]),
    # creation
    "Fill": Op(_fill),
    "Range": Op(_range),
    "ZerosLike": _like(0),
    "OnesLike": _like(1),
    "OneHot": Op(_one_hot),
    "Zeros": Op(lambda c: ops.zeros(c.ints(0), engine_dtype(c.attr("dtype", "DT_FLOAT")))),
    "Ones": Op(lambda c: ops.ones(c.ints(0), engine_dtype(c.attr("dtype", "DT_FLOAT")))),
    "LinSpace": Op(lambda c: ops.linspace(c.host(0).item(), c.host(1).item(), c.host(2).item())),
    "RandomStandardNormal": _random("random_normal"),
    "RandomUniform": _random("random_uniform"),
    "TruncatedNormal": _random("truncated_normal"),
    "RandomUniformInt": Op(
        lambda c: ops.random_uniform(
            c.ints(0), c.attr("minval", 0), c.attr("maxval"), "int32", c.attr("seed", 0) or None
        )
    ),
    "Multinomial": Op(lambda c: ops.multinomial(c.x(0), c.ints(1)[0], c.attr("seed", 0) or None), ["multinomial"]),
    # evaluation
    "TopKV2": Op(_top_k),
    "LowerBound": binary("lower_bound"),
    "UpperBound": binary("upper_bound"),
    "Unique": Op(lambda c: list(ops.unique(c.x(0))), ["unique"]),
    "UniqueV2": Op(lambda c: list(ops.unique(c.x(0), c.ints(1)[0])), ["unique"]),
    # dynamic: output sizes depend on values (TF.js's executeAsync runs them; here too)
    "NonMaxSuppressionV2": Op(lambda c: ops.non_max_suppression(*_nms_args(c)), ["non_max_suppression"]),
    "NonMaxSuppressionV3": Op(lambda c: ops.non_max_suppression(*_nms_args(c)), ["non_max_suppression"]),
    "NonMaxSuppressionV4": Op(_nms_v4, ["non_max_suppression_padded"]),
    "NonMaxSuppressionV5": Op(_nms_v5, ["non_max_suppression_with_score"]),
    "Where": Op(lambda c: ops.argwhere(ops.cast(c.x(0), "bool")), ["argwhere"]),
    "ListDiff": Op(lambda c: list(ops.setdiff1d(c.x(0), c.x(1))), ["setdiff1d"]),
    # sparse and ragged tensors, as TF.js holds them: indices, values and shapes, or row splits and values
    "SparseFillEmptyRows": Op(lambda c: list(ops.sparse_fill_empty_rows(*c.inputs[:4])), ["sparse_fill_empty_rows"]),
    "SparseReshape": Op(lambda c: list(ops.sparse_reshape(*c.inputs[:3])), ["sparse_reshape"]),
    "SparseSegmentSum": Op(lambda c: ops.sparse_segment_sum(*c.inputs[:3]), ["sparse_segment_sum"]),
    "SparseSegmentMean": Op(lambda c: ops.sparse_segment_mean(*c.inputs[:3]), ["sparse_segment_mean"]),
    "RaggedGather": Op(_ragged_gather, ["ragged_gather"]),
    "RaggedRange": Op(lambda c: list(ops.ragged_range(*c.inputs[:3])), ["ragged_range"]),
    "RaggedTensorToTensor": Op(_ragged_to_tensor, ["ragged_tensor_to_tensor"]),
    # image
    "ResizeBilinear": _resize("resize_bilinear"),
    "ResizeNearestNeighbor": _resize("resize_nearest"),
    "CropAndResize": Op(_crop_and_resize, ["crop_and_resize"]),
    "ImageProjectiveTransformV3": Op(_transform, ["transform"]),
}

# The ops the executor runs itself (graph_control.py): frames of while loops, and TensorLists.
CONTROL_OPS = ("Enter", "Exit", "Switch", "Merge", "NextIteration", "LoopCond")
LIST_OPS = (
    "EmptyTensorList",
    "TensorListReserve",
    "TensorListFromTensor",
    "TensorListScatter",
    "TensorListScatterV2",
    "TensorListSplit",
    "TensorListGetItem",
    "TensorListSetItem",
    "TensorListPushBack",
    "TensorListPopBack",
    "TensorListResize",
    "TensorListLength",
    "TensorListStack",
    "TensorListGather",
    "TensorListConcat",
    "TensorListConcatV2",
    # TF1's TensorArrays, on the same lists
    "TensorArrayV3",
    "TensorArrayWriteV3",
    "TensorArrayReadV3",
    "TensorArrayGatherV3",
    "TensorArrayScatterV3",
    "TensorArrayConcatV3",
    "TensorArraySplitV3",
    "TensorArraySizeV3",
    "TensorArrayCloseV3",
)
# TF2's functional control flow: they call the graph's library functions (graph_control.py runs them).
FUNCTION_OPS = ("If", "StatelessIf", "While", "StatelessWhile")
# Nodes whose values the executor provides (inputs, weights) or that compute nothing.
SOURCE_OPS = ("Const", "Placeholder", "NoOp")
_NO_COMPLEX = "the engine has no complex dtype"
_NO_STRINGS = "the engine has no string tensors"

# The ops TF.js 4.22 runs that this engine does not, and why (tests/test_tfjs_graph_coverage.py keeps it exact).
NOT_HERE = {
    "Complex": _NO_COMPLEX,
    "ComplexAbs": _NO_COMPLEX,
    "Imag": _NO_COMPLEX,
    "Real": _NO_COMPLEX,
    "FFT": _NO_COMPLEX,
    "IFFT": _NO_COMPLEX,
    "RFFT": _NO_COMPLEX,
    "IRFFT": _NO_COMPLEX,
    "FakeQuantWithMinMaxVars": "no engine op (fake quantization is for training quantized models)",
    "StaticRegexReplace": _NO_STRINGS,
    "StringNGrams": _NO_STRINGS,
    "StringSplit": _NO_STRINGS,
    "StringToHashBucketFast": _NO_STRINGS,
    **dict.fromkeys(
        (
            "HashTable",
            "HashTableV2",
            "LookupTableImport",
            "LookupTableImportV2",
            "LookupTableFind",
            "LookupTableFindV2",
            "LookupTableSize",
            "LookupTableSizeV2",
            "InitializeTable",
            "InitializeTableV2",
        ),
        "hash tables hold strings and resources: " + _NO_STRINGS,
    ),
    "SimpleMLCreateModelResource": "TensorFlow Decision Forests' ops (TF.js runs them with @tensorflow/tfjs-tfdf)",
    "SimpleMLLoadModelFromPathWithHandle": "TensorFlow Decision Forests' ops (TF.js runs them with @tensorflow/tfjs-tfdf)",
    "SimpleMLInferenceOpWithHandle": "TensorFlow Decision Forests' ops (TF.js runs them with @tensorflow/tfjs-tfdf)",
}

# Ops whose output sizes depend on values: a graph with one runs with execute_async, as in TF.js.
DYNAMIC_OPS = (
    "NonMaxSuppressionV2",
    "NonMaxSuppressionV3",
    "NonMaxSuppressionV4",
    "NonMaxSuppressionV5",
    "Where",
    "ListDiff",
)


def missing_engine_ops(op):
    """The py_engine ops an op of the table needs that this engine does not have (none: it runs)."""
    return [name for name in OPS[op].needs if not hasattr(ops, name)]
