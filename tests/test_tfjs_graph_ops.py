"""The ops TF.js graph models run (non-max suppression, gather_nd, where's coordinates, ...) against the real TF.js
(npm @tensorflow/tfjs 4.22.0 in Node, tests/tfjs/graph_ops.mjs): each call runs in TF.js and here, on numpy and
on webgpu, and must agree, integers exactly and floats within float32 rounding."""

import base64
import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.testing.conformance.image import detections
from tests.tfjs_node import run_tfjs

DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.bool_}
BOXES, SCORES = detections(300, 7)
EDGE_BOXES = np.array(
    [[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 0, 1], [np.nan, 0, 1, 1], [0, 0, 1, np.inf], [0, 0.5, 1, 1.5]],
    np.float32,
)
EDGE_SCORES = np.array([0.5, 0.5, 0.9, 0.7, 0.8, np.nan, 0.6], np.float32)
RNG = np.random.default_rng(3)
GRID = RNG.uniform(-1, 1, (4, 5, 6)).astype(np.float32)
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-7, 80.0, -80.0], np.float32)
WIDE = np.concatenate([EDGES, RNG.uniform(-5, 5, 50).astype(np.float32)])
UNIT = np.concatenate([EDGES, RNG.uniform(-1, 1, 50).astype(np.float32)])
INTS = RNG.integers(-1000, 1000, (3, 7)).astype(np.int32)
IMAGES = RNG.uniform(-1, 1, (2, 4, 6, 8)).astype(np.float32)
# whole, part, flipped, partly outside, a point (nearest takes random boxes: a position at a tie, x.5, may round
# either way in float32)
CROP_BOXES = np.array(
    [[0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9], [1, 1, 0, 0], [-0.5, 0.2, 1.3, 0.8], [0.3, 0.5, 0.3, 0.5]], np.float32
)
# TF.js's CPU backend transforms only the first image: one image; random entries keep positions off pixel halves
TRANSFORM = (
    np.array([[1, 0, 0, 0, 1, 0, 0, 0]]) + RNG.uniform(-0.4, 0.4, (1, 8)) * [1, 1, 3, 1, 1, 3, 0.03, 0.03]
).astype(np.float32)
SORTED = np.sort(RNG.integers(0, 20, (3, 9)), -1).astype(np.float32)

