"""The real server over sockets, configured as `python -m app serve` configures uvicorn (app/connection_limits.py): slow
clients are dropped at the request-head deadline, oversized and malformed heads get JSON errors, and the
regressions hold end to end. Raw sockets, because an HTTP client would neither stall nor send bad bytes."""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import uvicorn

from app import create_app
from app.connection_limits import KEEP_ALIVE, LIMIT_CONCURRENCY, uvicorn_options
from app.head_limit import MAX_HEAD_BYTES
from app.settings import REPO
from tests.server_site import SHARD1, build_site, live_server, sha256

HEAD_TIMEOUT = 1.0  # short, so the tests are quick; `serve` uses app.connection_limits.HEADER_TIMEOUT
SLACK = 1.5  # scheduling on a busy machine
SHARD1_URL = f"/models/tiny/shards/{sha256(SHARD1)}/group1-shard1of2.bin"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def port(site):
    config = uvicorn.Config(create_app(site), log_level="critical", **uvicorn_options(header_timeout=HEAD_TIMEOUT))
    with live_server(config) as port:
        yield port


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def read_until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and the seconds that took."""
    start, data = time.monotonic(), b""
    sock.settimeout(limit)
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for over {limit} s (got {data[:200]!r})")
    return data, time.monotonic() - start


def parse(response: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response (with a Content-Length) from a connection that stays open."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    status, headers, body = parse(data)
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return status, headers, body


def request(port: int, head: bytes) -> tuple[int, dict[str, str], bytes]:
    with connect(port) as s:
        s.sendall(head)
        return parse(read_until_closed(s, 10)[0])


def json_error(status: int, headers: dict[str, str], body: bytes, expected: int) -> str:
    assert status == expected, body[:300]
    assert headers["content-type"] == "application/json" and headers["x-content-type-options"] == "nosniff"
    error = json.loads(body)
    assert error["status"] == expected
    return error["error"]


# --- slow clients ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sent", [b"", b"GET /mod", b"GET /app.js HTTP/1.1\r\nHost: x\r\n"])
def test_a_client_that_stalls_before_its_head_is_complete_is_dropped(port, sent):
    with connect(port) as s:
        s.sendall(sent)
        data, waited = read_until_closed(s, HEAD_TIMEOUT + SLACK + 5)
    assert data == b"" and HEAD_TIMEOUT * 0.8 <= waited <= HEAD_TIMEOUT + SLACK


def test_a_client_that_trickles_its_head_is_dropped_at_the_deadline(port):
    with connect(port) as s:
        start = time.monotonic()
        try:
            for byte in b"GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * 100:
                s.send(bytes([byte]))
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data, _ = read_until_closed(s, 10)
    assert data == b"" and time.monotonic() - start <= HEAD_TIMEOUT + SLACK


def test_a_stall_in_the_second_request_of_a_keep_alive_connection_is_dropped(port):
    # uvicorn's own keep-alive timer stops at the first byte of the next request; the deadline does not
    with connect(port) as s:
        s.sendall(b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200
        s.sendall(b"GET /sty")
        data, waited = read_until_closed(s, HEAD_TIMEOUT + SLACK + 5)
    assert data == b"" and waited <= HEAD_TIMEOUT + SLACK


def test_a_head_sent_in_pieces_within_the_deadline_is_served(port):
    with connect(port) as s:
        s.sendall(b"GET /app.js HT")
        time.sleep(HEAD_TIMEOUT / 3)
        s.sendall(b"TP/1.1\r\nHost: x\r\n")
        time.sleep(HEAD_TIMEOUT / 3)
        s.sendall(b"Connection: close\r\n\r\n")
        status, _, body = parse(read_until_closed(s, 10)[0])
    assert status == 200 and body == b"new Worker('worker.js');"


def test_a_busy_connection_is_not_cut_by_the_deadline(port):
    # requests back to back for longer than the deadline, each head complete: served to the end
    with connect(port) as s:
        start = time.monotonic()
        while time.monotonic() - start < HEAD_TIMEOUT * 1.5:
            s.sendall(b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(s)[0] == 200
            time.sleep(HEAD_TIMEOUT / 4)


# --- oversized and malformed heads ----------------------------------------------------------------------


def test_an_oversized_head_arriving_slowly_is_refused_by_the_parser(port):
    with connect(port) as s:
        s.sendall(b"GET /app.js HTTP/1.1\r\nHost: x\r\n")
        for _ in range(MAX_HEAD_BYTES // 1000 + 2):  # never ends: h11 refuses what it has to buffer
            s.sendall(b"X-Pad: " + b"p" * 991 + b"\r\n")
            # the server reads each line before the next: bytes it has not read when it closes make its kernel
            # reset the connection, which drops the 431 before the client reads it
            if select.select([s], [], [], 0.05)[0]:
                break
        data, _ = read_until_closed(s, 10)
    assert f"over {MAX_HEAD_BYTES} bytes" in json_error(*parse(data), 431)


@pytest.mark.parametrize(
    "head",
    [
        b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /app.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"b" * 20_000 + b"\r\n\r\n",
    ],
)
def test_an_oversized_head_arriving_whole_is_a_431(port, head):
    status, headers, body = request(port, head)
    assert f"at most {MAX_HEAD_BYTES}" in json_error(status, headers, body, 431) and len(body) < 200


@pytest.mark.parametrize(
    "head",
    [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    ],
)
def test_a_malformed_request_is_a_400_json_error(port, head):
    status, headers, body = request(port, head)
    assert "malformed HTTP request" in json_error(status, headers, body, 400) and len(body) < 300


@pytest.mark.parametrize("method", [b"GET", b"OPTIONS"])
def test_a_target_no_route_matches_is_starlettes_404_in_json(port, method):
    status, headers, body = request(port, method + b" * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert "no such resource" in json_error(status, headers, body, 404)


# --- the regressions, end to end ------------------------------------------------------------------------


def test_a_range_with_5000_digits_over_the_real_server(port):
    head = f"GET {SHARD1_URL} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nRange: bytes=0-{'9' * 5000}\r\n\r\n"
    status, headers, body = request(port, head.encode())
    assert "at most" in json_error(status, headers, body, 416)
    assert headers["access-control-allow-origin"] == "*" and headers["content-range"] == "bytes */1024"


def test_head_config_json_over_the_real_server(port):
    status, headers, body = request(port, b"HEAD /config.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    assert headers["x-content-type-options"] == "nosniff"


def test_the_configured_limits():
    config = uvicorn.Config(lambda scope, receive, send: None, **uvicorn_options())
    config.load()
    assert config.timeout_keep_alive == KEEP_ALIVE and config.limit_concurrency == LIMIT_CONCURRENCY
    assert config.h11_max_incomplete_event_size == MAX_HEAD_BYTES


# --- `python -m app serve` ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_cli_serves_with_its_limits(site, workers, tmp_path):
    port = free_port()
    command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", str(workers)]
    command += ["--models", str(site.models_dir), "--assets", str(site.assets_dir), "--static", str(site.static_dir)]
    command += ["--header-timeout", str(HEAD_TIMEOUT)]
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120  # the first start builds the engine wheel
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/config.json", timeout=5) as r:
                    assert json.load(r)["engine_wheel_url"].startswith("/engine/")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{SHARD1_URL}", timeout=5) as r:
            assert r.read() == SHARD1
        with connect(port) as s:
            s.sendall(b"GET /mod")
            data, waited = read_until_closed(s, HEAD_TIMEOUT + SLACK + 5)
        assert data == b"" and waited <= HEAD_TIMEOUT + SLACK
        assert log.read_text().count("Started server process") == workers
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(30)
