"""Whether Python's work in the page's worker delays a download: a graph model's first shard fetched with the
browser's fetch, then BUSY ms of Python (one block, or 1 ms slices with a turn of the event loop between), then its
body read (io/fetch.py's _body); ms from the request to the whole body in Python, a fresh browser context each.

    .venv/bin/python bench/experiments/body_while_busy.py [--model movenet-lightning] [--busy 20] [--rounds 3]

A body the worker's thread moves into the page arrives later by about the time Python held that thread
(docs/journal/graph-models-cold-path.md).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import launch, open_settled_playground, playground_server, run_python

READ = """
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


start = js.performance.now()
response = await js.fetch(url)
body = asyncio.ensure_future(fetch._body(response, "shard", url))
if SLICED_:
    for _ in range(BUSY_):
        busy(1)
        await asyncio.sleep(0)
else:
    busy(BUSY_)
data = await body
{"ms": js.performance.now() - start, "bytes": data.length}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="movenet-lightning")
    parser.add_argument("--busy", type=int, default=20, help="ms of Python while the body downloads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="a playground server (default: this checkout's)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    ways = {"idle": (0, False), f"{args.busy} ms at once": (args.busy, False), f"{args.busy} x 1 ms": (args.busy, True)}
    times = {way: [] for way in ways}
    with playground_server(args.url, graph_models=True) as url, sync_playwright() as p:
        browser = launch(p)
        for r in range(args.rounds):
            load = Path("/proc/loadavg").read_text().split()[0]
            for way, (ms, sliced) in ways.items():
                context = browser.new_context()
                try:
                    page, _ = open_settled_playground(context, url, "wasm")
                    code = READ.replace("MODEL_URL_", repr(f"{url}models/{args.model}/model.json"))
                    got = run_python(page, code.replace("BUSY_", str(ms)).replace("SLICED_", str(sliced)))
                finally:
                    context.close()
                times[way].append(got["ms"])
                print(f"round {r} (load {load}) {way}: {json.dumps({k: round(v, 1) for k, v in got.items()})}")
        browser.close()
    print(f"{args.model}'s first shard, request to body in Python, medians of {args.rounds} (ms):")
    for way, ms in times.items():
        print(f"  {way:20s} {statistics.median(ms):7.1f}")


if __name__ == "__main__":
    main()
