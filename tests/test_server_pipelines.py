"""The classifier's pipeline list (app/classifier_pipelines.py): planned with the page's engine on a device that runs
nothing, it names the shaders the classifier's path compiles (the very ones wgpu-py's run of that path asks for);
/config.json names it once made, its URL serves it immutable, an edited model gets a new one in the background, and
without the model or with a planner that fails the page gets none and compiles at its first classification as before.
The page's side (the compiles while Pyodide boots): e2e/test_precompile.py."""

import asyncio
import json
import shutil
import time

import pytest
from fastapi.testclient import TestClient

import py_engine as pe
from app import create_app
from app.http_files import IMMUTABLE
from py_engine.engine import ENGINE
from py_engine.engine.warmup import dispatched_shaders
from py_engine.image_classifier import ImageClassifier, load_outline
from tests.server_site import build_site


@pytest.fixture
def site(tmp_path, efficientnet_lite0):
    (tmp_path / "site").mkdir()
    settings = build_site(tmp_path / "site")
    folder = settings.models_dir / "efficientnet-lite0"
    folder.mkdir()
    for name in ("model.json", "metadata.json"):  # all the planner reads: the outline and the input's shape
        shutil.copyfile(efficientnet_lite0 / name, folder / name)
    return settings


def planned(app_, wait=True):
    return app_.state.pipelines.current(app_.state.engine.current(), wait=wait)


def shaders_of_the_path(model_dir):
    """{key: (WGSL, inputs, outputs)} of the classifier's path on wgpu-py (llvmpipe: a CPU adapter), dry-run."""
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    outline = asyncio.run(load_outline(str(model_dir / "model.json")))
    with pe.on_backend("numpy"):
        packed = pe.zeros((300, 451), dtype="int32")
    classifier = ImageClassifier(outline, json.loads((model_dir / "metadata.json").read_text()))
    backend = ENGINE.backend
    assert backend.on_cpu
    try:
        with dispatched_shaders(backend) as shaders, pe.scope():
            pe.dispose(classifier.run(packed))
        return {s.key: (s.source, s.n_in, s.n_out) for s in shaders}
    finally:
        classifier.dispose()
        packed.dispose()


def test_the_list_names_the_shaders_the_classifiers_path_compiles_and_is_served_immutable(site):
    served = create_app(site)
    made = planned(served)
    client = TestClient(served)
    config = client.get("/config.json").json()
    assert config["pipelines"] == {"url": made.url, "model": "/models/efficientnet-lite0/"}
    assert config["classifier"] == "/models/efficientnet-lite0/"  # the page downloads its files while it boots
    r = client.get(made.url)
    assert r.status_code == 200 and r.headers["cache-control"] == IMMUTABLE
    assert r.headers["content-type"] == "application/json" and r.headers["etag"] == f'"{made.sha256}"'
    body = r.json()
    assert body["format"] == 1 and set(body["adapters"]) == {"cpu", "gpu"}
    cpu = {key: (source, n_in, n_out) for key, source, n_in, n_out in body["adapters"]["cpu"]}
    assert cpu == shaders_of_the_path(site.models_dir / "efficientnet-lite0")
    # a GPU gets the tiled GEMM (workgroup memory) and the depthwise row shaders (more threads), a CPU adapter the
    # register-blocked GEMM and the depthwise strips at stride 1
    gemms = {key.split(":")[3] for key, *_ in body["adapters"]["gpu"] if key.startswith("Gemm:")}
    assert gemms == {"tiled"}
    for adapter, layouts in (("gpu", {"rows"}), ("cpu", {"strips", "rows"})):
        keys = [key for key, *_ in body["adapters"][adapter] if key.startswith("DepthwiseConv2d:")]
        assert {key.split(":")[1].rstrip("0123456789") for key in keys} == layouts, keys
    assert client.get(made.url.replace(made.digest, "0" * 16)).status_code == 404
    bad = client.get("/pipelines/not-a-digest/" + made.path.name)
    assert bad.status_code == 400 and "16 lowercase hex digits" in bad.json()["error"]


def test_an_edited_model_gets_a_new_list_made_in_the_background(site):
    served = create_app(site)
    first = planned(served)
    metadata = site.models_dir / "efficientnet-lite0" / "metadata.json"
    spec = json.loads(metadata.read_text())
    spec["input"]["mean"] = [0.5, 0.5, 0.5]
    metadata.write_text(json.dumps(spec))
    client = TestClient(served)
    assert client.get("/config.json").json()["pipelines"] is None  # being made: the page compiles when it classifies
    deadline = time.monotonic() + 60
    while (named := client.get("/config.json").json()["pipelines"]) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert named is not None and named["url"] != first.url
    assert client.get(first.url).status_code == 200  # a page told of the old list before the edit still gets it


def test_without_the_model_or_with_a_planner_that_fails_there_is_no_list(site, capsys):
    served = create_app(site)
    model = site.models_dir / "efficientnet-lite0" / "model.json"
    saved = model.read_text()
    model.write_text("{not json")
    assert planned(served) is None
    assert "classifier pipelines not planned (exit 1:" in capsys.readouterr().err
    assert planned(served) is None and capsys.readouterr().err == ""  # not retried, not reported again
    assert TestClient(served).get("/config.json").json()["pipelines"] is None
    model.write_text(saved)
    assert planned(served) is not None
    model.unlink()
    config = TestClient(served).get("/config.json").json()
    assert planned(served) is None and config["pipelines"] is None and config["classifier"] is None
