"""The TF op table (py_engine/models/graph_ops.py) op by op against the real TF.js: each case is a graph of one op
(its tensor inputs placeholders, its other inputs Const weights), run by tf.loadGraphModel + executeAsync in Node
(tests/tfjs/run_graph_models.mjs, one run for every case) and here, on numpy and webgpu."""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from tests.graph_model_cases import TF_DTYPES, attr, write_graph_model
from tests.tfjs_node import run_tfjs

RNG = np.random.default_rng(7)
NUMPY = {"float32": "<f4", "int32": "<i4", "bool": "u1"}


def f(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def i(values):
    return np.array(values, np.int32)


def x(array):
    return ("input", array)


def c(array):
    return ("const", np.asarray(array, np.float32) if isinstance(array, float) else np.asarray(array))


PADS = [0, 0, 1, 2, 2, 1, 0, 0]
CONV = {"strides": [1, 1, 1, 1], "dilations": [1, 1, 1, 1], "data_format": "NHWC"}
BOXES = np.array(
    [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1], [0, 100, 1, 101]],
    np.float32,
)
NMS_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)

# name: (op, inputs, attrs, number of outputs); GRAPHS below join them
CASES = {
    "selu": ("Selu", [x(f(2, 5))], {}, 1),
    "cosh": ("Cosh", [x(f(6))], {}, 1),
    "sinh": ("Sinh", [x(f(6))], {}, 1),
    "tan": ("Tan", [x(f(6, lo=-1, hi=1))], {}, 1),
    "asinh": ("Asinh", [x(f(6))], {}, 1),
    "acosh": ("Acosh", [x(f(6, lo=1.1, hi=4))], {}, 1),
    "atanh": ("Atanh", [x(f(6, lo=-0.9, hi=0.9))], {}, 1),
    "is_inf": ("IsInf", [x(np.array([1, np.inf, -np.inf, np.nan], np.float32))], {}, 1),
    "is_finite": ("IsFinite", [x(np.array([1, np.inf, -np.inf, np.nan], np.float32))], {}, 1),
    "expm1": ("Expm1", [x(f(5))], {}, 1),
    "prelu": ("Prelu", [x(f(2, 3, 4)), c(f(4))], {}, 1),
    "leaky_relu": ("LeakyRelu", [x(f(8))], {"alpha": 0.1}, 1),
    "div_no_nan": ("DivNoNan", [x(f(6)), x(np.array([1, 0, 2, 0, -1, 3], np.float32))], {}, 1),
    "div_int": ("Div", [x(i([7, -7, 9, 3])), x(i([2, 2, -4, 3]))], {"T": "DT_INT32"}, 1),
    "floor_mod": ("FloorMod", [x(f(6)), c(np.float32(0.7))], {}, 1),
    "round": ("Round", [x(np.array([0.5, 1.5, 2.5, -0.5, -1.4, 2.6], np.float32))], {}, 1),
    "clip": ("ClipByValue", [x(f(7)), c(-0.5), c(0.5)], {}, 1),
    "conv1d": (
        "Conv1D",
        [x(f(1, 8, 3)), c(f(3, 3, 4))],
        {"stride": 2, "padding": "SAME", "data_format": "NWC", "dilation": 1},
        1,
    ),
    "conv3d": (
        "Conv3D",
        [x(f(1, 4, 5, 5, 2)), c(f(2, 2, 2, 2, 3))],
        {"strides": [1, 1, 2, 1, 1], "padding": "SAME", "dilations": [1, 1, 1, 1, 1], "data_format": "NDHWC"},
        1,
    ),
    "max_pool3d": (
        "MaxPool3D",
        [x(f(1, 4, 4, 4, 2))],
        {"ksize": [1, 2, 2, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "VALID", "data_format": "NDHWC"},
        1,
    ),
    "avg_pool3d": (
        "AvgPool3D",
        [x(f(1, 4, 4, 4, 2))],
        {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 2, 1], "padding": "SAME", "data_format": "NDHWC"},
        1,
    ),
    "conv2d_backprop_input": (
        "Conv2DBackpropInput",
        [c(i([1, 6, 6, 2])), c(f(3, 3, 2, 4)), x(f(1, 3, 3, 4))],
        {"strides": [1, 2, 2, 1], "padding": "SAME", "data_format": "NHWC"},
        1,
    ),
    "conv2d_same_stride2": (
        "Conv2D",
        [x(f(1, 6, 6, 3)), c(f(3, 3, 3, 2))],
        {**CONV, "strides": [1, 2, 2, 1], "padding": "SAME"},
        1,
    ),
    "depthwise_dilated": (
        "DepthwiseConv2dNative",
        [x(f(1, 7, 7, 2)), c(f(3, 3, 2, 2))],
        {**CONV, "dilations": [1, 2, 2, 1], "padding": "SAME"},
        1,
    ),
    "fused_conv_prelu": (
        "_FusedConv2D",
        [x(f(1, 5, 5, 3)), c(f(3, 3, 3, 4)), c(f(4)), c(f(4))],
        {**CONV, "padding": "SAME", "fused_ops": ["BiasAdd", "Prelu"], "num_args": 2, "epsilon": 0.0},
        1,
    ),
    "fused_conv_leaky": (
        "_FusedConv2D",
        [x(f(1, 5, 5, 3)), c(f(3, 3, 3, 4)), c(f(4))],
        {
            **CONV,
            "padding": "VALID",
            "fused_ops": ["BiasAdd", "LeakyRelu"],
            "num_args": 1,
            "leakyrelu_alpha": 0.3,
            "epsilon": 0.0,
        },
        1,
    ),
    "fused_depthwise_explicit": (
        "FusedDepthwiseConv2dNative",
        [x(f(1, 5, 5, 2)), c(f(3, 3, 2, 1)), c(f(2))],
        {**CONV, "padding": "EXPLICIT", "explicit_paddings": PADS, "fused_ops": ["BiasAdd", "Relu6"], "num_args": 1},
        1,
    ),
    "fused_matmul_prelu": (
        "_FusedMatMul",
        [x(f(3, 4)), c(f(4, 5)), c(f(5)), c(f(5))],
        {"transpose_a": False, "transpose_b": False, "fused_ops": ["BiasAdd", "Prelu"], "num_args": 2, "epsilon": 0.0},
        1,
    ),
    "fused_matmul_transposed": (
        "_FusedMatMul",
        [x(f(4, 3)), c(f(5, 4)), c(f(5))],
        {"transpose_a": True, "transpose_b": True, "fused_ops": ["BiasAdd", "Relu"], "num_args": 1, "epsilon": 0.0},
        1,
    ),
    "batch_norm": (
        "FusedBatchNormV3",
        [x(f(2, 3, 3, 4)), c(f(4)), c(f(4)), c(f(4)), c(f(4, lo=0.5, hi=2))],
        {"epsilon": 0.001, "data_format": "NHWC", "is_training": False},
        1,
    ),
    "lower_bound": ("LowerBound", [c(np.sort(f(2, 5), 1)), x(f(2, 3))], {}, 1),
    "upper_bound": (
        "UpperBound",
        [c(np.array([[1, 2, 2, 3, 5]], np.float32)), x(np.array([[2, 0, 5, 6]], np.float32))],
        {},
        1,
    ),
    "band_part": ("MatrixBandPart", [x(f(2, 4, 5)), c(i(1)), c(i(1))], {}, 1),
    "euclidean_norm": ("EuclideanNorm", [x(f(3, 4)), c(i([1]))], {"keep_dims": True}, 1),
    "depth_to_space": ("DepthToSpace", [x(f(1, 2, 3, 8))], {"block_size": 2, "data_format": "NHWC"}, 1),
    "scatter_nd": ("ScatterNd", [c(i([[0], [2], [0]])), x(f(3, 4)), c(i([4, 4]))], {}, 1),
    "reverse_v1": ("Reverse", [x(f(2, 3)), c(np.array([False, True]))], {}, 1),
    "linspace": ("LinSpace", [c(0.0), c(1.0), c(i(5))], {"T": "DT_FLOAT"}, 1),
    "strided_masks": (
        "StridedSlice",
        [x(f(4, 5, 6)), c(i([1, 0, 2])), c(i([3, 0, -1])), c(i([1, 1, 2]))],
        {"begin_mask": 2, "end_mask": 2, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0},
        1,
    ),
    "strided_shrink_ellipsis": (
        "StridedSlice",
        [x(f(4, 5, 6)), c(i([1, 0, 1])), c(i([2, 0, 3])), c(i([1, 1, 1]))],
        {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 2, "new_axis_mask": 0, "shrink_axis_mask": 1},
        1,
    ),
    "strided_new_axis": (
        "StridedSlice",
        [x(f(3, 4)), c(i([0, 0])), c(i([0, 0])), c(i([1, 1]))],
        {"begin_mask": 2, "end_mask": 2, "ellipsis_mask": 0, "new_axis_mask": 1, "shrink_axis_mask": 0},
        1,
    ),
    "strided_reverse": (
        "StridedSlice",
        [x(f(6)), c(i([4])), c(i([0])), c(i([-2]))],
        {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0},
        1,
    ),
    "slice": ("Slice", [x(f(4, 5)), c(i([1, 2])), c(i([-1, 2]))], {}, 1),
    "split_v": ("SplitV", [x(f(6, 4)), c(i([1, -1, 2])), c(i(0))], {"num_split": 3}, 3),
    "split": ("Split", [c(i(1)), x(f(2, 6))], {"num_split": 3}, 3),
    "pad_v2": ("PadV2", [x(f(2, 3)), c(i([[1, 0], [2, 1]])), c(1.5)], {}, 1),
    "tile": ("Tile", [x(f(2, 3)), c(i([2, 1]))], {}, 1),
    "gather_batch": ("GatherV2", [x(f(2, 4, 3)), c(i([[0, 2], [3, 1]])), c(i(1))], {"batch_dims": 1}, 1),
    "gather_nd": ("GatherNd", [x(f(3, 4, 2)), c(i([[0, 1], [2, 3]]))], {}, 1),
    "arg_min": ("ArgMin", [x(f(3, 5)), c(i(1))], {}, 1),
    "cumsum": ("Cumsum", [x(f(2, 5)), c(i(1))], {"exclusive": True, "reverse": True}, 1),
    "mean_keep": ("Mean", [x(f(2, 3, 4)), c(i([0, 2]))], {"keep_dims": True}, 1),
    "prod": ("Prod", [x(f(2, 3)), c(i([1]))], {"keep_dims": False}, 1),
    "any": ("Any", [x(np.array([[True, False], [False, False]])), c(i([1]))], {"keep_dims": False}, 1),
    "nms_v3": ("NonMaxSuppressionV3", [x(BOXES), x(NMS_SCORES), c(i(4)), c(0.5), c(0.4)], {}, 1),
    "nms_v4": (
        "NonMaxSuppressionV4",
        [x(BOXES), x(NMS_SCORES), c(i(5)), c(0.5), c(0.0)],
        {"pad_to_max_output_size": True},
        2,
    ),
    "nms_v5": ("NonMaxSuppressionV5", [x(BOXES), x(NMS_SCORES), c(i(5)), c(0.5), c(0.0), c(0.5)], {}, 2),
    "where": ("Where", [x(np.array([[True, False, True], [False, True, False]]))], {}, 1),
    "top_k": ("TopKV2", [x(f(3, 10)), c(i(4))], {"sorted": True}, 2),
    "one_hot": ("OneHot", [x(i([0, 3, 1, 4])), c(i(5)), c(2.0), c(-1.0)], {"axis": -1, "T": "DT_FLOAT"}, 1),
    "range": ("Range", [c(i(2)), c(i(11)), c(i(3))], {"Tidx": "DT_INT32"}, 1),
    "fill": ("Fill", [c(i([2, 3])), c(1.5)], {"T": "DT_FLOAT"}, 1),
    "shape": ("Shape", [x(f(2, 3, 4))], {"out_type": "DT_INT32"}, 1),
    "resize_nearest_align": (
        "ResizeNearestNeighbor",
        [x(f(1, 4, 5, 2)), c(i([7, 3]))],
        {"align_corners": True, "half_pixel_centers": False},
        1,
    ),
    "resize_bilinear_half": (
        "ResizeBilinear",
        [x(f(1, 4, 5, 2)), c(i([3, 8]))],
        {"align_corners": False, "half_pixel_centers": True},
        1,
    ),
    "squeeze": ("Squeeze", [x(f(1, 3, 1, 2))], {"squeeze_dims": [0, 2]}, 1),
    "batch_matmul": ("BatchMatMulV2", [x(f(2, 3, 4)), x(f(2, 5, 4))], {"adj_x": False, "adj_y": True}, 1),
    "select": ("Select", [x(np.array([[True, False], [False, True]])), x(f(2, 2)), x(f(2, 2))], {}, 1),
    "unpack": ("Unpack", [x(f(3, 2, 4))], {"axis": 1, "num": 2}, 2),
    "pack": ("Pack", [x(f(2, 3)), x(f(2, 3))], {"axis": 1, "N": 2}, 1),
    "concat_v1": ("Concat", [c(i(1)), x(f(2, 3)), x(f(2, 2))], {"N": 2}, 1),
    "add_n": ("AddN", [x(f(3)), x(f(3)), x(f(3))], {"N": 3}, 1),
    "mod_int": ("FloorMod", [x(i([7, -7, 7, -7])), c(i([3, 3, -3, -3]))], {}, 1),
    "cast_truncates": (
        "Cast",
        [x(np.array([1.7, -1.7, 2.5], np.float32))],
        {"DstT": "DT_INT32", "SrcT": "DT_FLOAT"},
        1,
    ),
    "expand_dims": ("ExpandDims", [x(f(2, 3)), c(i(-1))], {}, 1),
    "log_softmax": ("LogSoftmax", [x(f(2, 5))], {}, 1),
    "squared_difference": ("SquaredDifference", [x(f(4)), x(f(4))], {}, 1),
    "broadcast_to": ("BroadcastTo", [x(f(1, 3)), c(i([2, 3]))], {}, 1),
    "zeros_like": ("ZerosLike", [x(i([1, 2]))], {}, 1),
    "erf": ("Erf", [x(f(6))], {}, 1),
    "acos": ("Acos", [x(f(5, lo=-1, hi=1))], {}, 1),
    "asin": ("Asin", [x(f(5, lo=-1, hi=1))], {}, 1),
    "atan": ("Atan", [x(f(5))], {}, 1),
    "atan2": ("Atan2", [x(f(5)), x(f(5))], {}, 1),
    "einsum": ("Einsum", [x(f(2, 3)), x(f(3, 4))], {"equation": "ij,jk->ik", "N": 2}, 1),
    "lrn": ("LRN", [x(f(1, 2, 2, 6))], {"depth_radius": 2, "bias": 1.0, "alpha": 0.5, "beta": 0.75}, 1),
    "cumprod": ("Cumprod", [x(f(2, 4)), c(i(1))], {"exclusive": False, "reverse": True}, 1),
    "bincount": ("Bincount", [x(i([1, 3, 1, 0, 3, 3])), c(i(5)), c(f(6))], {}, 1),
    "dense_bincount": (
        "DenseBincount",
        [x(i([[1, 2, 1], [0, 0, 3]])), c(i(4)), c(np.zeros(0, np.float32))],
        {"binary_output": True},
        1,
    ),
    "sparse_to_dense": ("SparseToDense", [c(i([[0, 1], [2, 0]])), c(i([3, 3])), x(f(2)), c(0.5)], {}, 1),
    "tensor_scatter_update": ("TensorScatterUpdate", [x(f(4, 2)), c(i([[1], [3]])), x(f(2, 2))], {}, 1),
    "mirror_pad": ("MirrorPad", [x(f(3, 4)), c(i([[1, 2], [2, 1]]))], {"mode": "REFLECT"}, 1),
    "space_to_batch": ("SpaceToBatchND", [x(f(1, 4, 4, 2)), c(i([2, 2])), c(i([[0, 0], [0, 0]]))], {}, 1),
    "batch_to_space": ("BatchToSpaceND", [x(f(4, 2, 2, 1)), c(i([2, 2])), c(i([[0, 0], [1, 0]]))], {}, 1),
    "unique": ("Unique", [x(i([3, 1, 3, 2, 1]))], {}, 2),
    "unique_v2": ("UniqueV2", [x(np.array([[1, 2], [3, 4], [1, 2]], np.float32)), c(i([0]))], {}, 2),
    "list_diff": ("ListDiff", [x(i([1, 2, 3, 4, 5])), x(i([2, 4]))], {}, 2),
    "crop_and_resize": (
        "CropAndResize",
        [x(f(2, 5, 6, 2)), c(np.array([[0, 0, 1, 1], [0.2, 0.1, 0.8, 0.7]], np.float32)), c(i([1, 0])), c(i([3, 4]))],
        {"method": "bilinear", "extrapolation_value": 0.0},
        1,
    ),
    "transform": (
        "ImageProjectiveTransformV3",
        [x(f(1, 5, 5, 1)), c(np.array([[1, 0.1, 0.5, 0, 1, -0.5, 0, 0]], np.float32)), c(i([5, 5])), c(0.0)],
        {"interpolation": "BILINEAR", "fill_mode": "CONSTANT"},
        1,
    ),
    "dilation2d": (
        "Dilation2D",
        [x(f(1, 5, 5, 2)), c(f(2, 2, 2))],
        {"strides": [1, 1, 1, 1], "rates": [1, 2, 2, 1], "padding": "SAME"},
        1,
    ),
    "sparse_fill_empty_rows": ("SparseFillEmptyRows", [c(i([[0, 0], [2, 1]])), x(f(2)), c(i([4, 3])), c(-1.0)], {}, 4),
    "sparse_reshape": ("SparseReshape", [c(i([[0, 1], [1, 2]])), c(i([2, 3])), c(i([3, -1]))], {}, 2),
    "sparse_segment_sum": ("SparseSegmentSum", [x(f(4, 2)), c(i([0, 2, 3])), c(i([0, 0, 1]))], {}, 1),
    "sparse_segment_mean": ("SparseSegmentMean", [x(f(4, 2)), c(i([0, 2, 3])), c(i([0, 0, 1]))], {}, 1),
    "max_pool_argmax": (
        "MaxPoolWithArgmax",
        [x(f(1, 4, 4, 2))],
        {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID", "include_batch_in_index": False},
        2,
    ),
}


def node(name, op, inputs, **attrs):
    return {"name": name, "op": op, "input": inputs, "attr": {k: attr(v) for k, v in attrs.items()}}


F32 = "DT_FLOAT"
# graphs of several nodes (TensorLists): name: (nodes, inputs, None, the tensors they output)
GRAPHS = {
    "list_push_pop": (
        [
            node("empty", "EmptyTensorList", ["const2", "const3"], element_dtype=F32),
            node("push0", "TensorListPushBack", ["empty", "input0"], element_dtype=F32),
            node("push1", "TensorListPushBack", ["push0", "input1"], element_dtype=F32),
            node("push2", "TensorListPushBack", ["push1", "input0"], element_dtype=F32),
            node("pop", "TensorListPopBack", ["push2", "const2"], element_dtype=F32),
            # the list changes in place (in TF.js too, whose PopBack outputs the tensor alone): read it after
            node("length", "TensorListLength", ["push2", "^pop"]),
            node("stack", "TensorListStack", ["push2", "const2", "^pop"], element_dtype=F32, num_elements=-1),
        ],
        [x(f(3)), x(f(3)), c(i([3])), c(i(-1))],
        None,
        ["length", "stack"],
    ),
    "list_scatter_gather": (
        [
            node("scatter", "TensorListScatterV2", ["input0", "const1", "const2", "const3"], element_dtype=F32),
            node("gather", "TensorListGather", ["scatter", "const4", "const2"], element_dtype=F32),
            node("item", "TensorListGetItem", ["scatter", "const5", "const2"], element_dtype=F32),
            node("resize", "TensorListResize", ["scatter", "const5", "^item", "^gather"]),  # in place: after the reads
            node("length", "TensorListLength", ["resize"]),
        ],
        [x(f(4, 2)), c(i([3, 0, 2, 1])), c(i([2])), c(i(4)), c(i([0, 3, 1])), c(i(2))],
        None,
        ["gather", "item", "length"],
    ),
    "list_set_stack": (
        [
            node("reserve", "TensorListReserve", ["const1", "const2"], element_dtype=F32),
            node("from", "TensorListFromTensor", ["input0", "const1"], element_dtype=F32),
            node("read", "TensorListGetItem", ["from", "const3", "const1"], element_dtype=F32),
            node("set0", "TensorListSetItem", ["reserve", "const3", "read"], element_dtype=F32),
            node("set1", "TensorListSetItem", ["set0", "const4", "input5"], element_dtype=F32),
            node("stack", "TensorListStack", ["set1", "const1"], element_dtype=F32, num_elements=2),
        ],
        [x(f(3, 2)), c(i([2])), c(i(2)), c(i(1)), c(i(0)), x(f(2))],
        None,
        ["stack"],
    ),
}


def function(name, inputs, outputs, nodes, ret):
    """A library FunctionDef: inputs and outputs [(argument, DT_...)], its nodes, ret {output: "node:argument:k"}."""
    args = [{"name": n, "type": t} for n, t in inputs]
    signature = {"name": name, "inputArg": args, "outputArg": [{"name": n, "type": t} for n, t in outputs]}
    return {"signature": signature, "nodeDef": nodes, "ret": ret}


def func(name):
    return {"func": {"name": name}}


LOOP_ARGS = [("i", "DT_INT32"), ("acc", F32), ("x", F32)]
FUNCTIONS = [
    function(
        "below_four",
        LOOP_ARGS,
        [("holds", "DT_BOOL")],
        [node("four", "Const", [], dtype="DT_INT32"), node("less", "Less", ["i", "four:output:0"])],
        {"holds": "less:z:0"},
    ),
    function(
        "accumulate",
        LOOP_ARGS,
        LOOP_ARGS,
        [
            node("one", "Const", [], dtype="DT_INT32"),
            node("next_i", "AddV2", ["i", "one:output:0"]),
            node("i_float", "Cast", ["i"], DstT=F32, SrcT="DT_INT32"),
            node("scaled", "Mul", ["x", "i_float:y:0"]),
            node("next_acc", "AddV2", ["acc", "scaled:z:0"]),
            node("top", "TopKV2", ["next_acc:z:0", "one:output:0"], sorted=True),
            node("shifted", "Sub", ["next_acc:z:0", "top:values:0"]),
            node("same_x", "Identity", ["x"]),
        ],
        {"i": "next_i:z:0", "acc": "shifted:z:0", "x": "same_x:output:0"},
    ),
    function("double", [("x", F32)], [("y", F32)], [node("twice", "AddV2", ["x", "x"])], {"y": "twice:z:0"}),
    function(
        "less_one",
        [("x", F32)],
        [("y", F32)],
        [node("one_f", "Const", [], dtype=F32), node("minus", "Sub", ["x", "one_f:output:0"])],
        {"y": "minus:z:0"},
    ),
]
FUNCTION_WEIGHTS = [("four", i(4)), ("one", i(1)), ("one_f", np.float32(1.0))]
# a While whose loop variables include a TensorList: item i is x doubled i times. (An item computed inside the body
# would not do: TF.js 4.22 disposes a function's intermediate tensors when it returns, the list's items too.)
LIST_LOOP_ARGS = [("i", "DT_INT32"), ("items", "DT_VARIANT"), ("x", F32)]
LIST_FUNCTIONS = [
    function(
        "below_three",
        LIST_LOOP_ARGS,
        [("holds", "DT_BOOL")],
        [node("three", "Const", [], dtype="DT_INT32"), node("less", "Less", ["i", "three:output:0"])],
        {"holds": "less:z:0"},
    ),
    function(
        "fill",
        LIST_LOOP_ARGS,
        LIST_LOOP_ARGS,
        [
            node("step", "Const", [], dtype="DT_INT32"),
            node("two", "Const", [], dtype=F32),
            node("set", "TensorListSetItem", ["items", "i", "x"], element_dtype=F32),
            node("next_i", "AddV2", ["i", "step:output:0"]),
            node("next_x", "Mul", ["x", "two:output:0"]),
        ],
        {"i": "next_i:z:0", "items": "set:output_handle:0", "x": "next_x:z:0"},
    ),
]
LIST_FUNCTION_WEIGHTS = [("three", i(3)), ("step", i(1)), ("two", np.float32(2.0))]
# the library functions (and their Const weights) of the graphs that call any
CASE_FUNCTIONS = {"while_and_if": (FUNCTIONS, FUNCTION_WEIGHTS), "while_list": (LIST_FUNCTIONS, LIST_FUNCTION_WEIGHTS)}


def _with_attrs(n, **attrs):
    """n with AttrValues given as JSON (shapes, functions)."""
    n["attr"].update(attrs)
    return n


def _with_funcs(n, **funcs):
    return _with_attrs(n, **{k: func(v) for k, v in funcs.items()})


GRAPHS |= {
    "tensor_array": (
        [
            node(
                "array",
                "TensorArrayV3",
                ["const1"],
                dtype=F32,
                element_shape=[2],
                dynamic_size=False,
                clear_after_read=False,
                identical_element_shapes=True,
                tensor_array_name="a",
            ),
            node("write0", "TensorArrayWriteV3", ["array:0", "const2", "input0", "array:1"]),
            node("scatter", "TensorArrayScatterV3", ["array:0", "const3", "input4", "write0"]),
            node("gather", "TensorArrayGatherV3", ["array:0", "const5", "scatter"], dtype=F32),
            node("read", "TensorArrayReadV3", ["array:0", "const2", "scatter"], dtype=F32),
            node("size", "TensorArraySizeV3", ["array:0", "scatter"]),
        ],
        [x(f(2)), c(i(4)), c(i(0)), c(i([1, 3])), x(f(2, 2)), c(i([3, 0, 1]))],
        None,
        ["gather", "read", "size"],
    ),
    "while_and_if": (
        [
            _with_funcs(
                node("loop", "StatelessWhile", ["const1", "const2", "input0"], parallel_iterations=10),
                cond="below_four",
                body="accumulate",
            ),
            node("total", "Sum", ["input0", "const3"], keep_dims=False),
            node("positive", "Greater", ["total", "const4"]),
            node("negative", "LogicalNot", ["positive"]),
            _with_funcs(
                node("if_pos", "StatelessIf", ["positive", "input0"]), then_branch="double", else_branch="less_one"
            ),
            _with_funcs(node("if_neg", "If", ["negative", "input0"]), then_branch="double", else_branch="less_one"),
        ],
        [x(f(3)), c(i(0)), c(np.zeros(3, np.float32)), c(i([0])), c(0.0)],
        None,
        ["loop:1", "loop:0", "if_pos", "if_neg"],
    ),
    "while_list": (
        [
            node("reserve", "TensorListReserve", ["const1", "const2"], element_dtype=F32),
            _with_funcs(
                node("loop", "StatelessWhile", ["const3", "reserve", "input0"], parallel_iterations=10),
                cond="below_three",
                body="fill",
            ),
            node("stack", "TensorListStack", ["loop:1", "const1"], element_dtype=F32, num_elements=3),
        ],
        [x(f(2)), c(i([2])), c(i(3)), c(i(0))],
        None,
        ["stack", "loop:0", "loop:2"],
    ),
}


CASES |= GRAPHS


def case_nodes(op, inputs, attrs, outputs):
    """The nodes and Const weights of a case: placeholders input0.., consts const1.., the op (or a graph's nodes),
    an Identity per output."""
    nodes, weights, names = [], [], []
    for k, (kind, array) in enumerate(inputs):
        name, dtype = f"{kind}{k}", TF_DTYPES[str(array.dtype)]
        if kind == "input":
            shape = {"dim": [{"size": str(d)} for d in array.shape]}
            nodes.append(
                {"name": name, "op": "Placeholder", "attr": {"dtype": {"type": dtype}, "shape": {"shape": shape}}}
            )
        else:
            nodes.append({"name": name, "op": "Const", "attr": {"dtype": {"type": dtype}}})
            weights.append((name, array))
        names.append(name)
    if isinstance(op, list):  # a graph
        nodes += op
        return nodes + [node(f"out{k}", "Identity", [name]) for k, name in enumerate(outputs)], weights
    nodes.append(node("op", op, names, **attrs))
    nodes += [node(f"out{k}", "Identity", [f"op:{k}"]) for k in range(outputs)]
    return nodes, weights


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """{case: (models folder, TF.js's outputs, their dtypes)}, every case in one Node run."""
    root = tmp_path_factory.mktemp("graph-ops")
    models, out = root / "models", root / "out"
    out.mkdir()
    cases = []
    for name, (op, inputs, attrs, outputs) in CASES.items():
        nodes, weights = case_nodes(op, inputs, attrs, outputs)
        functions, function_weights = CASE_FUNCTIONS.get(name, ((), []))
        write_graph_model(models / name, nodes, weights + function_weights, functions)
        files = []
        for k, (_, array) in enumerate(a for a in inputs if a[0] == "input"):
            (out / f"{name}.input{k}.bin").write_bytes(np.ascontiguousarray(array).tobytes())
            files.append({"file": f"{name}.input{k}.bin", "shape": list(array.shape), "dtype": str(array.dtype)})
        cases.append({"model": name, "inputs": files})
    (out / "cases.json").write_text(json.dumps(cases))
    run_tfjs("run_graph_models.mjs", models, out / "cases.json", out)
    result = {}
    for name in CASES:
        written = json.loads((out / f"{name}.json").read_text())
        arrays = [np.fromfile(out / o["file"], NUMPY[o["dtype"]]).reshape(o["shape"]) for o in written]
        result[name] = (models, arrays, [o["dtype"] for o in written])
    return result


@pytest.mark.parametrize("name", CASES)
def test_op_matches_tfjs(name, reference, each_backend):
    models, expected, dtypes = reference[name]
    inputs = [pe.tensor(array) for kind, array in CASES[name][1] if kind == "input"]
    model = asyncio.run(pe.load_graph_model(models / name))
    got = asyncio.run(model.execute_async(inputs))
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(expected)
    for k, (ours, theirs, dtype) in enumerate(zip(got, expected, dtypes)):
        assert ours.dtype == dtype, f"{name} output {k}: {ours.dtype}, TF.js {dtype}"
        assert ours.shape == theirs.shape, f"{name} output {k}: shape {ours.shape}, TF.js {theirs.shape}"
        np.testing.assert_allclose(
            ours.numpy().astype(np.float64),
            theirs.astype(np.float64),
            rtol=1e-5,
            atol=1e-5,
            err_msg=f"{name} output {k}",
        )
    model.dispose()
