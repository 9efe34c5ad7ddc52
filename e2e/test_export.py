"""The exported playground (`python -m app export DIR`) served by `python -m http.server`, a plain static file server
that sends none of the _headers file's headers: the page's own service worker (static/isolation_sw.js) adds COOP/COEP
and the page reloads once, isolated: it boots, runs code, the Stop button ends `while True: pass` within 2 s, and it
classifies the cat; the user's files (the Files panel) are kept across a reload. Where service workers are blocked it
is not isolated, says so and what Stop can interrupt, and Stop still ends code that awaits. Served by a tiny handler
that adds the _headers file's headers, as Netlify or Cloudflare Pages would, it is isolated under the server's CSP,
and Stop interrupts a loop that never awaits. After one visit the service worker's cache holds what the page fetched:
with the host gone and the browser offline the page boots under the server's CSP, runs code and classifies; a new
export's worker replaces that cache."""

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from conftest import BOOT_TIMEOUT_MS, REPO, WEBGPU, Playground, free_port, python, show_panel, wait_until_idle
from playwright.sync_api import expect
from test_classify import CLASSIFY_TIMEOUT_MS, classify

from app.csp import content_security_policy

SERVER_START_S = 60


@pytest.fixture(scope="module")
def exported(models_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("export") / "site"
    subprocess.run(
        [python(), "-m", "app", "export", str(folder), "--models", str(models_dir)],
        cwd=REPO,
        check=True,
        timeout=600,
    )
    return folder


@contextlib.contextmanager
def plain_server(folder, port):
    """`python -m http.server` serving `folder` on `port`; yields its URL, then stops it by PID."""
    proc = subprocess.Popen(
        [python(), "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                urllib.request.urlopen(url + "config.json", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)


@pytest.fixture(scope="module")
def static_url(exported):
    with plain_server(exported, free_port()) as url:
        yield url


def test_the_exported_site_on_a_plain_static_server_boots_runs_code_and_classifies(webgpu_browser, static_url):
    page = Playground(webgpu_browser, static_url + WEBGPU)  # the classifier's pipelines list is served too
    try:
        assert page.backend == "webgpu", page.info
        # http.server sends no COOP/COEP: the page's service worker added them, and the page reloaded once
        assert page.page.evaluate("crossOriginIsolated") is True
        assert page.page.evaluate("navigator.serviceWorker.controller.scriptURL").endswith("/isolation_sw.js")
        assert not page.page.get_by_role("note", name="What Stop can do").is_visible()
        assert page.info["bytecode_served_files"] > 200, page.console  # the export holds the first-visit bytecode
        assert page.run("(pe.arange(4, dtype='float32') * 2).sum()")["values"] == 12
        top = classify(page, "samples/chelsea.png")
        assert top[0]["index"] == 285, top
        assert page.page.evaluate("playground.models()") == ["efficientnet-lite0"]  # the picker's list, /models
        # ...with the server's default chosen: the one the worker loads (/config.json's classifier)
        show_panel(page.page, "Classify")
        assert page.page.get_by_role("combobox", name="Model").input_value() == "efficientnet-lite0"
        # the first load's requests that the reload cut short aside
        failed = [r.url for r in page.requests if r.failure and r.failure != "net::ERR_ABORTED"]
        assert not failed, failed
        assert stop_ends(page.page, "while True: pass") < 2.0
    finally:
        page.close()


def test_the_static_copy_keeps_the_users_files_across_a_reload(webgpu_browser, static_url, tmp_path):
    """Files live in the browser (IndexedDB), not on the host: a static copy keeps them as the server does."""
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    page = Playground(webgpu_browser, static_url)
    try:
        show_panel(page.page, "Files")
        files = page.page.get_by_role("region", name="Files", exact=True)
        with page.page.expect_file_chooser() as chooser:
            files.get_by_role("button", name="Upload files").click()
        chooser.value.set_files(str(data))
        expect(page.page.get_by_role("status", name="Files status")).to_have_text("Uploaded data.csv (8 B).")
        run_code(page.page, "open('copy.csv', 'w').write(open('data.csv').read().upper())")
        page.page.reload()
        wait_until_booted(page.page)
        listed = files.get_by_role("list", name="Files in the working directory")
        expect(listed.get_by_role("listitem")).to_have_count(3)
        assert listed.locator(".file-name").all_inner_texts() == ["copy.csv", "data.csv", "main.py"]  # Run saved it
        assert page.run("open('copy.csv').read()") == "A,B\n1,2\n"
    finally:
        page.close()


def test_the_projects_own_server_gets_no_service_worker(wasm_page):
    """The server sends COOP/COEP itself: the page is isolated without the export's worker, which caches nothing here."""
    page = wasm_page.page
    assert page.evaluate("crossOriginIsolated") is True
    assert page.evaluate("navigator.serviceWorker.controller") is None
    assert page.evaluate("navigator.serviceWorker.getRegistrations().then((found) => found.length)") == 0
    assert not [name for name in page.evaluate("caches.keys()") if name.startswith("playground-export-")]
    # so the worker takes the classifier's files once the boot has imported the page's modules (static/worker/boot.js)
    assert page.evaluate("playgroundBoot.url.searchParams.has('offline-copy')") is False


def stop_ends(page, code):
    """Type `code` into the editor, run it, press Stop once it runs: the seconds until the run ended by
    KeyboardInterrupt."""
    page.get_by_role("textbox", name="Python code").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => playground.running !== null")
    page.wait_for_timeout(300)  # well inside the loop
    start = time.monotonic()
    page.get_by_role("button", name="Stop", exact=True).click()
    wait_until_idle(page, 30_000)
    took = time.monotonic() - start
    assert page.get_by_role("status", name="Run state").inner_text().startswith("KeyboardInterrupt after")
    return took


def test_without_service_workers_the_page_says_what_stop_can_interrupt(webgpu_browser, static_url):
    context = webgpu_browser.new_context(service_workers="block")
    page = Playground(webgpu_browser, static_url, context=context)
    try:
        assert page.page.evaluate("crossOriginIsolated") is False
        note = page.page.get_by_role("note", name="What Stop can do")
        note.wait_for(timeout=10_000)  # the service worker did not become active within 5 s
        assert "not cross-origin isolated" in note.inner_text() and "never awaits" in note.inner_text()
        assert stop_ends(page.page, "import asyncio\nwhile True:\n    await asyncio.sleep(0.01)") < 2.0
        log = page.page.get_by_role("log", name="Output").inner_text()
        assert "cannot interrupt code that never awaits" in log, log
        # no shared memory: input() says why it cannot read a line, and time.sleep waits as Pyodide's own does
        with pytest.raises(Exception, match=r"RuntimeError: input\(\) needs the page to be cross-origin isolated"):
            page.run('input("Your name? ")')
        assert page.run("import time\ntime.sleep(0.2)\n'slept'") == "slept"
        # code that never awaits: Stop ends it by restarting the worker
        page.page.get_by_role("textbox", name="Python code").click()
        page.page.keyboard.press("Control+A")
        page.page.keyboard.insert_text("while True:\n    pass")
        page.page.keyboard.press("Control+Enter")
        page.page.wait_for_function("() => playground.running !== null")
        page.page.get_by_role("button", name="Stop", exact=True).click()
        wait_until_idle(page.page, 30_000)
        assert "the Python worker was restarted" in page.page.get_by_role("log", name="Output").inner_text()
        page.page.wait_for_function("() => playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
        assert page.run("1 + 1") == 2
    finally:
        page.close()


class HeadersFileHandler(SimpleHTTPRequestHandler):
    """A static file server that adds the headers the _headers file gives the request's path."""

    rules: ClassVar[dict[str, list[tuple[str, str]]]] = {}  # set per server by a subclass

    def end_headers(self):
        for name, value in self.rules.get(self.path.split("?")[0], []):
            if name != "content-type":  # the handler sends its own
                self.send_header(name, value)
        super().end_headers()

    def log_message(self, *args):
        pass


def read_rules(path):
    rules = {}
    for block in path.read_text().strip().split("\n\n"):
        url, *lines = block.split("\n")
        rules[url] = [tuple(line.strip().split(": ", 1)) for line in lines]
    return rules


def test_with_the_headers_file_the_page_is_isolated_under_its_csp_and_stop_interrupts(webgpu_browser, exported):
    handler = type("Handler", (HeadersFileHandler,), {"rules": read_rules(exported / "_headers")})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(exported)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = None
    try:
        page = Playground(webgpu_browser, f"http://127.0.0.1:{server.server_port}/")
        assert page.backend == "wasm", page.info  # its SIMD module compiled under the exported CSP (SwiftShader here)
        assert page.page.evaluate("crossOriginIsolated") is True
        page.page.evaluate(
            "() => { playground.runPython('while True: pass').catch((e) => (window.__stopped = e.message)); }"
        )
        page.page.wait_for_function("() => playground.running !== null")
        assert page.page.evaluate("playground.stop()") is True
        page.page.wait_for_function("() => window.__stopped !== undefined", timeout=30_000)
        assert "KeyboardInterrupt" in page.page.evaluate("window.__stopped")
        assert not [line for line in page.console if "Content Security Policy" in line], page.console
    finally:
        if page is not None:
            page.close()
        server.shutdown()
        server.server_close()


def manifest_version(folder):
    text = (folder / "export_manifest.js").read_text()
    return json.loads(text[text.index("{") : text.rindex("}") + 1])["version"]


def wait_until_booted(page):
    page.wait_for_function("() => window.playground && playground.state !== 'starting'", timeout=BOOT_TIMEOUT_MS)
    page.evaluate("playground.ready")  # raises with the reason if the boot failed


def classify_the_cat_sample(page):
    """Classify's "Cat (PNG)" sample, through the panel: the first of its top 5."""
    show_panel(page, "Classify")
    panel = page.get_by_role("region", name="Classify an image")
    panel.get_by_role("button", name="Cat (PNG)").click()
    top5 = panel.get_by_role("listitem")  # the results list is the panel's only list
    expect(top5).to_have_count(5, timeout=CLASSIFY_TIMEOUT_MS)
    return top5.first.inner_text()


def run_code(page, code):
    """Type `code` into the editor and press Run: the output's text once the run ended."""
    page.get_by_role("textbox", name="Python code").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)
    page.get_by_role("toolbar", name="Run controls").get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("status", name="Run state")).to_contain_text("Done in", timeout=120_000)
    return page.get_by_role("log", name="Output").inner_text()


def test_after_one_visit_the_export_works_offline_and_a_new_export_replaces_its_cache(
    webgpu_browser, exported, tmp_path
):
    site = tmp_path / "site"  # a copy of its own: a new export is made below by changing its manifest's version
    shutil.copytree(exported, site)
    port = free_port()  # an origin of its own: a fresh service worker and cache
    version = manifest_version(site)
    context = webgpu_browser.new_context()
    try:
        with plain_server(site, port) as url:
            playground = Playground(webgpu_browser, url, context=context)
            page = playground.page
            assert page.evaluate("crossOriginIsolated") is True
            # nothing classified: under the service worker, the page fetches the classifier's files from the end of
            # Pyodide's boot (static/worker/boot.js), and the service worker keeps them
            assert page.evaluate("playgroundBoot.url.searchParams.has('offline-copy')") is True
            page.wait_for_function(
                """async (name) => (await caches.has(name))
                       && (await (await caches.open(name)).keys()).filter((r) => /shard\\dof5/.test(r.url)).length === 5""",
                arg=f"playground-export-{version}",
                timeout=120_000,
                polling=500,
            )
        # the host is gone and the browser offline, its HTTP cache emptied: only the service worker's cache answers
        context.set_offline(True)
        context.new_cdp_session(page).send("Network.clearBrowserCache")
        answer = page.reload()
        wait_until_booted(page)
        assert answer.from_service_worker and answer.ok
        # the headers the project's server sends, given by the service worker: its CSP (app/csp.py) and COOP/COEP
        assert answer.header_value("content-security-policy") == content_security_policy()
        assert answer.header_value("cross-origin-embedder-policy") == "require-corp"
        assert page.evaluate("crossOriginIsolated") is True
        assert "12.0" in run_code(page, "print((pe.arange(4, dtype='float32') * 2).sum().item())")
        assert "cat" in classify_the_cat_sample(page)
        assert not [line for line in playground.console if "Content Security Policy" in line], playground.console
        # a new export on the same origin: the browser's update check finds the new manifest, and the new worker
        # deletes the old export's cache
        context.set_offline(False)
        manifest = site / "export_manifest.js"
        manifest.write_text(manifest.read_text().replace(version, "0" * 16))
        with plain_server(site, port):
            page.reload()
            wait_until_booted(page)
            page.wait_for_function(
                """async (name) => (await caches.keys()).filter((n) => n.startsWith("playground-export-")).join() === name""",
                arg="playground-export-" + "0" * 16,
                timeout=60_000,
                polling=500,
            )
    finally:
        context.close()
