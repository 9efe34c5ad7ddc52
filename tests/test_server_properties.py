"""Property-based HTTP tests over every route: random paths (traversal, encoded and double-encoded sequences,
control characters, long names), methods and headers (Range, If-None-Match, If-Range, Accept-Encoding, huge
values). Whatever is sent: never a 5xx, nosniff on every answer, every error short JSON (with CORS on
/models), and no body that is not (part of) a file the server is meant to serve.

The site is tests/server_site.py's without its deliberately broken model folders, so every 5xx is a bug.
Bounded by max_examples so the file runs in well under 30 s."""

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from app import create_app
from app.assets import pyodide_dir
from app.cors import is_models_path
from tests.server_site import FAKE_PYODIDE, SECRET, SHARD1, SHARD2, STATIC, build_site, sha256

S1, S2 = sha256(SHARD1), sha256(SHARD2)
EXAMPLES = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# Pieces of paths: real names, dot segments and separators raw, percent-encoded and double-encoded,
# control characters, non-ASCII, and long names.
TOKENS = [
    "models", "tiny", "model.json", "shards", S1, S2, "group1-shard1of2.bin", "sub", "group1-shard2of2.bin",
    "labels.json", "pyodide", "pyodide.js", "verified.json", "unlisted.js", "engine", "0123456789abcdef",
    "config.json", "app.js", "samples", "index.html", "secret.txt", "link-out.txt", "link.bin", "escaped",
    "outside", "etc", "passwd", "..", ".", "%2e%2e", "%2E%2e", ".%2e", "%2f", "%2F", "%5c", "%5C", "%00",
    "%0a", "%0d", "%7f", "%25", "%252e%252e", "%252f", "%ff", "%c3%a9", "%e2%80%ae", "~", "-", "_", ";", "*",
    "a" * 300, "%2e" * 200,
]  # fmt: skip
PREFIXES = ["/", "/models/", "/models/tiny/", f"/models/tiny/shards/{S1}/", "/pyodide/", "/engine/", "//", "/static/"]
METHODS = ["GET", "GET", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "PROPFIND"]

segment = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3).map("".join)
path = st.builds(
    lambda prefix, segments, slash: prefix + "/".join(segments) + slash,
    st.sampled_from(PREFIXES),
    st.lists(segment, max_size=5),
    st.sampled_from(["", "", "/"]),
)

printable = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
number = st.one_of(
    st.integers(0, 2000).map(str),
    st.integers(0, 2**70).map(str),
    st.integers(1, 6000).map(lambda n: "9" * n),  # past int()'s 4300-digit limit
    st.just(""),
    st.just("-1"),
)
range_header = st.one_of(
    st.builds(lambda a, b: f"bytes={a}-{b}", number, number),
    st.builds(lambda a, b, c: f"bytes={a}-{b},{c}-", number, number, number),
    st.builds(
        lambda unit, spec: f"{unit}={spec}", st.sampled_from(["bytes", "Bytes ", "items", ""]), st.text(printable)
    ),
    st.text(printable, max_size=50),
)
etag = st.one_of(
    st.just(f'"{S1}"'),
    st.just(f'W/"{S1}"'),
    st.just("*"),
    st.text(printable, max_size=80),
    st.integers(1, 20_000).map(lambda n: '"' + "e" * n + '"'),
)
validators = st.lists(etag, min_size=1, max_size=4).map(", ".join)
HEADERS = {
    "Range": range_header,
    "If-None-Match": validators,
    "If-Range": etag,
    "Accept-Encoding": st.one_of(
        st.sampled_from(["gzip", "br, gzip;q=0.5", "*", "identity;q=0"]), st.text(printable, max_size=9000)
    ),
    "Origin": st.sampled_from(["https://notebook.example.org", "null", "http://127.0.0.1:8000"]),
    "Host": st.one_of(st.sampled_from(["[", "[::1", "a]b:99999999", "127.0.0.1:0"]), st.text(printable, max_size=300)),
    "X-Padding": st.integers(0, 20_000).map(lambda n: "p" * n),  # heads around the 16 KiB limit
}
headers = st.fixed_dictionaries({}, optional=HEADERS)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings_ = build_site(tmp_path_factory.mktemp("site"))
    for broken in ("broken",):  # a deliberately broken model.json is the server's own 500: not a client's doing
        shutil.rmtree(settings_.models_dir / broken)
    return settings_


