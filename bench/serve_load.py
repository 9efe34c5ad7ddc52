"""The playground server under load, on loopback only: requests/s, latency and errors per route, and its memory.

    .venv/bin/python bench/serve_load.py                          # 32 connections, 3 s per route
    .venv/bin/python bench/serve_load.py --concurrency 64 --seconds 5 --max-requests 50000

Converts EfficientNet-Lite0 into a temporary models folder (`python -m app convert`, 0.1 s: an 86 KB
model.json and five shards, the last one 2 MB), then starts `python -m app serve` (uvicorn, exactly
as the CLI configures it) on a free port of 127.0.0.1 with that folder, and Pyodide from a CDN URL
that is only written into /config.json (so nothing is fetched).
Then, for each route in turn, `--concurrency` keep-alive connections send requests back to back for
`--seconds` (at most `--max-requests` in all):

- model.json: GET /models/efficientnet-lite0/model.json (shard paths rewritten to content addresses);
- shard: GET of the 2 MB shard (group1-shard5of5.bin) by its content address;
- ranged shard: the same shard with Range: bytes=1048576-1114111 (64 KiB, 206);
- page: GET / (index.html under the CSP).

The load generator is plain asyncio over non-blocking sockets, receiving bodies into one reused buffer
(an HTTP client library, or even asyncio's streams, would cost more CPU than the server on a small
machine, and measure the client). An error is a wrong status, a short body or a broken connection. The
server's RSS (from /proc/PID/status) is read after start, after a warm-up round of every route, and
after the measured rounds: after warm-up it should stay flat. Timings are for reading, never asserted.
"""

import argparse
import asyncio
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
CDN = "https://cdn.jsdelivr.net/pyodide/v0.27.7/full/"  # never fetched: the page is not run here
MODEL = "efficientnet-lite0"
RANGE = (1 << 20, (1 << 20) + 65535)


@dataclass
class Route:
    name: str
    path: str
    status: int
    length: int | None = None  # expected body length, when known
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    seconds: float = 0.0


def convert_model(models: Path) -> tuple[str, int]:
    """(URL path, size) of the last shard of EfficientNet-Lite0 converted into `models`, by its content address."""
    subprocess.run(
        [PYTHON, "-m", "app", "convert", MODEL, "--models", str(models)],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    spec = json.loads((models / MODEL / "model.json").read_text())
    last = spec["weightsManifest"][0]["paths"][-1]
    data = (models / MODEL / last).read_bytes()
    return f"/models/{MODEL}/shards/{hashlib.sha256(data).hexdigest()}/{last}", len(data)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def wait_until_serving(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout  # the first start may build the engine wheel
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "config.json", timeout=2).close()
            return
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"the server exited with {proc.returncode}")
            time.sleep(0.2)
    sys.exit(f"the server did not answer {url}config.json within {timeout:.0f} s")


async def read_response(sock: socket.socket, buffer: memoryview) -> tuple[int, int]:
    """(status, body length) of one response with a Content-Length (what the server sends for these routes).

    The body is received into `buffer` and dropped: the client's cost per byte stays far below the server's."""
    loop = asyncio.get_running_loop()
    head = b""
    while (end := head.find(b"\r\n\r\n")) < 0:
        if len(head) > 65536 or not (n := await loop.sock_recv_into(sock, buffer)):
            raise ValueError(f"no complete response head in {head[:80]!r}")
        head += bytes(buffer[:n])
    status, length = int(head[9:12]), None
    for line in head[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ValueError(f"response {status} has no Content-Length")
    left = length - (len(head) - end - 4)
    while left > 0:
        n = await loop.sock_recv_into(sock, buffer[: min(left, len(buffer))])
        if not n:
            raise ValueError(f"the connection closed {left} bytes before the end of the body")
        left -= n
    return status, length


async def connection(port: int, route: Route, deadline: float, budget: list[int], result: Result) -> None:
    loop = asyncio.get_running_loop()
    extra = "".join(f"{k}: {v}\r\n" for k, v in route.headers.items())
    request = f"GET {route.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode()
    buffer, sock = memoryview(bytearray(1 << 20)), None
    while time.perf_counter() < deadline and budget[0] > 0:
        budget[0] -= 1
        start = time.perf_counter()
        try:
            if sock is None:
                sock = socket.socket()
                sock.setblocking(False)
                await loop.sock_connect(sock, ("127.0.0.1", port))
            await loop.sock_sendall(sock, request)
            status, length = await read_response(sock, buffer)
            if status != route.status or (route.length is not None and length != route.length):
                raise ValueError(f"status {status} with {length} bytes, expected {route.status}")
            result.latencies.append(time.perf_counter() - start)
        except (OSError, ValueError) as e:
            result.errors += 1
            result.first_error = result.first_error or f"{type(e).__name__}: {e}"
            if sock is not None:
                sock.close()
            sock = None
    if sock is not None:
        sock.close()


async def load(port: int, route: Route, concurrency: int, seconds: float, max_requests: int) -> Result:
    result, budget = Result(), [max_requests]
    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(*(connection(port, route, deadline, budget, result) for _ in range(concurrency)))
    result.seconds = time.perf_counter() - start
    return result


def row(name: str, r: Result) -> str:
    done = len(r.latencies)
    if not done:
        return f"{name:<14} {'-':>9} {'-':>9} {'-':>9} {r.errors:>7}  {r.first_error}"
    cuts = statistics.quantiles(r.latencies, n=100) if done > 1 else [r.latencies[0]] * 99
    line = f"{name:<14} {done / r.seconds:>9.0f} {cuts[49] * 1e3:>9.2f} {cuts[98] * 1e3:>9.2f} {r.errors:>7}"
    return line + (f"  first: {r.first_error}" if r.errors else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--seconds", type=float, default=3.0, help="per route (default 3)")
    p.add_argument("--max-requests", type=int, default=30000, help="per route (default 30000)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-load-") as scratch:
        shard, size = convert_model(Path(scratch) / "models")
        routes = [
            Route("model.json", f"/models/{MODEL}/model.json", 200),
            Route(f"shard {size / 1e6:.1f} MB", shard, 200, size),
            Route("ranged shard", shard, 206, RANGE[1] - RANGE[0] + 1, {"Range": f"bytes={RANGE[0]}-{RANGE[1]}"}),
            Route("page /", "/", 200),
        ]
        port = free_port()
        command = [PYTHON, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--models", str(Path(scratch) / "models"), "--pyodide-cdn", CDN]
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until_serving(f"http://127.0.0.1:{port}/", proc)
            rss = {"after start": rss_mib(proc.pid)}
            for route in routes:  # warm-up: every cache filled, every code path run once under load
                asyncio.run(load(port, route, args.concurrency, min(1.0, args.seconds), args.max_requests))
            rss["after warm-up"] = rss_mib(proc.pid)
            print(f"concurrency {args.concurrency}, {args.seconds:g} s or {args.max_requests} requests per route")
            print(f"{'route':<14} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7}")
            for route in routes:
                print(
                    row(route.name, asyncio.run(load(port, route, args.concurrency, args.seconds, args.max_requests)))
                )
            rss["after the runs"] = rss_mib(proc.pid)
            print("server RSS: " + ", ".join(f"{k} {v:.1f} MiB" for k, v in rss.items()))
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait()


if __name__ == "__main__":
    main()
