"""Whether a shard fetched as several byte ranges at once reaches Python sooner in the page's worker: each request has
its own pipe, which the browser fills while Python holds the worker's thread. BUSY ms of Python after the requests,
then every body read (io/fetch.py's _chunks); ms from the requests to the whole shard in Python, a fresh browser
context each, the ways in turns.

    .venv/bin/python bench/experiments/ranged_shard.py [--model movenet-lightning] [--busy 15] [--rounds 3]
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import FIRST_SHARD, in_fresh_pages, playground_server

READ = (
    FIRST_SHARD
    + """
from pyodide.ffi import to_js

size = int((await js.fetch(url, to_js({"method": "HEAD"}, dict_converter=js.Object.fromEntries))).headers.get("content-length"))

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
    return await fetch._chunks(response, "shard", url)


bodies = [asyncio.ensure_future(body(r)) for r in requests]
busy(BUSY_)
datas = [await b for b in bodies]
{"ms": js.performance.now() - start, "bytes": sum(chunk.length for chunks in datas for chunk in chunks)}
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="movenet-lightning")
    parser.add_argument("--busy", type=int, default=15, help="ms of Python while the bodies download")
    parser.add_argument("--parts", type=int, action="append", help="ways to cut the shard (default 1, 2, 4)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="a playground server (default: this checkout's)")
    args = parser.parse_args()
    parts = args.parts or [1, 2, 4]
    with playground_server(args.url, graph_models=True) as url:
        code = READ.replace("MODEL_URL_", repr(f"{url}models/{args.model}/model.json"))
        codes = {f"{n} part(s)": code.replace("BUSY_", str(args.busy)).replace("PARTS_", str(n)) for n in parts}
        results = in_fresh_pages(url, codes, args.rounds, alternate=True)
    print(f"{args.model}'s first shard, requests to the whole body in Python, medians of {args.rounds} (ms):")
    for way, got in results.items():
        print(f"  {way} {statistics.median(g['ms'] for g in got):7.1f}")


if __name__ == "__main__":
    main()
