"""python -m app export DIR: every exported file is what the server serves for its URL, the _headers file and the
service worker's manifest give each the headers the server sends, and nothing the server would refuse (a link out, an
unverified file) is exported; the manifest's version changes with any exported file."""

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app import create_app
from app.__main__ import main
from app.csp import content_security_policy
from app.export import HEADERS_FILE, KEPT_HEADERS, MANIFEST_FILE, ExportError, export_site
from tests.server_site import FAKE_PYODIDE, SECRET, SHARD1, SHARD2, STATIC, build_site, sha256


@pytest.fixture(scope="module")
def site(tmp_path_factory, graph_models):
    settings = build_site(tmp_path_factory.mktemp("site"))
    shutil.rmtree(settings.models_dir / "broken")  # its model.json is not JSON: tested on its own below
    shutil.copytree(graph_models / "blazeface", settings.models_dir / "blazeface")  # a graph model, with its LICENSE
    return settings


@pytest.fixture(scope="module")
def exported(site, tmp_path_factory):
    dest = tmp_path_factory.mktemp("export") / "site"
    assert main(["export", str(dest), "--static", str(site.static_dir), "--models", str(site.models_dir),
                 "--assets", str(site.assets_dir)]) == 0  # fmt: skip
    return dest


@pytest.fixture(scope="module")
def client(site):
    return TestClient(create_app(site))


def exported_files(dest: Path) -> dict[str, bytes]:
    return {p.relative_to(dest).as_posix(): p.read_bytes() for p in sorted(dest.rglob("*")) if p.is_file()}


def url_of(rel: str) -> str:
    """The URL whose answer a static host gives from the exported file `rel`."""
    return {"index.html": "/", "models/index.html": "/models"}.get(rel, "/" + quote(rel))


def parse_headers(text: str) -> dict[str, dict[str, str]]:
    rules = {}
    for block in text.strip().split("\n\n"):
        path, *lines = block.split("\n")
        assert all(line.startswith("  ") for line in lines), block
        rules[path] = dict(line.strip().split(": ", 1) for line in lines)
    return rules


def test_every_exported_file_is_what_the_server_serves_for_its_url(exported, client):
    files = exported_files(exported)
    files.pop(HEADERS_FILE)
    files.pop(MANIFEST_FILE)
    for rel, data in files.items():
        answer = client.get(url_of(rel))
        assert answer.status_code == 200, (rel, answer.text)
        assert answer.content == data, rel


def test_the_export_holds_the_page_pyodide_the_wheel_and_the_models_and_nothing_refused(exported, client):
    files = exported_files(exported)
    config = json.loads(files["config.json"])
    assert config == client.get("/config.json").json()
    assert set(STATIC) <= set(files) and "link-in.js" in files  # a link inside static/ is served, so exported
    assert {f"pyodide/{name}" for name in FAKE_PYODIDE} <= set(files)  # the on-demand packages' wheels included
    assert (
        files["pyodide/scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl"]
        == client.get("/pyodide/scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl").content
    )
    assert files[config["engine_wheel_url"].lstrip("/")] == client.get(config["engine_wheel_url"]).content
    model = json.loads(files["models/tiny/model.json"])
    assert model["weightsManifest"][0]["paths"] == [
        f"shards/{sha256(SHARD1)}/group1-shard1of2.bin",
        f"shards/{sha256(SHARD2)}/sub/group1-shard2of2.bin",
    ]
    assert files[f"models/tiny/shards/{sha256(SHARD2)}/sub/group1-shard2of2.bin"] == SHARD2
    listed = json.loads(files["models/index.html"])
    assert listed == client.get("/models").json() and listed["default"] is None
    assert [(m["name"], m["kind"]) for m in listed["models"]] == [
        ("blazeface", "graph-model"),
        ("tiny", "layers-model"),
    ]
    # what the server refuses: a link out of static/, a file the Pyodide manifest does not list, a model folder
    # that leads out of the models folder, a shard model.json does not list
    assert {"link-out.txt", "pyodide/unlisted.js", "pyodide/verified.json", "models/tiny/link.bin"}.isdisjoint(files)
    assert not [rel for rel in files if rel.startswith("models/escaped")]
    assert not [rel for rel, data in files.items() if SECRET.encode() in data]


def test_a_graph_model_is_exported_with_its_shard_license_and_metadata(exported, site, client):
    files = exported_files(exported)
    folder = site.models_dir / "blazeface"
    shard = (folder / "blazeface.bin").read_bytes()
    model = json.loads(files["models/blazeface/model.json"])
    assert model["format"] == "graph-model" and model["weightsManifest"][0]["paths"] == [
        f"shards/{sha256(shard)}/blazeface.bin"
    ]
    assert files[f"models/blazeface/shards/{sha256(shard)}/blazeface.bin"] == shard
    assert files["models/blazeface/LICENSE"] == (folder / "LICENSE").read_bytes()
    assert files["models/blazeface/metadata.json"] == (folder / "metadata.json").read_bytes()
    rules = parse_headers((exported / HEADERS_FILE).read_text())
    assert rules["/models/blazeface/LICENSE"]["content-type"] == "text/plain; charset=utf-8"
    # the service worker answers the shard from its cache first, as the classifier's
    assert f"/models/blazeface/shards/{sha256(shard)}/blazeface.bin" in read_manifest(exported)["immutable"]


