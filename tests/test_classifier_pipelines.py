"""How many GPU pipelines the page's classifier (EfficientNet-Lite0, folded) needs: each is a compile in its
warm-up, seconds on SwiftShader, so a change that adds one should change this number on purpose."""

import asyncio

import pytest

import py_engine as pe
from app.__main__ import main
from py_engine.engine import ENGINE


@pytest.fixture(scope="module")
def model_json(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    assert main(["convert", "efficientnet-lite0", "--models", str(models)]) == 0
    return str(models / "efficientnet-lite0" / "model.json")


def test_the_classifiers_forward_pass_compiles_ten_pipelines_in_warm_up(model_json):
    ENGINE.forget_backend("webgpu")  # a new device: no pipeline compiled yet
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    model = asyncio.run(pe.load_layers_model(model_json))
    model.fold_batch_norms(release_unfolded=True)
    x = pe.zeros((1, 224, 224, 3))

    def top_k(x):  # the page's forward pass (static/playground.py, Classifier.top_k)
        values, indices = model.predict(x).softmax()[0].top_k(5)
        return pe.stack([values, indices.cast("float32")])

    backend = ENGINE.backend
    backend.dry_run = []
    with pe.scope():
        pe.dispose(top_k(x))
    keys, backend.dry_run = {s.key for s in backend.dry_run}, None
    # the 1x1 and 3x3 convolutions (linear or relu6) share one GEMM, the depthwise ones one shader, the Dense layer
    # the matmul; then the residual add, the bias add, global pooling, softmax, top-k, cast and stack
    gemms = sorted(k for k in keys if k.startswith(("Gemm:", "DepthwiseConv2d:")))
    assert len(gemms) == 3, gemms
    assert len(keys) == 10, sorted(keys)

    folding = {k for k in keys if backend.device.has_pipeline(k)}  # what folding the batch norms compiled
    before = pe.stats()
    new = asyncio.run(pe.warmup(top_k, x))
    compiled = pe.stats()["pipeline_compiles"] - before["pipeline_compiles"]
    assert compiled == new == len(keys - folding) > 0
    with pe.scope():
        top_k(x).numpy()
    after = pe.stats()
    assert after["pipeline_compiles"] == before["pipeline_compiles"] + compiled  # the real run compiled nothing
    assert after["dispatches"] - before["dispatches"] == 65
    model.dispose()
    x.dispose()
