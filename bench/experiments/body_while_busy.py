"""Whether Python's work in the page's worker delays a download: a graph model's first shard fetched with the
browser's fetch, then BUSY ms of Python (one block, or 1 ms slices with a turn of the event loop between), then its
body read (io/fetch.py's _chunks, as the loader reads it); ms from the request to the whole body in Python, a fresh browser context each.

    .venv/bin/python bench/experiments/body_while_busy.py [--model movenet-lightning] [--busy 20] [--rounds 3]

A body the worker's thread moves into the page arrives later by about the time Python held that thread
(docs/journal/graph-models-cold-path.md).
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
start = js.performance.now()
response = await js.fetch(url)
body = asyncio.ensure_future(fetch._chunks(response, "shard", url))
if SLICED_:
    for _ in range(BUSY_):
        busy(1)
        await asyncio.sleep(0)
else:
    busy(BUSY_)
chunks = await body
{"ms": js.performance.now() - start, "bytes": sum(chunk.length for chunk in chunks)}
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="movenet-lightning")
    parser.add_argument("--busy", type=int, default=20, help="ms of Python while the body downloads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="a playground server (default: this checkout's)")
    args = parser.parse_args()
    ways = {"idle": (0, False), f"{args.busy} ms at once": (args.busy, False), f"{args.busy} x 1 ms": (args.busy, True)}
    with playground_server(args.url, graph_models=True) as url:
        code = READ.replace("MODEL_URL_", repr(f"{url}models/{args.model}/model.json"))
        codes = {
            way: code.replace("BUSY_", str(ms)).replace("SLICED_", str(sliced)) for way, (ms, sliced) in ways.items()
        }
        results = in_fresh_pages(url, codes, args.rounds)
    print(f"{args.model}'s first shard, request to body in Python, medians of {args.rounds} (ms):")
    for way, got in results.items():
        print(f"  {way:20s} {statistics.median(g['ms'] for g in got):7.1f}")


if __name__ == "__main__":
    main()