# id: (TF.js function, py_engine function, arguments: numpy arrays become tensors on both sides)
CALLS = {
    "nms-v3": ("image.nonMaxSuppression", pe.non_max_suppression, [BOXES, SCORES, 50, 0.4, 0.1]),
    "nms-v3-defaults": ("image.nonMaxSuppression", pe.non_max_suppression, [BOXES, SCORES, 1000]),
    "nms-v3-edges": ("image.nonMaxSuppression", pe.non_max_suppression, [EDGE_BOXES, EDGE_SCORES, 7, 0.5]),
    "nms-v4-padded": (
        "image.nonMaxSuppressionPadded",
        pe.non_max_suppression_padded,
        [BOXES, SCORES, 250, 0.3, 0.6, True],
    ),
    "nms-v4-edges": (
        "image.nonMaxSuppressionPadded",
        pe.non_max_suppression_padded,
        [EDGE_BOXES, EDGE_SCORES, 10, 0.5, 0.0, True],
    ),
    "nms-v5-soft": (
        "image.nonMaxSuppressionWithScore",
        pe.non_max_suppression_with_score,
        [BOXES, SCORES, 100, 0.5, 0.05, 0.5],
    ),
    "nms-v5-soft-iou1": (
        "image.nonMaxSuppressionWithScore",
        pe.non_max_suppression_with_score,
        [BOXES, SCORES, 300, 1.0, 0.2, 0.1],
    ),
    "nms-v5-edges": (
        "image.nonMaxSuppressionWithScore",
        pe.non_max_suppression_with_score,
        [EDGE_BOXES, EDGE_SCORES, 7, 0.9, -1.0, 1.0],
    ),
    **{
        f"crop-and-resize-{method}": (
            "image.cropAndResize",
            pe.crop_and_resize,
            [
                IMAGES,
                boxes,
                np.array([0, 1, 1, 0, 1], np.int32),
                [5, 7],
                method,
                -1.5,
            ],
        )
        for method, boxes in (("bilinear", CROP_BOXES), ("nearest", RNG.uniform(-0.3, 1.3, (5, 4)).astype(np.float32)))
    },
    **{
        f"transform-{interpolation}-{fill_mode}": (
            "image.transform",
            pe.transform,
            [IMAGES[:1], TRANSFORM, interpolation, fill_mode, -1.5, [5, 9]],
        )
        for interpolation in ("nearest", "bilinear")
        for fill_mode in ("constant", "reflect", "wrap", "nearest")
    },
    **{
        f"strided-slice-{k}": ("stridedSlice", pe.strided_slice, [IMAGES, *spec])
        for k, spec in enumerate(
            [
                ([0, 1, 0, 0], [2, 4, 6, 8], [1, 2, 3, 1]),
                ([1, -1, 5, 7], [0, 0, 0, 0], [-1, -1, -2, -3], 0, 0),
                ([0, 1, 2, 3], [0, 3, 0, 0], [1, 1, 1, 1], 0b1001, 0b1100),
                ([1, 0, 2], [2, 0, 5], [1, 1, 1], 0, 0, 0b010),  # ellipsis in the middle
                ([0, 0, 1, 0], [0, 0, 3, 0], [1, 1, 1, 1], 0b1001, 0b1001, 0, 0b0010),  # a new axis
                (
                    [1, -2, 0, 7],
                    [2, 3, 6, 8],
                    [1, 1, 1, 1],
                    0,
                    0,
                    0,
                    0,
                    0b1011,
                ),  # shrink (TF.js fails it with a stride 2)
                ([0, 3], [0, 0], [1, -1], 1, 2, 0, 0, 0),
            ]
        )
    },
    "gather-nd-rows": ("gatherND", pe.gather_nd, [GRID, RNG.integers(0, 4, (3, 2, 1)).astype(np.int32)]),
    "gather-nd-elements": (
        "gatherND",
        pe.gather_nd,
        [GRID, np.stack([RNG.integers(0, n, 7) for n in GRID.shape], -1).astype(np.int32)],
    ),
    "where-bool": ("whereAsync", pe.argwhere, [RNG.random((3, 4, 5)) < 0.3]),
    "unique": ("unique", pe.unique, [np.concatenate([EDGES, EDGES[::-2], RNG.integers(0, 4, 30).astype(np.float32)])]),
    "unique-axis": ("unique", pe.unique, [np.concatenate([INTS % 3, INTS[:, ::-1] % 3], 1), 1]),
    "setdiff1d": ("setdiff1dAsync", pe.setdiff1d, [INTS[0] % 9, INTS[1] % 9]),
    "add-n": ("addN", pe.add_n, [[GRID, GRID * 2, -GRID]]),
    "prelu": ("prelu", pe.prelu, [GRID, RNG.uniform(0, 1, (6,)).astype(np.float32)]),
    "atan2": ("atan2", pe.atan2, [EDGES.reshape(-1, 1), EDGES]),
    "div-no-nan": ("divNoNan", pe.div_no_nan, [EDGES.reshape(-1, 1), EDGES]),
    "bitwise-and": ("bitwiseAnd", pe.bitwise_and, [INTS, INTS[::-1].copy()]),
    "is-inf": ("isInf", pe.is_inf, [EDGES]),
    "is-finite": ("isFinite", pe.is_finite, [EDGES]),
    "space-to-batch": ("spaceToBatchND", pe.space_to_batch_nd, [IMAGES, [2, 3], [[1, 1], [0, 3]]]),
    "batch-to-space": ("batchToSpaceND", pe.batch_to_space_nd, [IMAGES, [2, 1], [[1, 2], [0, 1]]]),
    "depth-to-space": ("depthToSpace", pe.depth_to_space, [IMAGES, 2, "NHWC"]),
    "mirror-pad-reflect": ("mirrorPad", pe.mirror_pad, [GRID, [[3, 2], [0, 4], [1, 5]], "reflect"]),
    "mirror-pad-symmetric": ("mirrorPad", pe.mirror_pad, [INTS, [[3, 0], [7, 7]], "symmetric"]),
    "scatter-nd": ("scatterND", pe.scatter_nd, [np.array([[1, 2], [0, 0], [1, 2]], np.int32), GRID[:3, 0], [2, 3, 6]]),
    "tensor-scatter-update": (
        "tensorScatterUpdate",
        pe.tensor_scatter_update,
        [GRID, np.array([[3], [0]], np.int32), -GRID[:2]],
    ),
    "sparse-to-dense": (
        "sparseToDense",
        pe.sparse_to_dense,
        [np.array([[0, 1], [2, 3], [1, 0]], np.int32), np.array([5, 6, 7], np.int32), [3, 4], -1],
    ),
    "sparse-segment-sum": (
        "sparse.sparseSegmentSum",
        pe.sparse_segment_sum,
        [GRID, np.array([3, 0, 1, 3, 2], np.int32), np.array([0, 0, 2, 2, 4], np.int32)],
    ),
    "sparse-segment-mean": (
        "sparse.sparseSegmentMean",
        pe.sparse_segment_mean,
        [GRID[:, 0], np.array([3, 0, 1, 3, 2], np.int32), np.array([0, 0, 2, 2, 4], np.int32)],
    ),
    "sparse-fill-empty-rows": (
        "sparse.sparseFillEmptyRows",
        pe.sparse_fill_empty_rows,
        [
            np.array([[0, 0], [1, 0], [1, 3], [1, 1], [3, 2], [3, 3], [0, 2]], np.int32),
            np.array([0.0, 10, 13, 14, 32, 33, 2], np.float32),
            np.array([5, 6], np.int32),
            np.array(-1.0, np.float32),
        ],
    ),
    "sparse-fill-empty-rows-full": (
        "sparse.sparseFillEmptyRows",
        pe.sparse_fill_empty_rows,
        [
            np.array([[0, 1], [1, 0]], np.int32),
            np.array([4, 5], np.int32),
            np.array([2, 3], np.int32),
            np.array(9, np.int32),
        ],
    ),
    "sparse-reshape": (
        "sparse.sparseReshape",
        pe.sparse_reshape,
        [
            np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 2, 3]], np.int32),
            np.array([2, 3, 6], np.int32),
            np.array([9, -1], np.int32),
        ],
    ),
    "ragged-range": (
        "raggedRange",
        pe.ragged_range,
        [np.array([0, 5, 8, 2], np.int32), np.array([3, 5, 1, 9], np.int32), np.array([1, 1, -3, 2], np.int32)],
    ),
    "ragged-range-float": (
        "raggedRange",
        pe.ragged_range,
        [np.array(0.5, np.float32), np.array([2.0, -1.0, 3.3], np.float32), np.array([0.25, -0.5, 0.7], np.float32)],
    ),
    "ragged-gather": (
        "raggedGather",
        lambda splits, values, indices, rank: ragged_flat(pe.ragged_gather(splits, values, indices, rank)),
        [
            [np.array([0, 2, 2, 5], np.int32), np.array([0, 1, 3, 3, 6, 7], np.int32)],
            np.arange(14, dtype=np.float32).reshape(7, 2),
            np.array([[2, 0], [1, 2]], np.int32),
            3,
        ],
    ),
    "ragged-to-tensor-splits": (
        "raggedTensorToTensor",
        pe.ragged_tensor_to_tensor,
        [
            np.array([-1, 2, -1], np.int32),
            np.arange(7, dtype=np.float32),
            np.array(-1.0, np.float32),
            [np.array([0, 2, 2, 5], np.int32), np.array([0, 1, 3, 3, 6, 7], np.int32)],
            ["ROW_SPLITS", "ROW_SPLITS"],
        ],
    ),
    "ragged-to-tensor-rowids": (
        "raggedTensorToTensor",
        pe.ragged_tensor_to_tensor,
        [
            np.array([5, 2, 2], np.int32),
            np.arange(14, dtype=np.int32).reshape(7, 2),
            np.array(-3, np.int32),  # TF.js fills with 0 where a default of one value's shape is given
            [np.array(4, np.int32), np.array([0, 0, 0, 2, 3, 3, 3], np.int32)],
            ["FIRST_DIM_SIZE", "VALUE_ROWIDS"],
        ],
    ),
    "bincount": ("bincount", pe.bincount, [INTS[0] % 9 + 4, GRID[0, :, :].reshape(-1)[:7], 11]),
    "dense-bincount": (
        "denseBincount",
        pe.dense_bincount,
        [INTS % 5 + 2, RNG.uniform(0, 1, (3, 7)).astype(np.float32), 6],
    ),
    "dense-bincount-binary": ("denseBincount", pe.dense_bincount, [INTS % 5 + 2, np.zeros(0, np.float32), 6, True]),
    "cumprod": ("cumprod", pe.cumprod, [GRID + 1.5, 1, False, False]),
    "cumprod-exclusive-reverse": ("cumprod", pe.cumprod, [GRID + 1.5, 2, True, True]),
    "cumprod-int32": ("cumprod", pe.cumprod, [INTS % 7, 1, True, False]),
    "euclidean-norm": ("euclideanNorm", pe.euclidean_norm, [GRID, [0, 2], True]),
    "lower-bound": ("lowerBound", pe.lower_bound, [SORTED, SORTED[:, ::-2] + 0.5]),
    "upper-bound": ("upperBound", pe.upper_bound, [SORTED, SORTED[:, 1::2].copy()]),
    "conv1d": ("conv1d", pe.conv1d, [IMAGES[0], RNG.uniform(-1, 1, (3, 8, 5)).astype(np.float32), 2, "same", "NWC", 1]),
    "conv1d-dilated": (
        "conv1d",
        pe.conv1d,
        [IMAGES[0], RNG.uniform(-1, 1, (2, 8, 3)).astype(np.float32), 1, "valid", "NWC", 2],
    ),
    "dilation2d-same": (
        "dilation2d",
        pe.dilation2d,
        [IMAGES, RNG.uniform(-1, 1, (3, 2, 8)).astype(np.float32), [1, 2], "same", 1, "NHWC"],
    ),
    "dilation2d-dilated": (
        "dilation2d",
        pe.dilation2d,
        [IMAGES[0], RNG.uniform(-1, 1, (2, 2, 8)).astype(np.float32), 1, "valid", [2, 1], "NHWC"],
    ),
    "max-pool-with-argmax": ("maxPoolWithArgmax", pe.max_pool_with_argmax, [IMAGES, [3, 2], [2, 1], "same", False]),
    "max-pool-with-argmax-batch": ("maxPoolWithArgmax", pe.max_pool_with_argmax, [IMAGES, 2, 2, "valid", True]),
    "lrn": ("localResponseNormalization", pe.local_response_normalization, [IMAGES, 2, 1.5, 0.3, 0.75]),
    "band-part": ("linalg.bandPart", pe.matrix_band_part, [GRID, 1, 2]),
    "band-part-lower": ("linalg.bandPart", pe.matrix_band_part, [GRID, -1, 0]),
    "einsum-matmul": ("einsum", pe.einsum, ["bij,bjk->bik", GRID, GRID.transpose(0, 2, 1).copy()]),
    "einsum-outer-sum": ("einsum", pe.einsum, ["ij,kj->ik", GRID[0], GRID[1]]),
    "einsum-transpose": ("einsum", pe.einsum, ["ijk->kij", GRID]),
    "einsum-reduce": ("einsum", pe.einsum, ["ijk->j", GRID]),
    **{
        name: (tfjs_name, getattr(pe, name), [UNIT if name in ("asin", "acos", "atanh") else WIDE])
        for name, tfjs_name in [
            ("tan", "tan"),
            ("asin", "asin"),
            ("acos", "acos"),
            ("atan", "atan"),
            ("sinh", "sinh"),
            ("cosh", "cosh"),
            ("asinh", "asinh"),
            ("acosh", "acosh"),
            ("atanh", "atanh"),
            ("expm1", "expm1"),
            ("selu", "selu"),
        ]
    },
}


