"""What the in-page benchmarks share: a playground server to measure against and headless Chromium."""

import contextlib
import functools
import http.server
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Python for a Pyodide in Node (bench/experiments/fit_step_profile.py, graph_replay_profile.py): every wasm program
# built from here on names its steps (kernel and input shapes); after steps_apart() the programs are recorded again
# with each step its own (not merged with its neighbours into one call of the module), and their replays time each
# step into best[(place, kind, name)] (the least seconds): N a native step, NS one split over the threads' pool, K a
# kernel step
TIMED_REPLAY_STEPS = """
import functools
import time
from py_engine.backends.wasm import capture as wasm_capture
from py_engine.engine import ENGINE

best = {}
built = wasm_capture.KernelProgram.__init__

def build(program, recording, outputs):
    program.names = [f"{getattr(s.fn, '__qualname__', s.fn)} {[recording.arrays[k].shape for k in s.keys]}"
                     for s in recording.steps]
    built(program, recording, outputs)

def steps(program, values, one_thread):  # KernelProgram._steps, each step timed
    for place, (name, step) in enumerate(zip(program.names, program.runs, strict=True)):
        start = time.perf_counter()
        if step[0]:
            for call, args in step[1]:
                call(*args)
            kind = "NS" if step[2] is not None else "N"
        else:
            wasm_capture.run_kernel_step(step, values, program.backend)
            kind = "K"
        key = (place, kind, name)
        best[key] = min(best.get(key, 1.0), time.perf_counter() - start)

wasm_capture.KernelProgram.__init__ = build

def steps_apart():
    wasm_capture._runs = functools.partial(wasm_capture._runs, apart=True)
    for program in list(ENGINE.active().programs):
        program.release()  # recorded again on use
    wasm_capture.KernelProgram._steps = steps
"""

# bench/train_step.py's small CNN (28x28x1, compiled with SGD) as Python for a Pyodide in Node (bench/wasm_node.py,
# bench/wasm_capture.py, bench/experiments/fit_step_profile.py): small_cnn(n) is (x, y, model) on n random examples
SMALL_CNN = """
def small_cnn(n):
    rng, L = np.random.default_rng(0), pe.layers
    x = pe.tensor(rng.normal(size=(n, 28, 28, 1)).astype(np.float32))
    y = pe.tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)])
    model = pe.Sequential([L.Conv2D(8, 3, activation="relu", input_shape=(28, 28, 1)), L.MaxPooling2D(2),
                           L.Conv2D(16, 3, activation="relu"), L.Flatten(), L.Dense(10, activation="softmax")])
    model.compile(optimizer=pe.optimizers.SGD(learning_rate=0.01), loss="categorical_crossentropy")
    return x, y, model
"""
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
FLAGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WEBGPU = "--enable-unsafe-webgpu"  # WebGPU without a GPU: SwiftShader
# Page code (prepended to a benchmark's): the multiply-adds of profiled kernels, which the matmul roofline is set by
MULTIPLY_ADDS = """
import math


def multiply_adds(kernels):
    # out elements x the terms each sums: a convolution's kh*kw*cin, a depthwise one's kh*kw, a matmul's k
    total = 0
    for k in kernels:
        out = math.prod(k.output_shapes[0])
        if k.name in ("Conv2D", "FusedConv2D"):
            total += out * math.prod(k.input_shapes[1][:3])
        elif k.name in ("DepthwiseConv2D", "FusedDepthwiseConv2D"):
            total += out * math.prod(k.input_shapes[1][:2])
        elif k.name in ("MatMul", "BatchMatMul"):
            total += out * k.input_shapes[0][-1]
    return total
"""


# Page code: fn's GPU time on `inputs`, captured as `runs` runs of itself and replayed `replays` times, each replay
# synced by one readback: the fastest replay per run, without the Python per op or the readback of a synced op
FASTEST_REPLAY = """
import time


def fastest_replay_ms(fn, *inputs, runs=5, replays=3):
    def repeated(*xs):
        y = fn(*xs)
        for _ in range(runs - 1):
            y.dispose()
            y = fn(*xs)
        return y

    replay = pe.capture(repeated)
    with pe.scope():
        replay(*inputs).reshape(-1)[:1].numpy()  # records
    best = float("inf")
    for _ in range(replays):
        with pe.scope():
            start = time.perf_counter()
            replay(*inputs).reshape(-1)[:1].numpy()  # a synchronous readback (JSPI)
            best = min(best, (time.perf_counter() - start) * 1e3 / runs)
    replay.dispose()
    return best
"""


