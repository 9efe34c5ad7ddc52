"""python -m app fetch-models: the graph models of @vladmandic/human, verified against the pinned integrity, written
into the models folder (app/graph_models.py). The real package, from the tarball the `graph_models` fixture cached."""

import json
import re

import pytest

import app.assets as assets
import app.graph_models as graph
from app.__main__ import main
from app.assets import AssetError
from app.settings import Settings
from tests.server_site import sha256


@pytest.fixture
def tarball(graph_models):
    """The verified tarball's bytes, as the fixture's preparation cached them."""
    return graph.cache_path(Settings().assets_dir).read_bytes()


@pytest.fixture
def offline(monkeypatch):
    """No npm: any try to reach the registry fails the test's preparation."""
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)


def test_every_model_has_its_json_shards_license_and_metadata(graph_models):
    assert sorted(p.name for p in graph_models.iterdir()) == sorted(graph.MODELS)
    for name, task in graph.MODELS.items():
        folder = graph_models / name
        spec = json.loads((folder / "model.json").read_text())
        shards = [path for group in spec["weightsManifest"] for path in group["paths"]]
        assert spec["format"] == "graph-model" and shards == [f"{name}.bin"]
        metadata = json.loads((folder / "metadata.json").read_text())
        assert metadata["task"] == task and metadata["format"] == "graph-model"
        assert metadata["source"] | {"origin": None} == {
            "package": "@vladmandic/human@3.3.6",
            "integrity": graph.INTEGRITY,
            "file": f"models/{name}.json",
            "license": "MIT",
            "license_file": "LICENSE",
            "origin": None,
        }
        assert metadata["source"]["origin"].startswith("https://")  # the model the package converted
        assert sorted(metadata["files"]) == sorted(["model.json", "LICENSE", *shards])
        for rel, info in metadata["files"].items():
            data = (folder / rel).read_bytes()
            assert info == {"sha256": sha256(data), "size": len(data)}
        assert (folder / "LICENSE").read_text().startswith("MIT License")


def test_a_second_preparation_writes_nothing_and_needs_no_network(graph_models, offline, capsys):
    before = {p: p.stat().st_mtime_ns for p in graph_models.rglob("*")}
    assert main(["fetch-models", "--models", str(graph_models)]) == 0
    assert f"11 in {graph_models}, 0 written" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in graph_models.rglob("*")} == before


def test_a_new_folder_is_written_from_the_cached_tarball_offline(graph_models, offline, tmp_path):
    written = graph.ensure_graph_models(tmp_path / "models", Settings().assets_dir, log=lambda m: None)
    assert written == list(graph.MODELS)
    for name in graph.MODELS:
        assert (tmp_path / "models" / name / "model.json").read_bytes() == (
            graph_models / name / "model.json"
        ).read_bytes()


def test_a_damaged_model_is_written_again_and_only_it(graph_models, offline, tmp_path):
    models = tmp_path / "models"
    graph.ensure_graph_models(models, Settings().assets_dir, log=lambda m: None)
    (models / "blazeface" / "blazeface.bin").write_bytes(b"cut short")
    (models / "iris" / "metadata.json").unlink()
    assert graph.ensure_graph_models(models, Settings().assets_dir, log=lambda m: None) == ["blazeface", "iris"]
    assert (models / "blazeface" / "blazeface.bin").read_bytes() == (
        graph_models / "blazeface" / "blazeface.bin"
    ).read_bytes()
    assert not [p.name for p in models.iterdir() if p.name.startswith(".")]  # no staging or old folder left


def test_a_tarball_without_the_pinned_integrity_is_refused(monkeypatch, tarball, tmp_path):
    tampered = tarball[:-1] + bytes([tarball[-1] ^ 1])
    monkeypatch.setattr(assets.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(
        assets, "_run", lambda cmd, cwd, what: (cwd / "vladmandic-human-3.3.6.tgz").write_bytes(tampered)
    )
    with pytest.raises(
        AssetError, match=re.escape(f"integrity {assets.npm_integrity(tampered)} does not match the pinned")
    ):
        graph.ensure_graph_models(tmp_path / "models", tmp_path / "assets", log=lambda m: None)
    assert not (tmp_path / "models").exists() and not graph.cache_path(tmp_path / "assets").exists()


def test_a_tampered_cache_is_not_used(monkeypatch, tarball, tmp_path, capsys):
    """The cached tarball is checked at each use: one with other bytes is fetched again (here: npm is missing)."""
    cached = graph.cache_path(tmp_path / "assets")
    cached.parent.mkdir(parents=True)
    cached.write_bytes(tarball[:1000])
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    assert main(["fetch-models", "--models", str(tmp_path / "models"), "--assets", str(tmp_path / "assets")]) == 1
    out, err = capsys.readouterr()
    assert f"{cached} does not have the pinned integrity: fetching @vladmandic/human@3.3.6 again" in out
    assert "error: npm is needed to fetch @vladmandic/human@3.3.6 (e.g. apt-get install npm)" in err
    assert not (tmp_path / "models").exists()


def test_an_unreachable_registry_says_what_failed_and_what_to_do(monkeypatch, tmp_path):
    npm = tmp_path / "npm"  # an npm that cannot reach its registry
    npm.write_text("#!/bin/sh\necho 'npm error code ENOTFOUND registry.npmjs.org' >&2\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setattr(assets.shutil, "which", lambda name: str(npm))
    with pytest.raises(AssetError) as e:
        graph.package_tarball(tmp_path / "assets", log=lambda m: None)
    assert f"npm pack @vladmandic/human@3.3.6 failed (exit 1): {npm} pack" in str(e.value)
    assert "ENOTFOUND registry.npmjs.org" in str(e.value)
    assert "needs the npm registry once" in str(e.value)


def test_a_file_missing_from_the_package_is_named(tarball):
    package = assets.read_npm_package(tarball, graph.SPEC, lambda rel: rel == "LICENSE" or rel.startswith("models/"))
    assert graph.model_files(package, "movenet-lightning").keys() == {"model.json", "LICENSE", "movenet-lightning.bin"}
    del package["models/movenet-lightning.bin"]
    with pytest.raises(
        AssetError,
        match=re.escape("has no models/movenet-lightning.bin, the shard models/movenet-lightning.json lists"),
    ):
        graph.model_files(package, "movenet-lightning")
    with pytest.raises(AssetError, match=re.escape("has no models/posenet.json")):
        graph.model_files(package, "posenet")
