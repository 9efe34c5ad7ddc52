"""Where EfficientNet-Lite0's forward pass spends its GPU time, in the page on webgpu.

    .venv/bin/python bench/forward_profile.py [--url http://127.0.0.1:8000/]

In headless Chromium ($CHROMIUM_PATH or /usr/bin/chromium, --enable-unsafe-webgpu), the page loads the
model as the Classify panel does (folded, unfolded weights released), runs a few forward passes, then one
more with a readback after every step of the inference plan, so each step's time includes its GPU work.
Steps are grouped by their kernels (name and filter size). Printed next to the plain forward pass (one
readback at the end) measured in the same run: the synced total is higher by the readbacks' own cost.
Timings are for reading, never asserted in tests.
"""

import argparse

from harness import launch, playground_server
from playwright.sync_api import sync_playwright

MEASURE = """
import collections, time
model = await pe.load_layers_model("/models/efficientnet-lite0/model.json")
model.fold_batch_norms(release_unfolded=True)
x = pe.zeros((1, 224, 224, 3))

async def plain():
    start = time.perf_counter()
    y = model.predict(x)
    await y.data()
    y.dispose()
    return (time.perf_counter() - start) * 1e3

plain_ms = sorted([await plain() for _ in range(5)])[2]  # the median of 5, after the first compiles
groups = collections.defaultdict(lambda: [0, 0.0])
plan = model.inference_plan()
original = [step.fn for step in plan.steps]

def timed(fn):
    def run(inputs):
        start = time.perf_counter()
        profile = pe.profile(fn, inputs)
        out = profile.result
        out.reshape(-1)[:1].numpy()  # a synchronous readback (JSPI): waits for this step's GPU work
        label = " + ".join(
            k.name + (f" {k.input_shapes[1][0]}x{k.input_shapes[1][1]}" if "Conv" in k.name else "")
            for k in profile.kernels
        )
        label = label or "(no kernel: dropout, a view)"
        groups[label][0] += 1
        groups[label][1] += (time.perf_counter() - start) * 1e3
        return out
    return run

for step in plan.steps:
    step.fn = timed(step.fn)
start = time.perf_counter()
model.predict(x).dispose()
synced_ms = (time.perf_counter() - start) * 1e3
for step, fn in zip(plan.steps, original):
    step.fn = fn
model.dispose(); x.dispose()
{"plain_ms": plain_ms, "synced_ms": synced_ms, "groups": sorted(groups.items(), key=lambda g: -g[1][1])}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    args = parser.parse_args()
    with playground_server(args.url) as url, sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        page.goto(f"{url}?backend=webgpu")
        info = page.evaluate("playground.ready")
        result = page.evaluate("code => playground.runPython(code)", MEASURE)
        browser.close()
    adapter = info["adapter"] or {}
    print(
        f"EfficientNet-Lite0 forward on {info['backend']} ({adapter.get('vendor', '')} {adapter.get('architecture', '')})"
    )
    print(f"  plain forward, median of 5: {result['plain_ms']:7.0f} ms (reference)")
    print(
        f"  synced after every step:    {result['synced_ms']:7.0f} ms ({result['synced_ms'] / result['plain_ms']:.2f}x)"
    )
    print(f"  {'kernels of the step':44s} {'steps':>5s} {'ms':>8s} {'share':>6s}")
    for label, (count, ms) in result["groups"]:
        print(f"  {label[:44]:44s} {count:5d} {ms:8.0f} {ms / result['synced_ms']:6.0%}")


if __name__ == "__main__":
    main()
