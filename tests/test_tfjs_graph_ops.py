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
    "gather-nd-rows": ("gatherND", pe.gather_nd, [GRID, RNG.integers(0, 4, (3, 2, 1)).astype(np.int32)]),
    "gather-nd-elements": (
        "gatherND",
        pe.gather_nd,
        [GRID, np.stack([RNG.integers(0, n, 7) for n in GRID.shape], -1).astype(np.int32)],
    ),
    "where-bool": ("whereAsync", pe.argwhere, [RNG.random((3, 4, 5)) < 0.3]),
}


def encode(value):
    if isinstance(value, np.ndarray):
        dtype = {"f": "float32", "i": "int32", "b": "bool"}[value.dtype.kind]
        data = np.ascontiguousarray(value, DTYPES[dtype])
        return {"tensor": {"dtype": dtype, "shape": list(value.shape), "b64": base64.b64encode(data).decode()}}
    return value


def decode(entry):
    data = np.frombuffer(base64.b64decode(entry["b64"]), {"bool": np.uint8}.get(entry["dtype"], DTYPES[entry["dtype"]]))
    return data.astype(DTYPES[entry["dtype"]]).reshape(entry["shape"])


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
    out = fn(*[pe.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    outs = out if isinstance(out, tuple) else (out,)
    want = tfjs_results[call]
    assert len(outs) == len(want)
    for got, expected in zip(outs, want):
        assert (got.shape, got.dtype) == (expected.shape, str(expected.dtype)), (got, expected.shape, expected.dtype)
        if expected.dtype == np.float32:
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(got.numpy(), expected)
    pe.dispose(list(outs))
