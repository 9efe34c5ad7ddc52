"""Interop with the real TensorFlow.js (npm @tensorflow/tfjs 4.22.0, test-only, pure JS in Node).

tests/tfjs/save_model.mjs builds a small functional conv model in TF.js, saves it as TF.js writes it and
records TF.js's predictions on a seeded batch; here the engine loads that folder and must predict the same
within 1e-4, layer by layer and through predict's folded inference plan, on numpy and on webgpu.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from tests.tfjs_node import run_tfjs

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tfjs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("saved_by_tfjs")


def saved_by_tfjs(folder):
    """Run save_model.mjs into folder once (it writes io.json last); returns (input, [TF.js outputs])."""
    io_path = folder / "io.json"
    if not io_path.exists():
        run_tfjs("save_model.mjs", folder)
    io = json.loads(io_path.read_text())

    def array(entry):
        return np.array(entry["data"], np.float32).reshape(entry["shape"])

    return array(io["input"]), [array(out) for out in io["outputs"]]


def max_diffs(outputs, expected):
    return [float(np.abs(out.numpy() - want).max()) for out, want in zip(outputs, expected)]


@pytest.mark.usefixtures("each_backend")
def test_a_model_saved_by_tfjs_predicts_here_what_it_predicts_in_tfjs(tfjs_dir):
    x, expected = saved_by_tfjs(tfjs_dir)
    group = json.loads((tfjs_dir / "model.json").read_text())["weightsManifest"][0]
    assert group["paths"] == ["./model.weights.bin"] and "sha256" not in group  # TF.js's layout, not ours

    model = asyncio.run(pe.load_layers_model(tfjs_dir))
    try:
        assert [w.shape for w in model.outputs] == [(None, 396), (None, 10)]
        called = model(pe.tensor(x))  # layer by layer, as saved
        assert max(max_diffs(called, expected)) <= TOLERANCE, max_diffs(called, expected)
        # dw_bn and project_bn follow a linear convolution; stem_bn follows a ReLU and must stay a batch norm
        assert model.fold_batch_norms() == 2
        predicted = model.predict(x, batch_size=2)  # the folded plan, in two batches
        assert max(max_diffs(predicted, expected)) <= TOLERANCE, max_diffs(predicted, expected)
        pe.dispose([called, predicted])
    finally:
        model.dispose()
