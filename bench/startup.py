"""Page startup: the playground's time to ready against a bare page that only boots Pyodide and imports numpy, and a
visitor's wait for the top-5 of a sample image.

    .venv/bin/python bench/startup.py             # 3 rounds; --rounds N
    .venv/bin/python bench/startup.py --backend webgpu   # our page started on a backend named (?backend=NAME)
    .venv/bin/python bench/startup.py --rounds 5 --out bench/results/startup.json
    .venv/bin/python bench/startup.py --static DIR       # another page folder, e.g. an older commit's static/

One server (app/'s `serve`) serves a copy of static/ with a bare page added (bench_bare/: a page whose worker loads the
same Pyodide from the same indexURL, loads numpy and imports it, then posts its time), so both pages share the origin,
the Pyodide files and their HTTP caching. It serves the checkout's models/ (the default classifier converted first if
missing), so our page boots as a visitor's does: compiling the classifier's pipelines and downloading its files. Its
engine wheel is built from a copy of py_engine taken at the start: the server rebuilds the wheel when the checkout's
sources change, and a new wheel misses the bytecode and site-packages a first visit stored (others edit this checkout
while the bench runs). Each round, for each page in turn: a fresh Chromium profile (headless, WebGPU flags of
bench/harness.py) opens the page (first visit), the browser closes, then reopens with the same profile and opens the
page again (repeat visit: the HTTP cache, V8's code cache and Dawn's shader cache are whatever that profile kept; our
page's first visit stays open until it has stored its Pyodide snapshot, bytecode and site-packages for the next one,
playground.startupCache; its first visit restores the bytecode the server compiled before serving, app/bytecode.py).
Our page is used as a visitor would: the "Cat (PNG)" sample is clicked as soon as the page answers a click (its
scripts have run: DOMContentLoaded), and its top-5 timed when the Classify panel shows it; the page starts on the
backend it picks itself (wasm on SwiftShader), unless --backend names one. Times are since navigation start.
Prints medians, the ratios ours/bare, the visitor's wait for the top-5 on a first and on a repeat visit, the bytes
received (response bodies as sent: gzipped where the server sends gzip, app/compression.py) and the worker's
per-phase timings (median); writes everything to the JSON file.
Timings are for reading, never asserted.
"""

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
from pathlib import Path

from harness import FLAGS, PYTHON, REPO, WEBGPU, free_port, models_folder, wait_until_serving, wait_until_stored
from playwright.sync_api import sync_playwright

