"""Make the README's picture of the playground: docs/playground.png.

Starts the real server (as the e2e tests do, with the converted EfficientNet-Lite0), opens the page in headless Chromium
with WebGPU (on a machine without a GPU that is SwiftShader, so the page starts on wasm), runs the gallery's training
example (its live charts) and its leaking one, uploads a CSV into Files, lists the live tensors in the Memory lab, gives
Teach two samples, classifies the cat sample, runs an example in the editor, and saves the first screen at 1440x900 with
the Examples panel. With --panels DIR it also saves each panel (the whole page) at 1440x900 and 390x844 in DIR.

    .venv/bin/python scripts/screenshot.py [--out docs/playground.png] [--panels DIR] [--url http://127.0.0.1:8000/]

With --url it uses a server that is already running (scripts/run.sh) instead of starting one. Needs what the e2e
tests need: the system Chromium and the editor bundle (static/src/build.sh; scripts/run.sh and scripts/test.sh build it).
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


PANELS = ["Examples", "Files", "Charts", "Memory lab", "Classify", "Vision", "Teach"]
VIEWPORTS = {"wide": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


def show_panel(page, name):
    page.get_by_role("tablist", name="Panels").get_by_role("tab", name=name, exact=True).click()


def fill_the_page(page):
    """Charts drawn, the leak table listed, a file uploaded, code run in the editor, the cat classified, Teach given
    samples."""
    show_panel(page, "Examples")
    page.get_by_role("region", name="Examples").get_by_role(
        "button", name="Train a classifier with live charts"
    ).click()
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=300_000)
    page.get_by_role("region", name="Examples").get_by_role("button", name="Tidy vs a leak").click()
    page.wait_for_function("() => playground.running === null && playground.charts().plots.length > 0")
    page.evaluate("playground.files.upload([new File(['name,count\\nadam,3\\neve,5\\n'], 'data.csv')])")
    show_panel(page, "Memory lab")
    page.get_by_role("region", name="Memory lab").get_by_role("button", name="Find leaks").click()
    page.get_by_role("table", name="Live tensors (pe.leaks())").wait_for()
    show_panel(page, "Teach")
    teach = page.get_by_role("region", name="Teach")
    for n, sample in ((1, "Cat"), (2, "Rocket")):
        teach.get_by_role("button", name=f"Add the {sample} sample to class {n}").click()
        teach.get_by_role("listitem", name=f"Class {n}").get_by_text("1 image", exact=True).wait_for(timeout=300_000)
    show_panel(page, "Classify")
    page.get_by_role("button", name="Cat (PNG)").click()
    page.wait_for_function("() => document.querySelectorAll('#classify-results li').length === 5", timeout=300_000)
    page.get_by_role("tablist", name="Open files").get_by_role("tab", name="main.py").click()  # the user's own file
    page.get_by_role("textbox", name="Python code").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(EXAMPLE)
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)")
    page.get_by_role("textbox", name="Python code").blur()


def screenshot(url, out, panels_dir=None):
    with sync_playwright() as p:
        browser = launch(p, webgpu=True)
        page = browser.new_context(viewport=VIEWPORTS["wide"]).new_page()
        page.goto(url)
        page.wait_for_function(
            "() => window.playground && playground.state === 'ready' && document.querySelector('#editor').shadowRoot",
            timeout=BOOT_TIMEOUT_MS,
        )
        fill_the_page(page)
        show_panel(page, "Examples")
        page.evaluate("window.scrollTo(0, 0)")
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out))
        if panels_dir:
            panels_dir.mkdir(parents=True, exist_ok=True)
            for size, viewport in VIEWPORTS.items():
                page.set_viewport_size(viewport)
                for name in PANELS:
                    show_panel(page, name)
                    file = panels_dir / f"{size}-{name.lower().replace(' ', '-')}.png"
                    page.screenshot(path=str(file), full_page=True)
                    print(f"wrote {file}")
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "playground.png")
    parser.add_argument("--url", help="a playground server that is already running")
    parser.add_argument("--panels", type=Path, help="also save every panel at 1440x900 and 390x844 in this folder")
    args = parser.parse_args()
    with contextlib.nullcontext(args.url) if args.url else own_server() as url:
        screenshot(url, args.out, args.panels)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