@pytest.fixture(scope="module")
def client(site) -> TestClient:
    return TestClient(create_app(site))


class Bodies(list):
    """A list of file contents that hypothesis prints by count, not byte by byte, in a falsifying example."""

    def __repr__(self) -> str:
        return f"<{len(self)} file contents>"


@pytest.fixture(scope="module")
def servable(client, site) -> Bodies:
    """Every body the server may send: its files, and the JSON documents it makes."""
    wheel_url = client.get("/config.json").json()["engine_wheel_url"]
    made = [client.get(url).content for url in ("/config.json", "/models", "/models/tiny/model.json", wheel_url)]
    return Bodies([*STATIC.values(), *FAKE_PYODIDE.values(), SHARD1, SHARD2, *made])


@pytest.fixture(scope="module")
def outside(site) -> Bodies:
    """Files next to the served folders, or in them but not to be served, that no body may contain."""
    root = site.models_dir.parent
    return Bodies(
        [
            SECRET.encode(),
            (root / "outside" / "model" / "model.json").read_bytes(),
            (pyodide_dir(site.assets_dir) / "verified.json").read_bytes(),
            (pyodide_dir(site.assets_dir) / "unlisted.js").read_bytes(),
            (site.engine_source / "py_engine" / "__init__.py").read_bytes(),
            b"root:x:0:0",
        ]
    )


def check(response, url: str, servable: list[bytes], outside: list[bytes]) -> None:
    status, body = response.status_code, response.content
    assert status < 500, (url, status, body[:300])
    assert response.headers.get("x-content-type-options") == "nosniff", (url, status)
    if is_models_path(response.request.url.path):
        assert response.headers.get("access-control-allow-origin") == "*", (url, status)
    if status >= 400:
        assert response.headers["content-type"] == "application/json", (url, status)
        if response.request.method != "HEAD":
            error = json.loads(body)
            assert error["status"] == status and isinstance(error["error"], str)
            assert len(body) < 600, (url, body[:300])
    elif body:
        assert any(body in whole for whole in servable), (url, status, body[:200])
    for secret in outside:
        assert secret not in body and (len(body) < 8 or body not in secret), (url, status)


@EXAMPLES
@given(method=st.sampled_from(METHODS), url=path, sent=headers)
def test_any_request_gets_a_safe_answer(client, servable, outside, method, url, sent):
    check(client.request(method, url, headers=sent), url, servable, outside)


@EXAMPLES
@given(sent=headers, url=st.sampled_from([f"/models/tiny/shards/{S1}/group1-shard1of2.bin", "/models/tiny/model.json",
                                           "/app.js", "/pyodide/pyodide.asm.wasm", "/samples/hello.py"]))  # fmt: skip
def test_any_headers_on_a_real_file(client, servable, outside, url, sent):
    for method in ("GET", "HEAD"):
        response = client.request(method, url, headers=sent)
        check(response, url, servable, outside)
        if response.status_code == 206:
            first, last, size = (int(n) for n in response.headers["content-range"][6:].replace("/", "-").split("-"))
            assert 0 <= first <= last < size and response.headers["content-length"] == str(last - first + 1)


@EXAMPLES
@given(name=st.text(st.characters(min_codepoint=1, max_codepoint=0x2FF), min_size=1, max_size=40))
def test_any_name_in_any_route(client, servable, outside, name):
    from urllib.parse import quote

    encoded = quote(name, safe="")  # every byte as the client could send it, '/' and '%' included
    for url in (f"/{encoded}", f"/models/{encoded}/model.json", f"/models/tiny/shards/{S1}/{encoded}",
                f"/pyodide/{encoded}", f"/engine/0123456789abcdef/{encoded}", f"/models/tiny/{encoded}"):  # fmt: skip
        check(client.get(url), url, servable, outside)