BOOT_TIMEOUT_MS = 300_000
CHROMIUM = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"
SAMPLE = "Cat (PNG)"  # the sample button's accessible name (static/index.html)
# Our page: the time since navigation start at which the Classify panel first lists a top-5
TOP5_SHOWN = """
new MutationObserver((_, observer) => {
  if (document.querySelectorAll("#classify-results li").length >= 5) {
    window.top5Ms = performance.now();
    observer.disconnect();
  }
}).observe(document, { childList: true, subtree: true });
"""
TOP5_OR_FAILURE = "() => window.top5Ms || document.querySelector('#classify-status.failed')"
BARE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bare Pyodide + numpy</title>
<script src="bare.js" defer></script></head><body><p id="status">booting</p></body></html>
"""
# The page side: the worker's message, stamped with the time since navigation start (as static/page/main.js does).
BARE_SCRIPT = """"use strict";
const worker = new Worker("bare_worker.js");
worker.onmessage = ({ data }) => { window.bareReady = { ...data, ready_ms: performance.now() }; };
"""
BARE_WORKER = """"use strict";
async function boot() {
  const config = await (await fetch("../config.json", { cache: "no-store" })).json();
  const indexURL = new URL(config.pyodide_index_url, self.location.href).href;
  const timings = {};
  let start = performance.now();
  importScripts(indexURL + "pyodide.js");
  const pyodide = await loadPyodide({ indexURL });
  timings.pyodide_boot_ms = performance.now() - start;
  start = performance.now();
  await pyodide.loadPackage("numpy");
  pyodide.runPython("import numpy");
  timings.numpy_ms = performance.now() - start;
  return timings;
}
boot().then((timings) => self.postMessage({ ok: true, timings }), (e) => self.postMessage({ ok: false, error: String(e) }));
"""


# The server of app/__main__.py for a static folder, with the engine built from a copy of the checkout's sources (the
# files app/engine_wheel.py builds from) and its wheels cached in an assets folder of its own (the checkout's
# .assets/engine prunes builds other servers may be serving) that links the verified Pyodide.
SERVE = """
import shutil, sys
from pathlib import Path
from app.__main__ import serve
from app.assets import pyodide_dir
from app.engine_wheel import source_files
from app.settings import Settings
static, models, engine_source, assets = map(Path, sys.argv[1:5])
checkout = Settings()
for rel in source_files(checkout.engine_source):
    (engine_source / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(checkout.engine_source / rel, engine_source / rel)
assets.mkdir()
pyodide_dir(assets).symlink_to(pyodide_dir(checkout.assets_dir))
settings = Settings(static_dir=static, models_dir=models, engine_source=engine_source, assets_dir=assets)
serve(settings, "127.0.0.1", int(sys.argv[5]))
"""


@contextlib.contextmanager
def frozen_engine_server(site: Path, scratch: Path):
    """A playground server for `site` whose engine wheel is built from py_engine as it is now; yields its URL."""
    models = models_folder(scratch / "models")  # as served: the page compiles and downloads its classifier as it boots
    port = free_port()
    args = [site, models, scratch / "engine-source", scratch / "assets", port]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    proc = subprocess.Popen([PYTHON, "-c", SERVE, *map(str, args)], cwd=REPO, **quiet)
    try:
        yield wait_until_serving(f"http://127.0.0.1:{port}/", proc)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait()


def site_with_bare_page(static: Path, scratch: Path) -> Path:
    """A copy of the page's folder with bench_bare/ added, served in place of static/ for this run."""
    site = scratch / "static"
    shutil.copytree(static, site)
    bare = site / "bench_bare"
    bare.mkdir()
    (bare / "index.html").write_text(BARE_PAGE)
    (bare / "bare.js").write_text(BARE_SCRIPT)
    (bare / "bare_worker.js").write_text(BARE_WORKER)
    return site


def visit(playwright, profile: Path, url: str, bare: bool) -> dict:
    """Open `url` in Chromium with the profile folder `profile`; the page's ready info once it is ready (ours: with
    top5_ms, the time its top-5 of the sample showed, and the backend it ran on)."""
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=[WEBGPU, *FLAGS]
    )
    finished = []  # every request of the page and its worker that got its answer, for the bytes on the wire
    context.on("requestfinished", lambda request: finished.append(request))
    try:
        page = context.new_page()
        if bare:
            page.goto(url)
            page.wait_for_function("() => window.bareReady", timeout=BOOT_TIMEOUT_MS)
            info = page.evaluate("window.bareReady")
            if not info["ok"]:
                raise RuntimeError(f"the bare page failed to boot: {info['error']}")
        else:
            page.add_init_script(TOP5_SHOWN)
            page.goto(url, wait_until="domcontentloaded")  # its deferred scripts have run: a sample answers a click
            page.get_by_role("tab", name="Classify").click()  # the panel with the samples (static/page/tabs.js)
            page.get_by_role("button", name=SAMPLE).click()
            page.wait_for_function(TOP5_OR_FAILURE, timeout=BOOT_TIMEOUT_MS)
            top5_ms, status = page.evaluate("[window.top5Ms, document.querySelector('#classify-status').textContent]")
            if top5_ms is None:
                raise RuntimeError(f"the page did not classify the sample: {status}")
            info = page.evaluate("playground.ready")
            info["top5_ms"] = top5_ms
            info["top5_backend"] = page.evaluate("playground.lastClassification.backend")
            cached = (info.get("bytecode_cached_files"), info.get("installed_cached_files"))
            if 0 in cached or info.get("pyodide_from_snapshot") is False:
                # the page stays open until it has stored what its boot found missing from the cache
                info["stored"] = wait_until_stored(page, BOOT_TIMEOUT_MS)
        info["received_bytes"] = sum(r.sizes()["responseBodySize"] for r in finished)
        return info
    finally:
        context.close()


