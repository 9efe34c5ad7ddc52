"""Each of the eleven graph models of @vladmandic/human against the real TF.js (tf.loadGraphModel + executeAsync in
Node, tests/tfjs/run_graph_models.mjs) on a real photo, on the numpy and webgpu backends."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from app.graph_models import MODELS

# TF.js's cpu backend and ours sum in different orders: float32 rounding, grown through up to ~100 layers
RTOL, ATOL = 2e-3, 2e-3


def load(folder, name):
    return asyncio.run(pe.load_graph_model(folder / name))


def check_outputs(name, ours, reference):
    for (out_name, expected), got in zip(reference, ours):
        got = got.numpy()
        assert got.shape == expected.shape, f"{name} {out_name}: shape {got.shape}, TF.js {expected.shape}"
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL * scale, err_msg=f"{name} {out_name}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_tfjs(name, graph_models, graph_model_reference, each_backend):
    reference = graph_model_reference[name]
    model = load(graph_models, name)
    assert [o.name for o in model.outputs] == [n.split(":")[0] for n, _ in reference["outputs"]] or len(
        model.outputs
    ) == len(reference["outputs"])
    before = pe.memory().num_tensors
    with pe.scope():
        xs = [pe.tensor(array) for _, array in reference["inputs"]]
        ys = asyncio.run(model.execute_async(xs))
        ys = ys if isinstance(ys, list) else [ys]
        check_outputs(name, ys, reference["outputs"])
    assert pe.memory().num_tensors == before
    model.dispose()
