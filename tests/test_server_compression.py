"""gzip copies of what a first visit downloads (app/compression.py): the Pyodide runtime's and the bytecode's made
before `serve` serves, a page file's in the background at its first request; sent only to clients that accept gzip
and ask for no range, under an ETag of their own, never stale after an edit, and never for weights or files gzip
does not shrink. The real page loading the real runtime gzipped is checked in e2e/test_startup.py."""

import gzip
import hashlib
import os
import time

import pytest
from fastapi.testclient import TestClient

from app import create_app
from app.__main__ import gzip_first_visit
from app.assets import install, pyodide_dir
from app.compression import accepts_gzip
from tests.server_site import FAKE_PYODIDE, SHARD1, build_site, sha256

WASM = b"\0asm\1\0\0\0" + bytes(range(64)) * 512  # 32 KB that gzip shrinks to a few hundred bytes
SCRIPT = b"const answer = 42;\n" * 2000
GZIP = {"Accept-Encoding": "gzip, deflate, br, zstd"}  # what Chromium sends
IDENTITY = {"Accept-Encoding": "identity"}


@pytest.fixture
def site(tmp_path):
    settings = build_site(tmp_path)
    install({**FAKE_PYODIDE, "pyodide.asm.wasm": WASM}, pyodide_dir(settings.assets_dir))
    (settings.static_dir / "big.js").write_bytes(SCRIPT)
    (settings.static_dir / "noise.js").write_bytes(os.urandom(20_000))  # a script gzip cannot shrink
    return settings


