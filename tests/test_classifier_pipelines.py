"""How many GPU pipelines the page's classifier (EfficientNet-Lite0, folded) needs: each is a compile in its
warm-up, about 10-150 ms on SwiftShader, so a change that adds one should change this number on purpose."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from app.__main__ import main
from py_engine.engine import ENGINE


@pytest.fixture(scope="module")
def model_json(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    assert main(["convert", "efficientnet-lite0", "--models", str(models)]) == 0
    return str(models / "efficientnet-lite0" / "model.json")


def test_the_classifiers_whole_path_compiles_ten_pipelines_in_warm_up(model_json):
    ENGINE.forget_backend("webgpu")  # a new device: no pipeline compiled yet
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    start = pe.stats()
    with pe.on_backend("numpy"):  # as the page loads it: on the host, folded there
        model = asyncio.run(pe.load_layers_model(model_json))
        model.fold_batch_norms(release_unfolded=True)
        packed = pe.zeros((300, 451), dtype="int32")  # an image's RGBA words
    assert pe.stats() == start  # the GPU has done nothing yet
    scale = pe.tensor(np.eye(3, dtype=np.float32).reshape(1, 1, 3, 3))
    shift = pe.tensor(np.zeros(3, np.float32))

    def path(packed):  # static/playground.py's Classifier.run: unpack, cast, resize, normalize, the forward pass
        x = pe.resize_bilinear(pe.browser.unpack_pixels(packed).cast("float32"), (224, 224), half_pixel_centers=True)
        return model.predict(pe.fused_conv2d(x.expand_dims(0), scale, shift))

    backend = ENGINE.backend
    backend.dry_run = []
    with pe.scope():
        pe.dispose(path(packed))
    keys, backend.dry_run = {s.key for s in backend.dry_run}, None
    # every convolution (1x1, 3x3, linear or relu6, the normalization) shares one GEMM, the Dense head on one pixel
    # a GEMM of one-row blocks; the depthwise ones take three row shaders (stride 1 unrolled for 3- and 5-wide
    # filters, stride 2); then the pixels' unpacking, cast and resize, the residual add and global pooling. The
    # three pipelines more than one GEMM and one depthwise shader pay for themselves: docs/platform_facts.md
    gemms = sorted(k for k in keys if k.startswith(("Gemm:", "DepthwiseConv2d:")))
    assert len(gemms) == 5, gemms
    assert len(keys) == 10, sorted(keys)

    before = pe.stats()
    new = asyncio.run(pe.warmup(path, packed))
    compiled = pe.stats()["pipeline_compiles"] - before["pipeline_compiles"]
    assert compiled == new == len(keys)
    with pe.scope():
        path(packed).numpy()
    after = pe.stats()
    assert after["pipeline_compiles"] == before["pipeline_compiles"] + compiled  # the real run compiled nothing
    assert after["dispatches"] - before["dispatches"] == 4 + 60  # preprocessing, then the forward pass
    model.dispose()
    pe.dispose([packed, scale, shift])
