"""The first-visit bytecode's serving (app/bytecode.py): /config.json names the archive only once it is built, its URL
serves it immutable under its SHA-256, a changed page module or engine gets a new one, and a failed or impossible
build leaves the page to compile from source. The compiler here is a stand-in Node script that records what it was
given; the real one (app/precompile.mjs with the real Pyodide) is checked end to end in e2e/test_startup.py."""

import hashlib
import json
import time

import pytest
from fastapi.testclient import TestClient

import app.bytecode
from app import create_app
from tests.server_site import build_site

# Writes what it was asked to compile as the archive; with FAIL set, exits 3. Each run appends a line to runs.log.
STAND_IN = """
import fs from "node:fs";
const [pyodideDir, wheel, out, ...modules] = process.argv.slice(2);
fs.appendFileSync(new URL("runs.log", import.meta.url), "run\\n");
if (process.env.FAIL_BYTECODE) { console.error("the compiler broke"); process.exit(3); }
fs.writeFileSync(out, JSON.stringify({ pyodideDir, wheel, modules }));
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    (tmp_path / "site").mkdir()
    settings = build_site(tmp_path / "site")
    (settings.static_dir / "worker").mkdir()
    (settings.static_dir / "worker" / "playground.py").write_text("print('the page')\n")
    compiler = tmp_path / "compiler" / "stand_in.mjs"
    compiler.parent.mkdir()
    compiler.write_text(STAND_IN)
    monkeypatch.setattr(app.bytecode, "COMPILER", compiler)
    return settings


def runs(site_tmp) -> int:
    log = site_tmp / "compiler" / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def built(client: TestClient, timeout: float = 60) -> dict:
    """config.json's `bytecode` once the background build has finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        named = client.get("/config.json").json()["bytecode"]
        if named is not None:
            return named
        time.sleep(0.1)
    raise AssertionError("config.json never named the first-visit bytecode")


def test_config_names_the_bytecode_once_built_and_its_url_serves_it_immutable(site, tmp_path):
    client = TestClient(create_app(site))
    assert client.get("/config.json").json()["bytecode"] is None  # the build starts in the background
    named = built(client)
    assert named["pyodide_version"] == "0.27.7" and named["url"].startswith(f"/bytecode/{named['sha256'][:16]}/")
    r = client.get(named["url"])
    assert r.status_code == 200 and hashlib.sha256(r.content).hexdigest() == named["sha256"]
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert r.headers["etag"] == f'"{named["sha256"]}"'
    given = json.loads(r.content)
    wheel_url = client.get("/config.json").json()["engine_wheel_url"]
    assert given["wheel"].endswith(wheel_url.rsplit("/", 1)[1]) and given["pyodideDir"].endswith("pyodide-0.27.7")
    assert [m.rsplit("/", 1)[1] for m in given["modules"]] == ["playground.py"]
    assert client.get("/config.json").json()["python_modules"] == ["worker/playground.py"]  # the worker writes it
    assert client.get(named["url"], headers={"If-None-Match": f'"{named["sha256"]}"'}).status_code == 304
    assert runs(tmp_path) == 1  # built once: later requests find it on disk


def test_a_changed_page_module_gets_a_new_archive_and_the_old_url_still_serves(site, tmp_path):
    client = TestClient(create_app(site))
    first = built(client)
    (site.static_dir / "worker" / "playground.py").write_text("print('the page, edited')\n")
    assert client.get("/config.json").json()["bytecode"] is None  # another key: building
    second = built(client)
    assert second["url"] != first["url"] and runs(tmp_path) == 2
    assert client.get(first["url"]).status_code == 200  # a page that read config.json before the edit
    # a new server process finds the archive on disk: no build
    assert TestClient(create_app(site)).get("/config.json").json()["bytecode"] == second and runs(tmp_path) == 2


def test_bad_and_unknown_bytecode_urls(site):
    client = TestClient(create_app(site))
    named = built(client)
    digest, name = named["url"].split("/")[2:]
    r = client.get(f"/bytecode/XYZ/{name}")
    assert r.status_code == 400 and "16 lowercase hex digits" in r.json()["error"]
    r = client.get(f"/bytecode/{'0' * 16}/{name}")
    assert r.status_code == 404 and "reload /config.json" in r.json()["error"]
    assert client.get(f"/bytecode/{digest}/other.bin").status_code == 404


def test_a_failed_build_is_reported_once_and_not_retried(site, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("FAIL_BYTECODE", "1")
    server = create_app(site)
    assert server.state.bytecode.current(server.state.engine.current(), wait=True) is None
    err = capfd.readouterr().err
    assert "first-visit bytecode not built (exit 3: the compiler broke); pages compile from source" in err
    config = TestClient(server).get("/config.json")
    assert config.status_code == 200 and config.json()["bytecode"] is None and runs(tmp_path) == 1


def test_without_node_there_is_none_and_the_page_compiles(site, monkeypatch, capfd):
    monkeypatch.setattr(app.bytecode.shutil, "which", lambda name: None)
    client = TestClient(create_app(site))
    assert client.get("/config.json").json()["bytecode"] is None
    assert client.get("/config.json").json()["bytecode"] is None
    assert capfd.readouterr().err.count("it needs Node.js and the local Pyodide") == 1


def test_two_page_modules_of_one_name_are_refused_with_both_paths(tmp_path):
    for folder in ("worker", "panels/teach"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "shared.py").write_text("")
    with pytest.raises(ValueError, match=r"named shared\.py \(worker/shared\.py, panels/teach/shared\.py\)"):
        app.bytecode.page_modules(tmp_path)
