"""Regressions from probing the server as an attacker would, and the rules that fixed them: every header the
app reads is bounded, every error (the app's, Starlette's, an unexpected exception) is JSON with nosniff and,
on /models, CORS, nothing a client sent comes back longer than a short prefix, and HEAD works wherever GET does."""

import pytest
from fastapi import Path as PathParam
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app import create_app
from app.errors import CLIP
from app.head_limit import MAX_HEAD_BYTES
from app.http_files import MAX_RANGE, MAX_VALIDATORS
from tests.server_site import SHARD1, build_site, sha256

SHARD1_URL = f"/models/tiny/shards/{sha256(SHARD1)}/group1-shard1of2.bin"
HUGE_NUMBER = "9" * 5000  # over Python's 4300-digit limit for int(str)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def client(site) -> TestClient:
    return TestClient(create_app(site))


@pytest.fixture(scope="module")
def file_urls(client) -> list[str]:
    """One URL of each route that serves a file."""
    return [
        SHARD1_URL,
        "/models/tiny/model.json",
        "/",
        "/app.js",
        "/pyodide/pyodide.js",
        client.get("/config.json").json()["engine_wheel_url"],
    ]


def json_error(response, status: int) -> str:
    """The message of a JSON error with this status, after checking the headers every error carries."""
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    body = response.json()
    assert body["status"] == status and body["error"]
    return body["error"]


def has_cors(response) -> bool:
    return response.headers.get("access-control-allow-origin") == "*"


# --- the Range header with more digits than int() takes (was a plain-text 500 without CORS) -------------


@pytest.mark.parametrize(
    "header",
    [
        f"bytes={HUGE_NUMBER}-",
        f"bytes=0-{HUGE_NUMBER}",
        f"bytes=-{HUGE_NUMBER}",
        f"bytes={HUGE_NUMBER}-{HUGE_NUMBER}",
        "bytes=" + "0" * (MAX_RANGE + 1) + "-",  # a small number written long is refused the same way
    ],
)
def test_a_range_with_a_huge_number_is_a_416_json_error_on_every_file_route(client, file_urls, header):
    for url in file_urls:
        r = client.get(url, headers={"Range": header})
        message = json_error(r, 416)
        assert f"at most {MAX_RANGE}" in message and len(r.content) < 400, url
        assert r.headers["content-range"].startswith("bytes */")
    assert has_cors(client.get(SHARD1_URL, headers={"Range": header}))


def test_large_numbers_within_the_limit_still_follow_the_range_rules(client):
    big = "9" * 150
    r = client.get(SHARD1_URL, headers={"Range": f"bytes=1000-{big}"})  # clipped to the end
    assert r.status_code == 206 and r.content == SHARD1[1000:]
    assert client.get(SHARD1_URL, headers={"Range": f"bytes=-{big}"}).content == SHARD1  # the whole file
    assert "starts at or after the end" in json_error(client.get(SHARD1_URL, headers={"Range": f"bytes={big}-"}), 416)


@pytest.mark.parametrize("name", ["If-None-Match", "If-Range"])
def test_oversized_validators_are_a_400_json_error(client, file_urls, name):
    value = '"' + "a" * MAX_VALIDATORS + '"'
    for url in file_urls:
        r = client.get(url, headers={name: value, "Range": "bytes=0-0"})
        message = json_error(r, 400)
        assert f"the {name} header is {len(value)} characters long" in message, url
        assert len(r.content) < 400
    assert has_cors(client.get(SHARD1_URL, headers={name: value}))


def test_validators_at_the_limit_still_work(client):
    etag = f'"{sha256(SHARD1)}"'
    many = ", ".join(['"' + "0" * 64 + '"'] * 50 + [etag])  # 50 other ETags, then ours: 3.5 KB
    assert len(many) <= MAX_VALIDATORS
    assert client.get(SHARD1_URL, headers={"If-None-Match": many}).status_code == 304


# --- nosniff on /config.json, the /models listing and every JSON error --------------------------------


@pytest.mark.parametrize("url", ["/config.json", "/models"])
def test_json_answers_carry_nosniff(client, url):
    for r in (client.get(url), client.head(url)):
        assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff"


def test_errors_from_routes_and_from_starlette_carry_nosniff(client):
    json_error(client.get("/models/nope/model.json"), 404)  # a route's
    json_error(client.get("/missing.js"), 404)
    json_error(client.get("/models/tiny/shards/abc/w.bin"), 400)
    r = client.post("/config.json")  # Starlette's 405
    assert "method POST is not allowed" in json_error(r, 405) and "GET" in r.headers["allow"]
    assert has_cors(client.delete("/models/tiny/model.json"))
    preflight = client.options(
        SHARD1_URL, headers={"Origin": "https://a.example", "Access-Control-Request-Method": "GET"}
    )
    assert preflight.status_code == 204 and preflight.headers["x-content-type-options"] == "nosniff"