def served_gzipped(client, url, timeout=10):
    """The response to `url` once its gzip copy is made (the first requests get the plain file meanwhile)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.get(url, headers=GZIP)
        if r.headers.get("content-encoding") == "gzip":
            return r
        time.sleep(0.05)
    raise AssertionError(f"{url} was never sent gzipped")


def test_serve_makes_the_runtimes_copies_before_the_first_visit(site):
    app = create_app(site)
    gzip_first_visit(site, app.state.gzip_copies, [])
    client = TestClient(app)
    r = client.get("/pyodide/pyodide.asm.wasm", headers=GZIP)  # the very first request: no waiting for a copy
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip" and r.content == WASM
    assert r.headers["etag"] == f'"{sha256(WASM)}-gzip"' and r.headers["vary"] == "Accept-Encoding"
    assert int(r.headers["content-length"]) < len(WASM) // 10
    assert r.headers["content-type"] == "application/wasm" and r.headers["cache-control"] == "no-cache"
    head = client.head("/pyodide/pyodide.asm.wasm", headers=GZIP)
    assert head.headers["content-encoding"] == "gzip" and head.headers["content-length"] == r.headers["content-length"]
    plain = client.get("/pyodide/pyodide.asm.wasm", headers=IDENTITY)
    assert "content-encoding" not in plain.headers and plain.headers["vary"] == "Accept-Encoding"
    assert plain.content == WASM and plain.headers["etag"] == f'"{sha256(WASM)}"'
    copies = sorted(p.name for p in (site.assets_dir / "gzip").iterdir())
    assert f"{sha256(WASM)}.gz" in copies and not [name for name in copies if name.endswith(".part")]


def test_which_encodings_allow_gzip():
    for header in ("gzip", "gzip, deflate, br", "GZIP;q=0.5", "x-gzip", "*", "br, *;q=0.1", "deflate, gzip;q=1.0"):
        assert accepts_gzip(header), header
    for header in (None, "", "identity", "br, zstd", "gzip;q=0", "gzip;q=0.000", "*;q=0", "gzip;q=0, *", "gzip;q=x"):
        assert not accepts_gzip(header), header


def test_only_a_client_that_accepts_gzip_and_asks_for_no_range_gets_it(site):
    app = create_app(site)
    gzip_first_visit(site, app.state.gzip_copies, [])
    client = TestClient(app)
    url = "/pyodide/pyodide.asm.wasm"
    long = {"Accept-Encoding": "gzip, " + "x" * 5000}  # not parsed: no browser sends one
    for headers in ({"Accept-Encoding": "gzip;q=0, br"}, {"Accept-Encoding": "*;q=0"}, IDENTITY, long):
        assert "content-encoding" not in client.get(url, headers=headers).headers, headers
    r = client.get(url, headers={**GZIP, "Range": "bytes=0-3"})  # offsets are the plain file's
    assert r.status_code == 206 and r.content == WASM[:4] and "content-encoding" not in r.headers


def test_a_client_holding_either_encoding_is_told_it_still_holds_the_file(site):
    app = create_app(site)
    gzip_first_visit(site, app.state.gzip_copies, [])
    client = TestClient(app)
    url, digest = "/pyodide/pyodide.asm.wasm", sha256(WASM)
    gzipped = client.get(url, headers={**GZIP, "If-None-Match": f'"{digest}-gzip"'})
    assert gzipped.status_code == 304 and gzipped.headers["etag"] == f'"{digest}-gzip"'
    assert gzipped.headers["content-encoding"] == "gzip"
    plain = client.get(url, headers={**GZIP, "If-None-Match": f'"{digest}"'})
    assert (
        plain.status_code == 304 and plain.headers["etag"] == f'"{digest}"' and "content-encoding" not in plain.headers
    )
    assert client.get(url, headers={**GZIP, "If-None-Match": '"other"'}).status_code == 200


def test_a_page_file_gets_its_copy_at_its_first_request_and_an_edit_never_gets_the_old_one(site):
    client = TestClient(create_app(site))
    first = client.get("/big.js", headers=GZIP)
    assert "content-encoding" not in first.headers and first.content == SCRIPT  # the copy is made meanwhile
    r = served_gzipped(client, "/big.js")
    assert r.content == SCRIPT and r.headers["etag"] == f'"{sha256(SCRIPT)}-gzip"'
    assert "Content-Security-Policy" in r.headers  # the page's headers, whichever the encoding
    edited = SCRIPT + b"const more = 1;\n"
    (site.static_dir / "big.js").write_bytes(edited)
    r = client.get("/big.js", headers=GZIP)
    assert r.content == edited and r.headers["etag"] in (f'"{sha256(edited)}"', f'"{sha256(edited)}-gzip"')
    assert served_gzipped(client, "/big.js").content == edited


def test_no_copy_of_what_gzip_does_not_shrink_nor_of_weights(site):
    client = TestClient(create_app(site))
    for _ in range(2):  # the second request finds the marker that gzip did not pay
        r = client.get("/noise.js", headers=GZIP)
        assert "content-encoding" not in r.headers and len(r.content) == 20_000
        time.sleep(0.2)
    digest = hashlib.sha256((site.static_dir / "noise.js").read_bytes()).hexdigest()
    assert (site.assets_dir / "gzip" / f"{digest}.plain").is_file()
    assert not (site.assets_dir / "gzip" / f"{digest}.gz").exists()
    shard_url = client.get("/models/tiny/model.json").json()["weightsManifest"][0]["paths"][0]
    shard = client.get(f"/models/tiny/{shard_url}", headers=GZIP)
    assert shard.content == SHARD1 and "content-encoding" not in shard.headers and "vary" not in shard.headers
    assert len(gzip.compress(SHARD1)) < len(SHARD1) // 2  # it would shrink: weights are left out by their route


def test_the_page_is_gzipped_from_the_first_request_and_either_encodings_etag_revalidates(site):
    page = b"<!doctype html><html><head></head><body>" + b"<p>the page's panels</p>\n" * 200 + b"</body></html>"
    (site.static_dir / "index.html").write_bytes(page)
    client = TestClient(create_app(site))
    r = client.get("/", headers=GZIP)  # filled in memory (app/page_panels.py): no copy to wait for
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip" and r.content == page
    assert r.headers["etag"] == f'"{sha256(page)}-gzip"' and r.headers["vary"] == "Accept-Encoding"
    assert int(r.headers["content-length"]) < len(page) // 10
    plain = client.get("/index.html", headers=IDENTITY)
    assert "content-encoding" not in plain.headers and plain.content == page
    assert plain.headers["etag"] == f'"{sha256(page)}"'
    for etag in (r.headers["etag"], plain.headers["etag"]):
        assert client.get("/", headers={**GZIP, "If-None-Match": etag}).status_code == 304
    ranged = client.get("/", headers={**GZIP, "Range": "bytes=0-9"})
    assert ranged.status_code == 206 and ranged.content == page[:10] and "content-encoding" not in ranged.headers
