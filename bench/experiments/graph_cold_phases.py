"""Where a graph model's cold start goes on wasm, in the page: pe.load_graph_model's parts called one after the other,
the browser's resource timing of model.json and the shards, the warm-up, first and warm runs, and Pyodide's heap after
each; TF.js-wasm's load, warm-up, first run and cold in the same round (bench/compare.py's measure).

    .venv/bin/python bench/experiments/graph_cold_phases.py [--model centernet] [--rounds 3] [--url URL ...]

With several --url (servers of two checkouts, each `python -m app serve` from its own folder: its own engine wheel),
each in turn within a round, so a busy machine slows them alike; without, this checkout's server. Prints each
server's medians and least values (ms; the resource timing's marks are ms from the load's start).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import compare
from harness import launch, open_settled_playground, playground_server, run_python

# pe.load_graph_model's parts (models/graph_model.py _load), timed one after the other
PHASES = """
import json, statistics, time
import js, pyodide_js
from py_engine.io import fetch, weights_manifest
from py_engine.models import graph_model as G

T = {}
start = js.performance.now()


def since(t0):
    return (time.perf_counter() - t0) * 1e3


def heap():
    return pyodide_js._module.HEAPU8.length / 1e6


unpack = weights_manifest.unpack


def timed_unpack(group, shards):
    t0 = time.perf_counter()
    try:
        return unpack(group, shards)
    finally:
        T["unpack"] = T.get("unpack", 0) + since(t0)


weights_manifest.unpack = timed_unpack
try:
    began = time.perf_counter()
    location = fetch.Location(MODEL_URL_)
    t0 = time.perf_counter(); raw = await location.read(location.target, "model.json"); T["model.json"] = since(t0)
    t0 = time.perf_counter(); artifacts = G.read_json(raw); T["json"] = since(t0)
    t0 = time.perf_counter()
    fetching = await weights_manifest.start_fetch(location, artifacts.get("weightsManifest") or [])
    T["start_fetch"] = since(t0)
    t0 = time.perf_counter(); graph, consts = G._checked_graph(artifacts); T["parse and checks"] = since(t0)
    t0 = time.perf_counter(); arrays = await fetching; T["shards (read, sha256, unpack)"] = since(t0)
    t0 = time.perf_counter()
    weights, host_values = {}, {}
    for node in consts:
        if node.name not in weights:
            array = arrays[node.name] if node.name in arrays else np.array(node.attrs["value"])
            weights[node.name] = G.ENGINE.keep(G.ENGINE.from_numpy(array, G.dtypes.of_numpy(array.dtype)))
            if array.size <= G.HOST_VALUE_LIMIT:
                host_values[weights[node.name].id] = array
    model = G.GraphModel(graph, weights, host_values)
    T["tensors and GraphModel"] = since(t0)
    T["load"] = since(began)
finally:
    weights_manifest.unpack = unpack
T["heap after load, MB"] = heap()
spec = model.inputs[0]
shape = [1 if d in (-1, None) else d for d in spec.shape]
x = pe.tensor(((np.arange(int(np.prod(shape))) * 7919) % 256).astype(spec.dtype).reshape(shape))


async def run():
    with pe.scope():
        t0 = time.perf_counter()
        ys = model.execute(x)
        for y in ys if isinstance(ys, list) else [ys]:
            await y.data()
        return since(t0)


T["warm-up"] = await run()
T["heap after warm-up, MB"] = heap()
T["first run"] = await run()
T["cold"] = since(began)
T["warm"] = statistics.median([await run() for _ in range(5)])
T["heap after the runs, MB"] = heap()
for entry in js.performance.getEntriesByType("resource"):
    if "/models/" in entry.name:
        what = "model.json" if entry.name.endswith("model.json") else "shard"
        T[f"{what}: request out at"] = entry.requestStart - start
        T[f"{what}: first byte at"] = entry.responseStart - start
        T[f"{what}: last byte at"] = entry.responseEnd - start
x.dispose()
model.dispose()
T
"""
TFJS_KEYS = ("load_ms", "warmup_ms", "first_ms", "cold_ms", "warm_ms")


def ours(browser, url, model):
    context = browser.new_context()
    try:
        page, _ = open_settled_playground(context, url, "wasm", compare.STORED_TIMEOUT_MS)
        return run_python(page, PHASES.replace("MODEL_URL_", repr(f"{url}models/{model}/model.json")))
    finally:
        context.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="movenet-lightning")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", action="append", help="a playground server (several: each in turn)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with _given(args.url) if args.url else playground_server(graph_models=True) as served:
        urls = served if isinstance(served, list) else [served]
        rows = {url: [] for url in urls} | {"TF.js-wasm": []}
        with sync_playwright() as p:
            browser = launch(p)
            for r in range(args.rounds):
                load = Path("/proc/loadavg").read_text().split()[0]
                for url in urls if r % 2 == 0 else urls[::-1]:
                    rows[url].append(ours(browser, url, args.model))
                    print(f"round {r} (load {load}) {url}: {json.dumps(_rounded(rows[url][-1]))}", flush=True)
                model_json = f"models/{args.model}/model.json"
                t = compare.tfjs(browser, urls[0], "wasm", False, 5, compare.TFJS_GRAPH_MEASURE, model_json)
                rows["TF.js-wasm"].append({k: t[k] for k in TFJS_KEYS})
                print(f"round {r} (load {load}) TF.js-wasm: {json.dumps(_rounded(rows['TF.js-wasm'][-1]))}", flush=True)
            browser.close()
    print(f"{args.model}, medians (least) of {args.rounds} rounds:")
    for name, results in rows.items():
        print(f"  {name}")
        for key in results[0]:
            values = [r[key] for r in results]
            print(f"    {key:38s} {statistics.median(values):9.1f} ({min(values):.1f})")


class _given:
    """The servers given with --url, as playground_server yields its own."""

    def __init__(self, urls):
        self.urls = [u if u.endswith("/") else u + "/" for u in urls]

    def __enter__(self):
        return self.urls

    def __exit__(self, *exc):
        return False


def _rounded(row):
    return {k: round(v, 1) for k, v in row.items()}


if __name__ == "__main__":
    main()