def test_validation_errors_are_json(site):
    app = create_app(site)

    def count(n: int = PathParam(ge=0)) -> dict:
        return {"n": n}

    app.router.routes.insert(0, APIRoute("/models/count/{n}", count))  # before the static catch-all
    client = TestClient(app)
    assert client.get("/models/count/3").json() == {"n": 3}
    r = client.get("/models/count/" + "x" * 500)
    message = json_error(r, 400)
    assert message.startswith("invalid request: path.n") and "x" * 100 not in r.text
    assert has_cors(r)


def test_an_unexpected_exception_is_a_json_500_that_reveals_nothing(site):
    app = create_app(site)

    def broken() -> None:
        raise RuntimeError("internal detail: /srv/secret/path")

    app.router.routes.insert(0, APIRoute("/models/broken-route", broken))
    app.router.routes.insert(0, APIRoute("/broken-route", broken))
    client = TestClient(app, raise_server_exceptions=False)
    for url in ("/models/broken-route", "/broken-route"):
        r = client.get(url)
        message = json_error(r, 500)
        assert "failed to answer GET" in message and "secret" not in r.text
        assert has_cors(r) == (url == "/models/broken-route")
    with pytest.raises(RuntimeError, match="internal detail"):  # and it is raised on, for the server's log
        TestClient(app).get("/broken-route")


# --- HEAD wherever GET works --------------------------------------------------------------------------


def test_head_config_json_has_the_get_headers_and_no_body(client):
    get, head = client.get("/config.json"), client.head("/config.json")
    assert head.status_code == 200 and head.content == b""
    for name in ("content-type", "content-length", "cache-control", "x-content-type-options"):
        assert head.headers[name] == get.headers[name], name


def test_every_get_route_answers_head(client, file_urls):
    for url in [*file_urls, "/config.json", "/models", "/models/tiny/model.json", "/samples/"]:
        get, head = client.get(url), client.head(url)
        assert get.status_code == head.status_code == 200, url
        assert head.content == b"" and head.headers["content-length"] == str(len(get.content)), url


# --- nothing long comes back ----------------------------------------------------------------------------


LONG = 10_000  # under the 16 KiB head limit, so the routes themselves answer (a 100 KB path: test_server_uvicorn)
LONG_URLS = {
    "static": "/" + "a" * LONG,
    "model name": "/models/" + "n" * LONG + "/model.json",
    "shard hash": "/models/tiny/shards/" + "f" * LONG + "/w.bin",
    "shard path": f"/models/tiny/shards/{sha256(SHARD1)}/" + "p" * LONG,
    "pyodide": "/pyodide/" + "q" * LONG,
    "wheel name": "/engine/0123456789abcdef/" + "w" * LONG,
    "wheel digest": "/engine/" + "d" * LONG + "/x.whl",
    "sidecar": "/models/tiny/" + "s" * LONG,
    "two segments": "/" + "b" * (LONG // 2) + "/" + "c" * (LONG // 2),
    "backslash": "/%5c" + "a" * LONG,
    "encoded dot-dots": "/models/" + "%2e%2e/" * (LONG // 7),
}


@pytest.mark.parametrize("url", LONG_URLS.values(), ids=LONG_URLS.keys())
def test_an_error_never_echoes_a_long_path(client, url):
    for r in (client.get(url), client.post(url)):
        assert 400 <= r.status_code < 500
        json_error(r, r.status_code)
        assert len(r.content) < 2 * CLIP + 300, r.text[:300]


def test_the_echo_is_a_prefix_with_the_real_length(client):
    message = json_error(client.get("/" + "a" * LONG), 404)
    assert "'" + "a" * CLIP + "'" in message and f"{LONG} characters" in message


def test_a_head_over_the_limit_is_a_431_json_error(client):
    r = client.get("/app.js", headers={"X-Padding": "p" * MAX_HEAD_BYTES})
    assert f"at most {MAX_HEAD_BYTES}" in json_error(r, 431) and len(r.content) < 200
    assert has_cors(client.get(SHARD1_URL, headers={"X-Padding": "p" * MAX_HEAD_BYTES}))
    assert client.get("/app.js", headers={"X-Padding": "p" * (MAX_HEAD_BYTES // 2)}).status_code == 200
