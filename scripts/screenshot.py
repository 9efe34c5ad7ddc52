"""Make the README's picture of the playground: docs/playground.png.

Starts the real server (as the e2e tests do, with the converted EfficientNet-Lite0), opens the page in headless
Chromium with WebGPU (on a machine without a GPU that is SwiftShader, so the page starts on wasm), runs the gallery's training example (its live charts) and its leaking one, lists the live
tensors in the Memory lab, runs an example in the editor, classifies the cat sample, and saves the whole page.

    .venv/bin/python scripts/screenshot.py [--out docs/playground.png] [--url http://127.0.0.1:8000/]

With --url it uses a server that is already running (scripts/run.sh) instead of starting one. Needs what the e2e
tests need: the system Chromium and the editor bundle (web/build.sh; scripts/run.sh and scripts/test.sh build it).
"""

import argparse
import contextlib
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "e2e"))

from conftest import BOOT_TIMEOUT_MS, launch, python, serving  # noqa: E402 - the e2e tests' server and browser setup
from playwright.sync_api import sync_playwright  # noqa: E402

EXAMPLE = """\
model = pe.Sequential([
    pe.layers.Dense(8, activation="relu", input_shape=(4,)),
    pe.layers.Dense(3, activation="softmax"),
])
x = pe.random_normal((4, 4), seed=0)
with pe.scope() as scope:  # all made inside is released, except the export
    probabilities = scope.export(model.predict(x))
    print("classes:", (await probabilities.argmax(axis=1).data()).tolist())
print("tensors alive:", pe.memory().num_tensors)
probabilities
"""


@contextlib.contextmanager
def own_server():
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp) / "models"
        subprocess.run(
            [python(), "-m", "app", "convert", "efficientnet-lite0", "--models", str(models)], cwd=REPO, check=True
        )
        with serving(models, Path(tmp) / "server.log") as url:
            yield url


def screenshot(url, out):
    with sync_playwright() as p:
        browser = launch(p, webgpu=True)
        page = browser.new_context(viewport={"width": 1180, "height": 900}).new_page()
        page.goto(url)
        page.wait_for_function(
            "() => window.playground && playground.state === 'ready' && document.querySelector('#editor').shadowRoot",
            timeout=BOOT_TIMEOUT_MS,
        )
        page.get_by_role("region", name="Examples").get_by_role(
            "button", name="Train a classifier with live charts"
        ).click()
        page.wait_for_function(
            "() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=300_000
        )
        page.get_by_role("region", name="Examples").get_by_role("button", name="Tidy vs a leak").click()
        page.wait_for_function("() => playground.running === null && playground.charts().plots.length > 0")
        page.get_by_role("region", name="Memory lab").get_by_role("button", name="Find leaks").click()
        page.get_by_role("table", name="Live tensors (pe.leaks())").wait_for()
        page.get_by_role("textbox", name="Python code").click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(EXAMPLE)
        page.keyboard.press("Control+Enter")
        page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)")
        page.get_by_role("button", name="Cat (PNG)").click()
        page.wait_for_function("() => document.querySelectorAll('#classify-results li').length === 5", timeout=300_000)
        page.get_by_role("textbox", name="Python code").blur()
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=True)
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "playground.png")
    parser.add_argument("--url", help="a playground server that is already running")
    args = parser.parse_args()
    with contextlib.nullcontext(args.url) if args.url else own_server() as url:
        screenshot(url, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
