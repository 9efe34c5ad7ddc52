"""Image classification latency in the page: EfficientNet-Lite0 on webgpu and on numpy (Pyodide in the worker).

    .venv/bin/python bench/classify_latency.py                  # starts `python -m app serve`, 20 warm runs
    .venv/bin/python bench/classify_latency.py --runs 50 --url http://127.0.0.1:8000/

For each backend, a fresh browser context (empty HTTP cache) opens the playground (?backend=...) and
classifies static/samples/chelsea.png (451x300 PNG) through window.playground.classify:
- weight download: first shard request to last shard byte, cold cache; then again from a second page in
  the same context, where the immutable shards come from the browser's cache;
- load (model.json, shards, checks, tensors) and warm-up (folding, pipeline compiles);
- cold: the first classify() call, load and warm-up included, and its own time after them;
- warm: the median of --runs further calls, in total (decode included) and split into preprocess, forward
  and readback as the page measures them;
- the forward pass alone on a [1, 224, 224, 3] input, captured (pe.capture: replayed in one bridge call) and
  uncaptured (an op at a time), --runs of each taken in turns: the Python time of the call, and its wall
  time until its logits are read back and their top-5 taken (on numpy a captured function just runs, so both
  are the same code).
Prints milliseconds and the webgpu/numpy ratio. Timings are for reading, never asserted in tests.
"""

import argparse
import statistics

from harness import launch, open_playground, playground_server, run_python
from playwright.sync_api import sync_playwright

IMAGE = "samples/chelsea.png"
TIMED_CLASSIFY = """async (image) => {
    const start = performance.now();
    await playground.classify(image);
    return { ms: performance.now() - start, ...playground.lastClassification };
}"""
FORWARD = """
import statistics, time
import playground

c = playground._classifier
x = pe.zeros((1, 224, 224, 3))

async def timed(forward):
    with pe.scope():
        start = time.perf_counter()
        y = forward(x)
        python = time.perf_counter() - start
        playground.top_k(await y.data())
        return python * 1e3, (time.perf_counter() - start) * 1e3

times = {"captured": [], "uncaptured": []}
for forward in (c.forward, c.logits):  # one untimed call each (the classifications before compiled and recorded)
    await timed(forward)
for _ in range(RUNS):
    times["captured"].append(await timed(c.forward))
    times["uncaptured"].append(await timed(c.logits))
x.dispose()
{name: [statistics.median(t[i] for t in runs) for i in (0, 1)] for name, runs in times.items()}
"""


def measure(browser, url, backend, runs):
    context = browser.new_context()
    page, _ = open_playground(context, url, backend)
    cold = page.evaluate(TIMED_CLASSIFY, IMAGE)
    warm = [page.evaluate(TIMED_CLASSIFY, IMAGE) for _ in range(runs)]
    forward = run_python(page, FORWARD.replace("RUNS", str(runs)))
    cached = open_playground(context, url, backend)[0].evaluate("playground.loadClassifier()")
    context.close()
    load, t = cold["load"], cold["timings"]
    median = lambda key: statistics.median(r["timings"][key] for r in warm)  # noqa: E731
    return {
        "top-1": f"{cold['top'][0]['index']} {cold['top'][0]['label']}",
        "weights": f"{load['download_bytes'] / 2**20:.1f} MiB",
        "weight download, empty cache": load["download_ms"],
        "weight download, browser cache": cached["download_ms"],
        "load (all of it)": load["load_ms"],
        "warm-up": load["warmup_ms"],
        "cold classify (load + warm-up + run)": cold["ms"],
        "cold run alone (pre + fwd + readback)": sum(t.values()),
        f"warm classify, median of {runs}": statistics.median(r["ms"] for r in warm),
        "  preprocess (median)": median("preprocess_ms"),
        "  forward, recorded (median)": median("forward_ms"),
        "  readback, GPU work included (median)": median("readback_ms"),
        "forward captured: Python (median)": forward["captured"][0],
        "forward captured: wall to top-5 (median)": forward["captured"][1],
        "forward uncaptured: Python (median)": forward["uncaptured"][0],
        "forward uncaptured: wall to top-5 (median)": forward["uncaptured"][1],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--runs", type=int, default=20, help="warm classifications per backend (default 20)")
    args = parser.parse_args()
    with playground_server(args.url) as url, sync_playwright() as p:
        browser = launch(p)
        results = {backend: measure(browser, url, backend, args.runs) for backend in ("webgpu", "numpy")}
        print(f"Chromium {browser.version}, {IMAGE}")
        browser.close()
    gpu, cpu = results["webgpu"], results["numpy"]
    print(f"  {'':40s} {'webgpu':>10s} {'numpy':>10s} {'webgpu/numpy':>13s}")
    for name, g in gpu.items():
        c = cpu[name]
        if isinstance(g, str):
            print(f"  {name:40s} {g:>10s} {c:>10s}" if len(g) <= 10 else f"  {name:40s} {g} | {c}")
        else:  # a ratio of times under a millisecond says nothing
            ratio = f"{g / c:12.2f}x" if min(g, c) >= 1 else f"{'-':>13s}"
            digits = 2 if min(g, c) < 10 else 0  # the Python time of a replay is a fraction of a millisecond
            print(f"  {name:40s} {g:8.{digits}f}ms {c:8.{digits}f}ms {ratio}")


if __name__ == "__main__":
    main()
