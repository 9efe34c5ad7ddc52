"""The Teach panel's full model of images (static/panels/teach/teach_full_model.py), in CPython: EfficientNet-Lite0's files with
the normalization in front and a head on avg_pool give, on a 224x224 image of 0..255, what the classifier's
preprocessing, its body and the head give, in our engine and in the real TF.js (Node). (e2e/test_teach.py checks it
against the page's own predictions.)"""

import asyncio
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import py_engine as pe
from tests.tfjs_node import run_tfjs

STATIC = Path(__file__).resolve().parent.parent / "static"
CLASSES = 3


def teach_full_model():
    spec = importlib.util.spec_from_file_location(
        "teach_full_model", STATIC / "panels" / "teach" / "teach_full_model.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read(folder):
    model_json = json.loads((folder / "model.json").read_text())
    shards = [p for group in model_json["weightsManifest"] for p in group["paths"]]
    return model_json, b"".join((folder / p).read_bytes() for p in shards)


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """A head as the Teach panel trains one (Dense softmax on the 1280 features), with random weights, saved."""
    pe.set_seed(0)
    model = pe.Sequential(
        [pe.layers.Dense(CLASSES, activation="softmax", input_shape=(1280,), name="teach_head")],
        name="teach_head_model",
    )
    model.set_weights(
        [np.random.default_rng(1).normal(0, 0.05, (1280, CLASSES)).astype(np.float32), np.zeros(3, np.float32)]
    )
    folder = tmp_path_factory.mktemp("head")
    model.save(str(folder))
    model.dispose()
    return folder


def test_the_full_model_runs_the_preprocessing_the_body_and_the_head_here_and_in_tfjs(
    efficientnet_lite0, head, tmp_path
):
    metadata = json.loads((efficientnet_lite0 / "metadata.json").read_text())["input"]
    model_json, shard = teach_full_model().full_model(
        *read(efficientnet_lite0),
        *read(head),
        metadata["mean"],
        metadata["std"],
        {"teach": {"classes": ["a", "b", "c"]}},
    )
    folder = tmp_path / "full"
    folder.mkdir()
    (folder / "model.json").write_text(json.dumps(model_json))
    (folder / "group1-shard1of1.bin").write_bytes(shard)
    names = [layer["name"] for layer in model_json["modelTopology"]["config"]["layers"]]
    assert names[:3] == ["input", "teach_normalize", "stem_conv_pad"] and names[-2:] == ["avg_pool", "teach_head"]
    assert "predictions" not in names and not any(
        w["name"].startswith("predictions/") for w in model_json["weightsManifest"][0]["weights"]
    )
    image = np.random.default_rng(2).integers(0, 256, (2, 224, 224, 3)).astype(np.float32)

    async def ours():
        await pe.set_backend("numpy")
        body = await pe.load_layers_model(str(efficientnet_lite0))
        head_model = await pe.load_layers_model(str(head))
        full = await pe.load_layers_model(str(folder))
        try:
            with pe.scope():
                x = (pe.tensor(image) / 255 - pe.tensor(metadata["mean"])) / pe.tensor(metadata["std"])
                expected = head_model.predict(body.predict(x, outputs="avg_pool")).numpy()
                got = full.predict(pe.tensor(image)).numpy()
        finally:
            for model in (body, head_model, full):
                model.dispose()
        return expected, got

    expected, got = asyncio.run(ours())
    assert got.shape == (2, CLASSES)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    given, out = tmp_path / "image.json", tmp_path / "tfjs.json"
    given.write_text(json.dumps({"shape": list(image.shape), "data": image.ravel().tolist()}))
    run_tfjs("predict_saved_model.mjs", folder, given, out)
    (result,) = json.loads(out.read_text())
    np.testing.assert_allclose(np.array(result["data"]).reshape(result["shape"]), expected, rtol=0, atol=1e-4)


def test_a_quantized_or_short_body_is_refused(efficientnet_lite0, head):
    full_model = teach_full_model().full_model
    body_json, weights = read(efficientnet_lite0)
    with pytest.raises(ValueError, match=r"the shards hold \d+ bytes, the manifest lists \d+"):
        full_model(body_json, weights[:-4], *read(head), [0, 0, 0], [1, 1, 1], {})
    quantized = json.loads(json.dumps(body_json))
    quantized["weightsManifest"][0]["weights"][0]["quantization"] = {"dtype": "uint8"}
    with pytest.raises(ValueError, match="needs unquantized weights; stem_conv/kernel is quantized"):
        full_model(quantized, weights, *read(head), [0, 0, 0], [1, 1, 1], {})
