"""Whether a shard fetched as several byte ranges at once reaches Python sooner in the page's worker: each request has
its own pipe, which the browser fills while Python holds the worker's thread. BUSY ms of Python after the requests,
then every body read (io/fetch.py's _body); ms from the requests to the whole shard in Python, a fresh browser
context each, the ways in turns.

    .venv/bin/python bench/experiments/ranged_shard.py [--model movenet-lightning] [--busy 15] [--rounds 3]
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
from pyodide.ffi import to_js
from py_engine.io import fetch

model = MODEL_URL_
manifest = json.loads((await (await js.fetch(model)).arrayBuffer()).to_bytes())["weightsManifest"]
url = js.URL.new(manifest[0]["paths"][0], model).href
size = int((await js.fetch(url, to_js({"method": "HEAD"}, dict_converter=js.Object.fromEntries))).headers.get("content-length"))


def busy(ms):
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        pass


parts = PARTS_
cuts = [size * k // parts for k in range(parts + 1)]
start = js.performance.now()
if parts == 1:
    requests = [js.fetch(url)]
else:
    requests = [
        js.fetch(url, to_js({"headers": {"Range": f"bytes={a}-{b - 1}"}}, dict_converter=js.Object.fromEntries))
        for a, b in zip(cuts, cuts[1:])
    ]


async def body(request):
    response = await request
    return await fetch._body(response, "shard", url)


bodies = [asyncio.ensure_future(body(r)) for r in requests]
busy(BUSY_)
datas = [await b for b in bodies]
{"ms": js.performance.now() - start, "bytes": sum(d.length for d in datas)}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="movenet-lightning")
    parser.add_argument("--busy", type=int, default=15, help="ms of Python while the bodies download")
    parser.add_argument("--parts", type=int, action="append", help="ways to cut the shard (default 1, 2, 4)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="a playground server (default: this checkout's)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    parts = args.parts or [1, 2, 4]
    times = {n: [] for n in parts}
    with playground_server(args.url, graph_models=True) as url, sync_playwright() as p:
        browser = launch(p)
        for r in range(args.rounds):
            load = Path("/proc/loadavg").read_text().split()[0]
            for n in parts if r % 2 == 0 else parts[::-1]:
                context = browser.new_context()
                try:
                    page, _ = open_settled_playground(context, url, "wasm")
                    code = READ.replace("MODEL_URL_", repr(f"{url}models/{args.model}/model.json"))
                    got = run_python(page, code.replace("BUSY_", str(args.busy)).replace("PARTS_", str(n)))
                finally:
                    context.close()
                times[n].append(got["ms"])
                print(f"round {r} (load {load}) {n} part(s): {json.dumps({k: round(v, 1) for k, v in got.items()})}")
        browser.close()
    print(f"{args.model}'s first shard, requests to the whole body in Python, medians of {args.rounds} (ms):")
    for n, ms in times.items():
        print(f"  {n} part(s) {statistics.median(ms):7.1f}")


if __name__ == "__main__":
    main()