def ragged_flat(result):
    """ragged_gather's (splits list, values) as TF.js's result lists them: the splits, then the values."""
    splits, values = result
    return (*splits, values)


def encode(value):
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, np.ndarray):
        dtype = {"f": "float32", "i": "int32", "b": "bool"}[value.dtype.kind]
        data = np.ascontiguousarray(value, DTYPES[dtype])
        return {"tensor": {"dtype": dtype, "shape": list(value.shape), "b64": base64.b64encode(data).decode()}}
    return value


def decode(entry):
    data = np.frombuffer(base64.b64decode(entry["b64"]), {"bool": np.uint8}.get(entry["dtype"], DTYPES[entry["dtype"]]))
    return data.astype(DTYPES[entry["dtype"]]).reshape(entry["shape"])


def tensors(value):
    if isinstance(value, list):
        return [tensors(v) for v in value]
    return pe.tensor(value) if isinstance(value, np.ndarray) else value


@pytest.fixture(scope="module")
def tfjs_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("graph_ops")
    calls = {k: {"fn": fn, "args": [encode(a) for a in args]} for k, (fn, _, args) in CALLS.items()}
    (folder / "calls.json").write_text(json.dumps(calls))
    run_tfjs("graph_ops.mjs", folder / "calls.json", folder / "results.json")
    return {k: [decode(e) for e in v] for k, v in json.loads((folder / "results.json").read_text()).items()}


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("call", CALLS)
def test_an_op_computes_what_tfjs_computes(call, tfjs_results):
    _, fn, args = CALLS[call]
    with pe.scope():
        out = fn(*[tensors(a) for a in args])
        outs = out if isinstance(out, tuple) else (out,)
        want = tfjs_results[call]
        assert len(outs) == len(want)
        for got, expected in zip(outs, want):
            assert (got.shape, got.dtype) == (expected.shape, str(expected.dtype)), (
                got,
                expected.shape,
                expected.dtype,
            )
            if expected.dtype == np.float32:  # positions are float32 on a GPU (float64 in TF.js's CPU)
                atol = 1e-4 if call.startswith(("crop", "transform")) else 1e-6
                np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=atol)
            else:
                np.testing.assert_array_equal(got.numpy(), expected)
    assert pe.memory().num_tensors == 0
