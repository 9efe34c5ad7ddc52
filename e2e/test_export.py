"""The exported playground (`python -m app export DIR`) served by `python -m http.server`, a plain static file server
that sends none of the _headers file's headers: the page boots, runs code and classifies the cat. Without COOP/COEP
it is not cross-origin isolated (Stop then reaches only code that awaits), and it must work all the same."""

import os
import signal
import subprocess
import time
import urllib.request

import pytest
from conftest import REPO, Playground, free_port, python
from test_classify import classify

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


@pytest.fixture(scope="module")
def static_url(exported):
    port = free_port()
    proc = subprocess.Popen(
        [python(), "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(exported)],
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


def test_the_exported_site_on_a_plain_static_server_boots_runs_code_and_classifies(webgpu_browser, static_url):
    page = Playground(webgpu_browser, static_url)
    try:
        assert page.backend == "webgpu", page.info
        assert page.page.evaluate("crossOriginIsolated") is False  # http.server sends no COOP/COEP
        assert page.run("(pe.arange(4, dtype='float32') * 2).sum()")["values"] == 12
        top = classify(page, "samples/chelsea.png")
        assert top[0]["index"] == 285, top
        assert page.page.evaluate("playground.models()") == ["efficientnet-lite0"]  # the picker's list, /models
        failed = [r.url for r in page.requests if r.failure]
        assert not failed, failed
    finally:
        page.close()
