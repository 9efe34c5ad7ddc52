"""The graph models of @vladmandic/human (the `graph_models` fixture) as the server serves them: GET /models's
catalogue, each model.json with its shards at content-addressed URLs, the sidecars, and the errors."""

import json
import shutil

import pytest
from fastapi.testclient import TestClient

from app import Settings, create_app
from app.graph_models import MODELS
from tests.server_site import make_model, sha256
from tests.test_server import IMMUTABLE, error_of


@pytest.fixture(scope="module")
def client(graph_models) -> TestClient:
    return TestClient(create_app(Settings(models_dir=graph_models)))


def test_the_catalogue_lists_every_model_with_its_kind_task_and_license(client):
    r = client.get("/models")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
    assert r.json() == {
        "models": [
            {"name": name, "kind": "graph-model", "task": MODELS[name], "license": "MIT"} for name in sorted(MODELS)
        ],
        "default": None,  # no classifier among them
    }


def test_the_catalogue_tells_the_classifier_from_the_graph_models(graph_models, efficientnet_lite0, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(efficientnet_lite0, models / "efficientnet-lite0")
    shutil.copytree(graph_models / "movenet-lightning", models / "movenet-lightning")
    listed = TestClient(create_app(Settings(models_dir=models))).get("/models").json()
    assert listed == {
        "models": [
            {
                "name": "efficientnet-lite0",
                "kind": "layers-model",
                "task": "image classification, ImageNet-1k (1000 classes)",
                "license": "Apache-2.0",
            },
            {"name": "movenet-lightning", "kind": "graph-model", "task": MODELS["movenet-lightning"], "license": "MIT"},
        ],
        "default": "efficientnet-lite0",
    }


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_model_json_resolves_to_its_shards_by_hash(client, graph_models, name):
    r = client.get(f"/models/{name}/model.json")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
    served, original = r.json(), json.loads((graph_models / name / "model.json").read_text())
    shard = (graph_models / name / f"{name}.bin").read_bytes()
    assert served["weightsManifest"][0]["paths"] == [f"shards/{sha256(shard)}/{name}.bin"]
    served["weightsManifest"][0]["paths"] = original["weightsManifest"][0]["paths"]
    assert served == original  # the graph itself, its signature and its weights' specs: unchanged
    s = client.get(f"/models/{name}/" + r.json()["weightsManifest"][0]["paths"][0])
    assert s.status_code == 200 and s.content == shard
    assert s.headers["cache-control"] == IMMUTABLE and s.headers["etag"] == f'"{sha256(shard)}"'


def test_the_license_and_metadata_are_served_beside_the_model(client, graph_models):
    r = client.get("/models/blazeface/LICENSE")
    assert r.status_code == 200 and r.text.startswith("MIT License")
    assert r.headers["content-type"] == "text/plain; charset=utf-8" and r.headers["cache-control"] == "no-cache"
    r = client.get("/models/blazeface/metadata.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json()["source"]["package"] == "@vladmandic/human@3.3.6"
    assert "has no labels.json" in error_of(client.get("/models/blazeface/labels.json"), 404)


def test_bad_names_traversal_and_missing_files_are_clear_4xx(client, graph_models):
    digest = sha256((graph_models / "iris" / "iris.bin").read_bytes())
    assert "no model named 'posenet'" in error_of(client.get("/models/posenet/model.json"), 404)
    assert "'..' is not allowed" in error_of(client.get("/models/%2e%2e/model.json"), 400)
    assert "'..' is not allowed" in error_of(client.get(f"/models/iris/shards/{digest}/..%2f..%2firis/iris.bin"), 400)
    assert "not a shard of model 'iris'" in error_of(client.get(f"/models/iris/shards/{digest}/model.json"), 404)
    assert "not a shard of model 'iris'" in error_of(client.get(f"/models/iris/shards/{digest}/blazeface.bin"), 404)
    assert "reload model.json" in error_of(client.get(f"/models/iris/shards/{'0' * 64}/iris.bin"), 404)
    assert "64 lowercase hex digits" in error_of(client.get("/models/iris/shards/abc/iris.bin"), 400)
    assert "serves model.json, its shards and" in error_of(client.get("/models/iris/iris.bin"), 404)


def test_a_model_whose_shard_is_gone_says_so(graph_models, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(graph_models / "iris", models / "iris")
    make_model(models, "tiny", {"w.bin": b"\0" * 64})
    client = TestClient(create_app(Settings(models_dir=models)))
    (models / "iris" / "iris.bin").unlink()
    (models / "iris" / "LICENSE").unlink()
    message = error_of(client.get("/models/iris/model.json"), 500)  # the server's folder is broken, not the request
    assert "lists shard 'iris.bin', which is not in the model's folder" in message
    assert "has no LICENSE" in error_of(client.get("/models/iris/LICENSE"), 404)
    assert client.get("/models/tiny/model.json").status_code == 200  # the others are unaffected