def test_the_headers_file_gives_each_url_the_servers_headers(exported, client):
    rules = parse_headers((exported / HEADERS_FILE).read_text())
    files = exported_files(exported)
    assert {url_of(rel) for rel in files if rel not in (HEADERS_FILE, MANIFEST_FILE)} <= set(rules)
    for path, headers in rules.items():
        served = client.get("/models" if path == "/models/" else path).headers  # the host's redirect lands on /models/
        assert headers == {name: served[name] for name in KEPT_HEADERS if name in served}, path
    page = rules["/"]
    assert page["cross-origin-opener-policy"] == "same-origin"
    assert page["cross-origin-embedder-policy"] == "require-corp"
    assert "default-src 'none'" in page["content-security-policy"]
    assert page["x-content-type-options"] == "nosniff" and page["cache-control"] == "no-cache"
    shard = rules[f"/models/tiny/shards/{sha256(SHARD1)}/group1-shard1of2.bin"]
    assert shard["cache-control"] == "public, max-age=31536000, immutable"
    assert shard["access-control-allow-origin"] == "*"
    assert rules["/config.json"]["cache-control"] == "no-store"


def read_manifest(folder: Path) -> dict:
    text = (folder / MANIFEST_FILE).read_text()
    prefix, suffix = "self.exportManifest = ", ";\n"
    body = text[text.index(prefix) + len(prefix) :]
    assert body.endswith(suffix), text[-200:]
    return json.loads(body.removesuffix(suffix))


def test_the_service_workers_manifest_gives_each_url_the_headers_file_s_headers(exported):
    """static/isolation_sw.js adds these to a host's answers that lack them: the page's CSP (app/csp.py, as the server
    sends it) and COOP/COEP included."""
    manifest = read_manifest(exported)
    rules = parse_headers((exported / HEADERS_FILE).read_text())
    assert set(manifest["urls"]) == set(rules)
    for path, index in manifest["urls"].items():
        assert manifest["headers"][index] == rules[path], path
    page = manifest["headers"][manifest["urls"]["/"]]
    assert page["content-security-policy"] == content_security_policy()
    assert page["cross-origin-opener-policy"] == "same-origin"
    assert page["cross-origin-embedder-policy"] == "require-corp"
    # content-addressed, so answered from the worker's cache first: the shards, the engine wheel
    immutable = {path for path, headers in rules.items() if "immutable" in headers.get("cache-control", "")}
    assert set(manifest["immutable"]) == immutable
    assert f"/models/tiny/shards/{sha256(SHARD1)}/group1-shard1of2.bin" in immutable
    assert json.loads((exported / "config.json").read_text())["engine_wheel_url"] in immutable
    assert "/" not in immutable and "/config.json" not in immutable
    # the page's own files, kept at install: a panel's worker script may first be asked for offline
    assert set(manifest["page"]) == {url_of(rel) for rel in STATIC} | {"/index.html", "/link-in.js"}


def test_a_changed_file_gives_the_export_a_new_version(site, exported, tmp_path):
    """The version names the service worker's cache: a new export's worker replaces the old export's cache."""
    again = tmp_path / "again"
    export_site(site, again, log=lambda line: None)
    assert read_manifest(again)["version"] == read_manifest(exported)["version"]
    page = site.static_dir / "index.html"
    before = page.read_bytes()
    try:
        page.write_bytes(before + b"<!-- changed -->")
        export_site(site, tmp_path / "changed", log=lambda line: None)
    finally:
        page.write_bytes(before)
    assert read_manifest(tmp_path / "changed")["version"] != read_manifest(exported)["version"]


def test_a_static_file_with_the_manifests_name_is_refused(site, tmp_path):
    clash = site.static_dir / MANIFEST_FILE
    clash.write_text("self.exportManifest = null;")
    try:
        with pytest.raises(ExportError, match=MANIFEST_FILE):
            export_site(site, tmp_path / "out", log=lambda line: None)
    finally:
        clash.unlink()
    assert not (tmp_path / "out").exists()


def test_a_broken_model_stops_the_export_and_names_it(site, tmp_path):
    broken = site.models_dir / "broken"
    broken.mkdir()
    (broken / "model.json").write_text("{not json")
    try:
        with pytest.raises(ExportError, match=r"/models/broken/model.json.*not a valid TensorFlow.js model.json"):
            export_site(site, tmp_path / "out", log=lambda line: None)
    finally:
        shutil.rmtree(broken)
    assert not (tmp_path / "out").exists() and not list(tmp_path.iterdir())


def test_a_folder_that_is_not_empty_is_refused(site, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep me")
    code = main(["export", str(tmp_path / "out"), "--static", str(site.static_dir), "--models",
                 str(site.models_dir), "--assets", str(site.assets_dir)])  # fmt: skip
    assert code == 1 and "is not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep me"
