"""How many GPU pipelines the page's classifier (EfficientNet-Lite0, folded) needs: each is a compile in its
warm-up, about 10-150 ms on SwiftShader, so a change that adds one should change this number on purpose."""

import asyncio
import json

import py_engine as pe
from py_engine.engine import ENGINE
from py_engine.engine.warmup import dispatched_shaders
from py_engine.image_classifier import ImageClassifier


def test_the_classifiers_whole_path_compiles_eleven_pipelines_in_warm_up(efficientnet_lite0):
    ENGINE.forget_backend("webgpu")  # a new device: no pipeline compiled yet
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    start = pe.stats()
    with pe.on_backend("numpy"):  # as the page loads it: on the host, folded there
        model = asyncio.run(pe.load_layers_model(str(efficientnet_lite0 / "model.json")))
        model.fold_batch_norms(release_unfolded=True)
        packed = pe.zeros((300, 451), dtype="int32")  # an image's RGBA words
    assert pe.stats() == start  # the GPU has done nothing yet
    classifier = ImageClassifier(model, json.loads((efficientnet_lite0 / "metadata.json").read_text()))
    path = classifier.run  # unpack, cast, resize, normalize, the forward pass (captured)

    backend = ENGINE.backend
    with dispatched_shaders(backend) as shaders, pe.scope():
        pe.dispose(path(packed))
    keys = {s.key for s in shaders}
    # the 1x1 convolutions run as matmuls (14x16 blocks, relu6 or linear and the bias as a uniform-chosen epilogue),
    # the Dense head on one pixel in one-row blocks; the first convolution (3x3 into 32 channels) as the 14x16 matmul
    # of its patches, which a shader of their own copies; the stride-1 depthwise ones in strips, a shader per filter
    # (3x3 and 5x5), the stride-2 ones in one row shader; then the pixels' unpacking, cast and resize, the residual
    # add and global pooling. The pipelines more than one GEMM and one depthwise shader pay for themselves:
    # docs/platform_facts.md
    gemms = sorted(k.split(":")[1] + ":" + k.split(":")[4] for k in keys if k.startswith("Gemm:"))
    assert gemms == ["matmul:block14x16", "matmul:block1x4"], sorted(keys)
    assert "Patches" in keys, sorted(keys)
    depthwise = sorted(k.split(":")[1] + ":" + k.split(":")[2] for k in keys if k.startswith("DepthwiseConv2d:"))
    assert depthwise == ["rows4:sw2", "strips2:3x3", "strips2:5x5"], sorted(keys)
    assert len(keys) == 11, sorted(keys)

    before = pe.stats()
    new = asyncio.run(pe.warmup(path, packed))
    compiled = pe.stats()["pipeline_compiles"] - before["pipeline_compiles"]
    assert compiled == new == len(keys)
    with pe.scope():
        path(packed).numpy()
    after = pe.stats()
    assert after["pipeline_compiles"] == before["pipeline_compiles"] + compiled  # the real run compiled nothing
    assert after["dispatches"] - before["dispatches"] == 4 + 61  # preprocessing, then the forward pass
    classifier.dispose()
    packed.dispose()