# Page code: the median of `runs` synced runs of model.predict on `x`, captured (the classifier's way), after the
# recording run
CAPTURED_FORWARD = """
import statistics, time


async def captured_forward_ms(model, x, runs=7):
    forward = pe.capture(model.predict)
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        y = forward(x)
        await y.data()
        y.dispose()
        times.append((time.perf_counter() - start) * 1e3)
    forward.dispose()
    return statistics.median(times[1:])  # the first run records
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def models_folder(scratch: Path, graph_models: bool = False) -> Path:
    """The checkout's models/ when it holds the default classifier, else a folder in `scratch` it is converted into;
    with graph_models, the graph models of docs/models.md are fetched into it too (instant when they are there)."""
    folder = REPO / "models"
    if not (folder / "efficientnet-lite0" / "model.json").exists():
        folder = scratch
        subprocess.run(
            [PYTHON, "-m", "app", "convert", "efficientnet-lite0", "--models", str(folder)], cwd=REPO, check=True
        )
    if graph_models:
        subprocess.run([PYTHON, "-m", "app", "fetch-models", "--models", str(folder)], cwd=REPO, check=True)
    return folder


@contextlib.contextmanager
def playground_server(url=None, needs_model=True, static=None, graph_models=False):
    """`url` if given, else `python -m app serve` on a free port (with models/, converted first if missing, and the
    graph models if asked for; an empty models folder when the benchmark needs no model), serving the page from
    `static` if given."""
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory() as scratch:
        models = models_folder(Path(scratch), graph_models) if needs_model else Path(scratch)
        port = free_port()
        command = [PYTHON, "-m", "app", "serve", "--port", str(port), "--models", str(models)]
        if static is not None:
            command += ["--static", str(static)]
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield wait_until_serving(f"http://127.0.0.1:{port}/", proc)
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait()


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def static_server(directory):
    """A plain static file server for `directory` on 127.0.0.1 (a free port), for pages that are not the
    playground's (whose CSP forbids foreign scripts); yields its URL."""
    handler = functools.partial(_QuietFiles, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def wait_until_serving(url, proc):
    for _ in range(1200):  # the first start fetches and verifies Pyodide
        try:
            urllib.request.urlopen(url + "config.json", timeout=2).close()
            return url
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"the server exited with {proc.returncode}")
            time.sleep(0.5)
    sys.exit("the server did not start")


def launch_options():
    """Headless Chromium with WebGPU (SwiftShader where there is no GPU): the keywords of chromium.launch."""
    chromium = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"
    return {"executable_path": chromium, "headless": True, "args": [WEBGPU, *FLAGS]}


def launch(playwright):
    """Headless Chromium with WebGPU (SwiftShader where there is no GPU)."""
    return playwright.chromium.launch(**launch_options())


def open_playground(opener, url, backend="webgpu"):
    """(page, its ready info): a playground page on `backend` opened by `opener` (a browser or a browser context);
    exits when the page fell back to another backend."""
    page = opener.new_page()
    page.goto(f"{url}?backend={backend}")
    info = page.evaluate("playground.ready")
    if info["backend"] != backend:
        raise SystemExit(f"the page runs on {info['backend']}, not {backend}: {info['fallback_reason']}")
    return page, info


def open_settled_playground(opener, url, backend, timeout_ms=120_000):
    """open_playground, returned once the page has stored what its next boot takes (wait_until_stored): a first
    visit makes its Pyodide snapshot in a worker of its own once idle, which would take a core from what is timed."""
    page, info = open_playground(opener, url, backend)
    wait_until_stored(page, timeout_ms)
    return page, info


def run_python(page, code):
    """What `code` returned, run in the playground `page` (`pe` and `np` predefined; its last expression)."""
    return page.evaluate("code => playground.runPython(code)", code)


def wait_until_stored(page, timeout_ms):
    """What the playground `page` stored for its next boot (`playground.startupCache`), once it has: it stores what
    its boot missed once it has been idle for a while, the Pyodide snapshot in a worker of its own."""
    page.wait_for_function("() => playground.startupCache !== undefined", timeout=timeout_ms)
    return page.evaluate("playground.startupCache")


def run_in_page(opener, url, code, backend="webgpu"):
    """(the page's ready info, what `code` returned): `code` run in a playground page (open_playground)."""
    page, info = open_playground(opener, url, backend)
    return info, run_python(page, code)


# Page code (prepended to a download experiment's): `url` of graph model MODEL_URL_'s first shard, and busy(ms), Python
# holding the worker's thread
FIRST_SHARD = """
import asyncio, json, time
import js
from py_engine.io import fetch

model = MODEL_URL_
manifest = json.loads((await (await js.fetch(model)).arrayBuffer()).to_bytes())["weightsManifest"]
url = js.URL.new(manifest[0]["paths"][0], model).href


def busy(ms):
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        pass
"""


def in_fresh_pages(url, ways, rounds, alternate=False):
    """{way: [what its code returned, each round]}: each of `ways` ({label: page code}) run in the settled wasm
    playground of a fresh browser context, every way each round (in reverse order every other round where
    `alternate`), each result printed with the machine's load."""
    import json

    from playwright.sync_api import sync_playwright

    results = {way: [] for way in ways}
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for r in range(rounds):
                load = Path("/proc/loadavg").read_text().split()[0]
                for way in list(ways)[:: -1 if alternate and r % 2 else 1]:
                    context = browser.new_context()
                    try:
                        page, _ = open_settled_playground(context, url, "wasm")
                        got = run_python(page, ways[way])
                    finally:
                        context.close()
                    results[way].append(got)
                    print(f"round {r} (load {load}) {way}: {json.dumps({k: round(v, 1) for k, v in got.items()})}")
        finally:
            browser.close()
    return results


def run_in_playground(url, code, backend="webgpu"):
    """run_in_page in a headless Chromium of its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            return run_in_page(browser, url, code, backend)
        finally:
            browser.close()
