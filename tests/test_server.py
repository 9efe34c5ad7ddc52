"""The server against a temporary site (tests/server_site.py): model weights with every header rule,
the page with its CSP, /config.json, the verified Pyodide files, and the engine wheel."""

import io
import re
import shutil
import zipfile

import pytest
from fastapi.testclient import TestClient

from app import Settings, create_app
from app.assets import pyodide_dir
from app.export import static_urls
from tests.server_site import (
    FAKE_PYODIDE,
    SECRET,
    SHARD1,
    SHARD2,
    STATIC,
    build_site,
    copy_engine_source,
    make_model,
    sha256,
)

IMMUTABLE = "public, max-age=31536000, immutable"
S1, S2 = sha256(SHARD1), sha256(SHARD2)
SHARD1_URL = f"/models/tiny/shards/{S1}/group1-shard1of2.bin"
SHARD2_URL = f"/models/tiny/shards/{S2}/sub/group1-shard2of2.bin"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Settings:
    return build_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def client(site) -> TestClient:
    return TestClient(create_app(site))


def error_of(response, status: int) -> str:
    """The JSON error message of a response that must have this status."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["status"] == status and isinstance(body["error"], str) and body["error"]
    return body["error"]


# --- model.json ---------------------------------------------------------------------------------


def test_model_json_rewrites_shard_paths_to_content_addresses(client):
    r = client.get("/models/tiny/model.json")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.headers["cache-control"] == "no-cache"
    assert r.headers["etag"] == f'"{sha256(r.content)}"'  # strong: no W/, the hash of the bytes served
    group = r.json()["weightsManifest"][0]
    assert group["paths"] == [f"shards/{S1}/group1-shard1of2.bin", f"shards/{S2}/sub/group1-shard2of2.bin"]
    assert group["weights"] == [{"name": "dense/kernel", "shape": [4, 4], "dtype": "float32"}]
    assert r.json()["modelTopology"]["class_name"] == "Sequential"


@pytest.mark.parametrize("header", ["{etag}", "W/{etag}", '"other", {etag}', "*"])
def test_model_json_if_none_match_gives_304(client, header):
    etag = client.get("/models/tiny/model.json").headers["etag"]
    r = client.get("/models/tiny/model.json", headers={"If-None-Match": header.format(etag=etag)})
    assert r.status_code == 304 and r.content == b""
    assert r.headers["etag"] == etag and r.headers["cache-control"] == "no-cache"


def test_model_json_other_etag_gives_200(client):
    r = client.get("/models/tiny/model.json", headers={"If-None-Match": '"0123"'})
    assert r.status_code == 200 and r.json()["weightsManifest"]


def test_model_json_head_has_headers_and_no_body(client):
    full = client.get("/models/tiny/model.json")
    r = client.head("/models/tiny/model.json")
    assert r.status_code == 200 and r.content == b""
    assert r.headers["content-length"] == str(len(full.content))
    assert r.headers["etag"] == full.headers["etag"] and r.headers["content-type"] == "application/json"


def test_changed_shard_changes_model_json_and_retires_the_old_url(client, site):
    make_model(site.models_dir, "changing", {"w.bin": b"version one"})
    first = client.get("/models/changing/model.json")
    old_url = "/models/changing/" + first.json()["weightsManifest"][0]["paths"][0]
    assert client.get(old_url).content == b"version one"
    (site.models_dir / "changing" / "w.bin").write_bytes(b"version two!")
    second = client.get("/models/changing/model.json", headers={"If-None-Match": first.headers["etag"]})
    assert second.status_code == 200 and second.headers["etag"] != first.headers["etag"]
    new_url = "/models/changing/" + second.json()["weightsManifest"][0]["paths"][0]
    assert new_url == f"/models/changing/shards/{sha256(b'version two!')}/w.bin"
    assert client.get(new_url).content == b"version two!"
    assert "reload model.json" in error_of(client.get(old_url), 404)  # never the new bytes under the old hash


def test_model_list(client):
    r = client.get("/models")
    listed = {entry["name"]: entry for entry in r.json()["models"]}
    assert r.status_code == 200 and {"tiny", "broken"} <= set(listed)
    assert listed["tiny"] == {"name": "tiny", "kind": "layers-model", "task": None, "license": None}  # no metadata.json
    assert listed["broken"]["kind"] is None  # its model.json is not JSON: listed, but as no kind of model
    assert "escaped" not in listed  # its folder is a symlink out of the models folder
    assert r.json()["default"] is None  # the page's default classifier (efficientnet-lite0) is not served here


# --- shards -------------------------------------------------------------------------------------


def test_shard_is_immutable_with_strong_etag(client):
    r = client.get(SHARD1_URL)
    assert r.status_code == 200 and r.content == SHARD1
    assert r.headers["cache-control"] == IMMUTABLE
    assert r.headers["etag"] == f'"{S1}"'
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-length"] == "1024" and r.headers["accept-ranges"] == "bytes"
    assert client.get(SHARD2_URL).content == SHARD2


def test_shard_if_none_match_gives_304(client):
    r = client.get(SHARD1_URL, headers={"If-None-Match": f'"{S1}"'})
    assert r.status_code == 304 and r.content == b"" and r.headers["etag"] == f'"{S1}"'
    assert r.headers["cache-control"] == IMMUTABLE


def test_shard_head(client):
    r = client.head(SHARD1_URL)
    assert r.status_code == 200 and r.content == b""
    assert r.headers["content-length"] == "1024" and r.headers["etag"] == f'"{S1}"'


def test_shard_hash_must_match_content(client):
    wrong = "0" * 64
    assert "now has sha256" in error_of(client.get(f"/models/tiny/shards/{wrong}/group1-shard1of2.bin"), 404)
    assert "64 lowercase hex" in error_of(client.get("/models/tiny/shards/abc/group1-shard1of2.bin"), 400)
    assert "64 lowercase hex" in error_of(client.get(f"/models/tiny/shards/{S1.upper()}/group1-shard1of2.bin"), 400)


def test_only_listed_shards_are_served(client):
    # model.json itself, a symlink and a wrong folder are not shards, whatever the hash says
    for path in ("model.json", "link.bin", "group1-shard2of2.bin"):
        assert "is not a shard" in error_of(client.get(f"/models/tiny/shards/{S1}/{path}"), 404)


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=0-9", 0, 9),
        ("bytes=1000-", 1000, 1023),
        ("bytes=-10", 1014, 1023),
        ("bytes=1000-5000", 1000, 1023),  # clipped to the end
        ("bytes=-5000", 0, 1023),  # suffix longer than the file: all of it
        ("bytes=1023-1023", 1023, 1023),
        ("Bytes = 5-6", 5, 6),
    ],
)
def test_range_gives_206(client, header, first, last):
    r = client.get(SHARD1_URL, headers={"Range": header})
    assert r.status_code == 206
    assert r.headers["content-range"] == f"bytes {first}-{last}/1024"
    assert r.headers["content-length"] == str(last - first + 1)
    assert r.content == SHARD1[first : last + 1]
    assert r.headers["etag"] == f'"{S1}"' and r.headers["cache-control"] == IMMUTABLE


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("bytes=1024-", "starts at or after the end"),
        ("bytes=5000-6000", "starts at or after the end"),
        ("bytes=-0", "selects no bytes"),
        ("bytes=9-5", "malformed"),
        ("bytes=abc", "malformed"),
        ("bytes=-", "malformed"),
        ("bytes=1-2-3", "malformed"),
    ],
)
def test_unsatisfiable_range_gives_416(client, header, message):
    r = client.get(SHARD1_URL, headers={"Range": header})
    assert message in error_of(r, 416)
    assert r.headers["content-range"] == "bytes */1024"


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-5"])
def test_multi_range_and_other_units_give_the_whole_file(client, header):
    r = client.get(SHARD1_URL, headers={"Range": header})
    assert r.status_code == 200 and r.content == SHARD1 and "content-range" not in r.headers


def test_range_on_model_json_and_head(client):
    body = client.get("/models/tiny/model.json").content
    r = client.get("/models/tiny/model.json", headers={"Range": "bytes=0-0"})
    assert r.status_code == 206 and r.content == body[:1] == b"{"
    h = client.head(SHARD1_URL, headers={"Range": "bytes=10-19"})
    assert h.status_code == 206 and h.content == b"" and h.headers["content-range"] == "bytes 10-19/1024"


def test_if_none_match_wins_over_range(client):
    r = client.get(SHARD1_URL, headers={"Range": "bytes=0-9", "If-None-Match": f'"{S1}"'})
    assert r.status_code == 304


def test_if_range(client):
    same = client.get(SHARD1_URL, headers={"Range": "bytes=0-9", "If-Range": f'"{S1}"'})
    assert same.status_code == 206 and same.content == SHARD1[:10]
    for other in ('"0000"', "Wed, 21 Oct 2015 07:28:00 GMT", f'W/"{S1}"'):  # If-Range compares strongly
        r = client.get(SHARD1_URL, headers={"Range": "bytes=0-9", "If-Range": other})
        assert r.status_code == 200 and r.content == SHARD1


# --- CORS ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/models/tiny/model.json", SHARD1_URL, "/models", "/models/nope/model.json"])
def test_cors_headers_on_models_answers(client, url):
    r = client.get(url, headers={"Origin": "https://notebook.example.org", "Range": "bytes=0-3"})
    assert r.headers["access-control-allow-origin"] == "*"
    exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
    assert {"etag", "content-range", "content-length"} <= exposed
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"


def test_cors_preflight(client):
    r = client.options(
        SHARD1_URL,
        headers={
            "Origin": "https://notebook.example.org",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "range, if-none-match",
        },
    )
    assert r.status_code == 204 and r.content == b""
    assert r.headers["access-control-allow-origin"] == "*"
    assert set(r.headers["access-control-allow-methods"].replace(" ", "").split(",")) == {"GET", "HEAD", "OPTIONS"}
    allowed = {h.strip().lower() for h in r.headers["access-control-allow-headers"].split(",")}
    assert {"range", "if-none-match"} <= allowed
    assert int(r.headers["access-control-max-age"]) > 0


def test_no_cors_outside_models(client):
    r = client.get("/", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


# --- errors -------------------------------------------------------------------------------------


def test_errors_are_json(client):
    assert "no model named 'nope'" in error_of(client.get("/models/nope/model.json"), 404)
    assert "not a valid TensorFlow.js model.json" in error_of(client.get("/models/broken/model.json"), 500)
    assert "method POST is not allowed" in error_of(client.post("/models/tiny/model.json"), 405)
    assert "no such resource" in error_of(client.get("/models/tiny/deeper/weights.bin"), 404)
    assert "serves model.json, its shards" in error_of(client.get("/models/tiny/weights.bin"), 404)
    assert "no file 'missing.js'" in error_of(client.get("/missing.js"), 404)


def test_model_json_with_bad_shard_paths_is_a_clear_server_error(client, site):
    make_model(site.models_dir, "missing-shard", {}, paths=["gone.bin"])
    make_model(site.models_dir, "climbing", {}, paths=["../tiny/group1-shard1of2.bin"])
    make_model(site.models_dir, "remote", {}, paths=["https://elsewhere.example/w.bin"])
    make_model(site.models_dir, "pointing-out", {}, paths=["out.bin"])
    (site.models_dir / "pointing-out" / "out.bin").symlink_to(site.models_dir.parent / "secret.txt")
    assert "'gone.bin', which is not in the model's folder" in error_of(
        client.get("/models/missing-shard/model.json"), 500
    )
    assert "unsafe shard path" in error_of(client.get("/models/climbing/model.json"), 500)
    assert "not relative" in error_of(client.get("/models/remote/model.json"), 500)
    r = client.get("/models/pointing-out/model.json")
    assert "not in the model's folder" in error_of(r, 500) and SECRET not in r.text


# --- the page, static files, CSP and config -----------------------------------------------------


def csp_of(response) -> dict[str, list[str]]:
    directives = [d.split() for d in response.headers["content-security-policy"].split(";")]
    return {d[0]: d[1:] for d in directives if d}


def test_index_has_csp(client):
    r = client.get("/")
    assert r.status_code == 200 and r.content == STATIC["index.html"]
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    csp = csp_of(r)
    assert csp["default-src"] == ["'none'"]
    assert csp["script-src"] == ["'self'", "'wasm-unsafe-eval'"]  # no 'unsafe-eval', no 'unsafe-inline'
    assert csp["worker-src"] == ["'self'"]
    assert csp["connect-src"] == ["'self'", "https://pypi.org", "https://files.pythonhosted.org"]  # micropip's
    assert csp["object-src"] == csp["base-uri"] == csp["frame-ancestors"] == ["'none'"]
    assert client.head("/").headers["content-security-policy"] == r.headers["content-security-policy"]


def test_worker_script_carries_the_csp(client):
    # a worker's policy comes from its own script's response, not from the page
    r = client.get("/worker.js")
    assert r.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "'wasm-unsafe-eval'" in csp_of(r)["script-src"]


@pytest.mark.parametrize(
    ("url", "content_type", "body"),
    [
        ("/app.js", "text/javascript; charset=utf-8", STATIC["app.js"]),
        ("/style.css", "text/css; charset=utf-8", STATIC["style.css"]),
        ("/samples/", "text/html; charset=utf-8", STATIC["samples/index.html"]),
        ("/samples/hello.py", "text/x-python; charset=utf-8", STATIC["samples/hello.py"]),
        ("/link-in.js", "text/javascript; charset=utf-8", STATIC["app.js"]),  # a symlink inside static/
    ],
)
def test_static_files(client, url, content_type, body):
    r = client.get(url)
    assert r.status_code == 200 and r.content == body
    assert r.headers["content-type"] == content_type and r.headers["cache-control"] == "no-cache"
    assert r.headers["x-content-type-options"] == "nosniff"
    again = client.get(url, headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


def test_the_npm_sources_under_static_src_are_neither_served_nor_exported(client, site):
    (site.static_dir / "src").mkdir(exist_ok=True)
    (site.static_dir / "src" / "editor.js").write_text('import { EditorView } from "codemirror";')
    assert "no such resource" in error_of(client.get("/src/editor.js"), 404)
    assert "/src/editor.js" not in static_urls(site.static_dir)


def test_static_edit_changes_etag(client, site):
    (site.static_dir / "edited.js").write_text("let a = 1;")
    first = client.get("/edited.js")
    (site.static_dir / "edited.js").write_text("let a = 2;")
    second = client.get("/edited.js", headers={"If-None-Match": first.headers["etag"]})
    assert second.status_code == 200 and second.text == "let a = 2;"


def test_config_json(client):
    r = client.get("/config.json")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    config = r.json()
    assert config["pyodide_index_url"] == "/pyodide/"
    assert re.fullmatch(r"/engine/[0-9a-f]{16}/py_engine-0\.1\.0-py3-none-any\.whl", config["engine_wheel_url"])
    assert config["packages"] == ["numpy"]


def test_cdn_in_config_and_csp(site):
    cdn = Settings(**{**vars(site), "pyodide_cdn": "https://cdn.example.org/pyodide/v0.27.7/full"})
    client = TestClient(create_app(cdn))
    assert client.get("/config.json").json()["pyodide_index_url"] == "https://cdn.example.org/pyodide/v0.27.7/full/"
    csp = csp_of(client.get("/"))
    assert csp["script-src"] == ["'self'", "'wasm-unsafe-eval'", "https://cdn.example.org"]
    assert csp["connect-src"] == [
        "'self'",
        "https://cdn.example.org",
        "https://pypi.org",
        "https://files.pythonhosted.org",
    ]
    for bad in ("ftp://cdn.example.org/", "https://cdn.example.org/?v=1", "cdn.example.org/pyodide/"):
        with pytest.raises(ValueError, match="http\\(s\\) URL"):
            Settings(**{**vars(site), "pyodide_cdn": bad})


# --- the verified Pyodide files -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("pyodide.asm.wasm", "application/wasm"),
        ("pyodide.js", "text/javascript; charset=utf-8"),
        ("pyodide.mjs", "text/javascript; charset=utf-8"),
        ("pyodide-lock.json", "application/json"),
        ("python_stdlib.zip", "application/zip"),
        ("scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl", "application/zip"),
        ("openblas-0.3.26.zip", "application/zip"),
    ],
)
def test_pyodide_files(client, name, content_type):
    r = client.get(f"/pyodide/{name}")
    assert r.status_code == 200 and r.content == FAKE_PYODIDE[name]
    assert r.headers["content-type"] == content_type
    assert r.headers["etag"] == f'"{sha256(FAKE_PYODIDE[name])}"' and r.headers["cache-control"] == "no-cache"


def test_pyodide_serves_only_verified_files(client, site):
    assert "not part of the verified Pyodide" in error_of(client.get("/pyodide/unlisted.js"), 404)
    assert "not part of the verified Pyodide" in error_of(client.get("/pyodide/verified.json"), 404)
    wasm = pyodide_dir(site.assets_dir) / "pyodide.asm.wasm"
    original = wasm.read_bytes()
    try:
        wasm.write_bytes(b"\0asm\2\0\0\0")  # same size, other bytes
        r = client.get("/pyodide/pyodide.asm.wasm")
        assert "changed since it was verified" in error_of(r, 500)
    finally:
        wasm.write_bytes(original)
    assert client.get("/pyodide/pyodide.asm.wasm").content == original


def test_pyodide_missing_says_how_to_fetch(site, tmp_path):
    client = TestClient(create_app(Settings(**{**vars(site), "assets_dir": tmp_path})))
    assert "python -m app fetch-assets" in error_of(client.get("/pyodide/pyodide.js"), 404)


# --- the engine wheel ---------------------------------------------------------------------------


def test_engine_wheel_is_served_under_its_content_hash(client):
    url = client.get("/config.json").json()["engine_wheel_url"]
    r = client.get(url)
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert r.headers["cache-control"] == IMMUTABLE and r.headers["etag"] == f'"{sha256(r.content)}"'
    assert sha256(r.content).startswith(url.split("/")[2])
    with zipfile.ZipFile(io.BytesIO(r.content)) as wheel:
        names = wheel.namelist()
        assert "py_engine/__init__.py" in names and "py_engine/engine/core.py" in names
        assert "py_engine/tensor.pyi" in names  # the attached Tensor methods, for editors
        assert "py_engine/py.typed" in names  # the PEP 561 marker: type checkers read the package's annotations
        assert not any(n.startswith(("app/", "tests/")) or "__pycache__" in n for n in names)
        metadata = wheel.read("py_engine-0.1.0.dist-info/METADATA").decode()
        assert "Name: py-engine" in metadata and "Requires-Dist: numpy>=2.0" in metadata
        assert "Root-Is-Purelib: true" in wheel.read("py_engine-0.1.0.dist-info/WHEEL").decode()
    assert client.head(url).headers["content-length"] == str(len(r.content))
    assert "16 lowercase hex" in error_of(client.get(url.replace("/engine/", "/engine/0", 1)), 400)
    assert "not a recent engine wheel" in error_of(client.get("/engine/0123456789abcdef/" + url.rsplit("/", 1)[1]), 404)
    assert "not a recent engine wheel" in error_of(
        client.get(url.rsplit("/", 1)[0] + "/other-0.1-py3-none-any.whl"), 404
    )


def test_changed_engine_gets_a_new_url(site, tmp_path):
    # start from the module's build (cached by source hash, so no rebuild), then edit the engine
    src = copy_engine_source(tmp_path / "src")
    shutil.copytree(site.assets_dir / "engine", tmp_path / "assets" / "engine")
    client = TestClient(create_app(Settings(**{**vars(site), "engine_source": src, "assets_dir": tmp_path / "assets"})))
    before = client.get("/config.json").json()["engine_wheel_url"]
    assert before == TestClient(create_app(site)).get("/config.json").json()["engine_wheel_url"]
    with open(src / "py_engine" / "__init__.py", "a") as f:
        f.write("\nPLAYGROUND_TEST_MARKER = 1\n")
    after = client.get("/config.json").json()["engine_wheel_url"]
    assert after != before
    new = client.get(after)
    with zipfile.ZipFile(io.BytesIO(new.content)) as wheel:
        assert b"PLAYGROUND_TEST_MARKER" in wheel.read("py_engine/__init__.py")
    old = client.get(before)  # a page that read /config.json just before the edit still gets its wheel
    assert old.status_code == 200 and old.content != new.content
    assert client.get("/config.json").json()["engine_wheel_url"] == after  # no rebuild when nothing changed
    builds = sorted(p.name for p in (tmp_path / "assets" / "engine").iterdir())
    assert len(builds) == 2 and not any(b.startswith(".") for b in builds)  # both servable, no leftovers


def test_model_sidecars_labels_and_metadata_are_served(site, client):
    folder = site.models_dir / "withlabels"
    make_model(site.models_dir, "withlabels", {"w.bin": b"\0" * 16})
    (folder / "labels.json").write_text('["cat", "dog"]')
    r = client.get("/models/withlabels/labels.json")
    assert r.status_code == 200 and r.json() == ["cat", "dog"]
    assert r.headers["content-type"] == "application/json" and "no-cache" in r.headers["cache-control"]
    assert r.headers["access-control-allow-origin"] == "*"
    assert "has no metadata.json" in error_of(client.get("/models/withlabels/metadata.json"), 404)
    assert "serves model.json" in error_of(client.get("/models/withlabels/secret.json"), 404)