def median(values):
    return statistics.median(values) if values else None


def phase_medians(infos):
    names = sorted({name for info in infos for name in info.get("timings", {})})
    phases = {
        name: median([info["timings"][name] for info in infos if name in info.get("timings", {})]) for name in names
    }
    for extra in ("backend_start_ms", "warmup_ms"):
        values = [info[extra] for info in infos if extra in info]
        if values:
            phases[extra] = median(values)
    return phases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="visits of each kind per page (default 3)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "startup.json")
    parser.add_argument(
        "--static",
        type=Path,
        default=REPO / "static",
        help="the page's folder to measure, e.g. an older commit's (git archive COMMIT static | tar -x -C DIR)",
    )
    parser.add_argument("--backend", help="start our page on this backend (?backend=NAME; default: the page's choice)")
    args = parser.parse_args()
    ours_page = f"?backend={args.backend}" if args.backend else ""
    runs = {(page, kind): [] for page in ("bare", "ours") for kind in ("first", "repeat")}
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        scratch = Path(tmp)
        site = site_with_bare_page(args.static, scratch)
        with frozen_engine_server(site, scratch) as url, sync_playwright() as p:
            for round_ in range(args.rounds):
                for page in ("bare", "ours"):  # interleaved: a slow spell of this shared machine hits both
                    profile = scratch / f"profile-{page}-{round_}"
                    target = url + ("bench_bare/" if page == "bare" else ours_page)
                    for kind in ("first", "repeat"):
                        info = visit(p, profile, target, bare=page == "bare")
                        runs[page, kind].append(info)
                        served = info.get("bytecode_served_files")
                        note = f"  (bytecode from the server: {served} files)" if served else ""
                        if "top5_ms" in info:
                            note = f"  top-5 {info['top5_ms']:8.0f} ms on {info['top5_backend']}" + note
                        print(
                            f"round {round_ + 1} {page:4} {kind:6} ready {info['ready_ms']:8.0f} ms{note}", flush=True
                        )
                    shutil.rmtree(profile, ignore_errors=True)
    summary = {}
    for kind in ("first", "repeat"):
        bare = median([i["ready_ms"] for i in runs["bare", kind]])
        ours = median([i["ready_ms"] for i in runs["ours", kind]])
        received = {page: median([i["received_bytes"] for i in runs[page, kind]]) for page in ("bare", "ours")}
        summary[kind] = {"bare_ms": bare, "ours_ms": ours, "ratio": ours / bare}
        summary[kind] |= {"bare_received_bytes": received["bare"], "ours_received_bytes": received["ours"]}
        summary[kind]["ours_top5_ms"] = median([i["top5_ms"] for i in runs["ours", kind]])
    print(f"\n{'visit':8} {'bare Pyodide+numpy':>20} {'ours (ready)':>14} {'ours/bare':>10}   received: bare, ours")
    for kind, row in summary.items():
        print(
            f"{kind:8} {row['bare_ms']:17.0f} ms {row['ours_ms']:11.0f} ms {row['ratio']:10.2f}"
            f"   {row['bare_received_bytes'] / 1e6:6.1f} MB, {row['ours_received_bytes'] / 1e6:.1f} MB"
        )
    backends = sorted({i["top5_backend"] for kind in ("first", "repeat") for i in runs["ours", kind]})
    print(
        f"\na visitor's wait, from navigation to the top-5 of the {SAMPLE!r} sample clicked as soon as the page "
        f"answers (median; classified on {', '.join(backends)}):"
    )
    for kind, row in summary.items():
        print(f"  {kind + ' visit':14} {row['ours_top5_ms']:8.0f} ms")
    phases = {f"{page} {kind}": phase_medians(runs[page, kind]) for page, kind in runs}
    print("\nper-phase medians (ms, measured in the worker)")
    for name, values in phases.items():
        print(f"  {name:12} " + "  ".join(f"{k.removesuffix('_ms')} {v:.0f}" for k, v in values.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "rounds": args.rounds,
        "summary": summary,
        "phases": phases,
        "runs": {f"{p} {k}": v for (p, k), v in runs.items()},
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
