"""Where EfficientNet-Lite0's forward pass spends its GPU time, in the page on webgpu.

    .venv/bin/python bench/experiments/forward_profile.py [--url http://127.0.0.1:8000/] [--layers] [--repeats 5]

In headless Chromium ($CHROMIUM_PATH or /usr/bin/chromium, --enable-unsafe-webgpu), the page loads the
model as the Classify panel does (folded, unfolded weights released) and times its forward pass captured
(pe.capture: replayed in one device call, as the classifier runs it). Then it walks the inference plan once:
each step is captured on its real input as --repeats runs of itself and replayed a few times, each replay
synced by a readback; the fastest replay over --repeats is the step's GPU time, without the Python per op or
the readback of a synced step. Steps are grouped by their kernels (name and filter size, stride 2 marked "/2");
--layers also groups them by shape (input height x width x channels > output channels). Printed next to the
captured forward pass measured in the same page: their sum is close to it. Timings are for reading, never
asserted in tests.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/harness.py, shared with the benchmarks
from harness import CAPTURED_FORWARD, FASTEST_REPLAY, playground_server, run_in_playground

MEASURE = (
    FASTEST_REPLAY
    + CAPTURED_FORWARD
    + """
import collections
model = await pe.load_layers_model("/models/efficientnet-lite0/model.json")
model.fold_batch_norms(release_unfolded=True)
x = pe.zeros((1, 224, 224, 3))
REPEATS, REPLAYS = __REPEATS__, 3

forward_ms = await captured_forward_ms(model, x)


def labels(kernels, inputs):
    kernel = " + ".join(
        k.name + (f" {k.input_shapes[1][0]}x{k.input_shapes[1][1]}" if "Conv" in k.name else "") for k in kernels
    ) or "(no kernel: dropout, a view)"
    first = inputs[0] if isinstance(inputs, list) else inputs
    if any("Conv" in k.name for k in kernels):
        conv = next(k for k in kernels if "Conv" in k.name)
        h, w, c = conv.input_shapes[0][1:]
        if conv.output_shapes[0][1] < h:
            kernel += "/2"
        return kernel, f"{kernel} {h}x{w}x{c}>{conv.output_shapes[0][3]}"
    return kernel, f"{kernel} {'x'.join(map(str, first.shape[1:]))}"


def step_ms(fn, inputs, mask):
    # the fastest of REPLAYS replays of REPEATS runs of the step on its real input (a tensor or a list of them)
    if isinstance(inputs, list):
        return fastest_replay_ms(lambda *xs: fn(list(xs), *mask), *inputs, runs=REPEATS, replays=REPLAYS)
    return fastest_replay_ms(lambda x: fn(x, *mask), inputs, runs=REPEATS, replays=REPLAYS)


by_kernel = collections.defaultdict(lambda: [0, 0.0])
by_shape = collections.defaultdict(lambda: [0, 0.0])
plan = model.inference_plan()
original = [step.fn for step in plan.steps]


def profiled(fn):
    def run(inputs, *mask):
        with pe.scope():  # the kernels the step runs, for its labels
            kernels = pe.profile(lambda t: fn(t, *mask), inputs).kernels
        ms = step_ms(fn, inputs, mask) if kernels else 0.0  # a step of no kernel may hand its input back
        for groups, label in zip((by_kernel, by_shape), labels(kernels, inputs)):
            groups[label][0] += 1
            groups[label][1] += ms
        return fn(inputs, *mask)

    return run


for step in plan.steps:
    step.fn = profiled(step.fn)
try:
    model.predict(x).dispose()
finally:
    for step, fn in zip(plan.steps, original):
        step.fn = fn
model.dispose(); x.dispose()


def table(groups):
    return sorted(([label, n, ms] for label, (n, ms) in groups.items()), key=lambda g: -g[2])


{"forward_ms": forward_ms, "by_kernel": table(by_kernel), "by_shape": table(by_shape)}
"""
)


def print_table(rows, total, width):
    print(f"  {'kernels of the step':{width}s} {'steps':>5s} {'ms':>8s} {'share':>6s}")
    for label, count, ms in rows:
        print(f"  {label[:width]:{width}s} {count:5d} {ms:8.1f} {ms / total:6.0%}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--layers", action="store_true", help="also group the steps by shape")
    parser.add_argument("--repeats", type=int, default=5, help="runs of a step per replay (default 5)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1 (got {args.repeats})")
    with playground_server(args.url) as url:
        info, result = run_in_playground(url, MEASURE.replace("__REPEATS__", str(args.repeats)))
    adapter = info["adapter"] or {}
    steps_ms = sum(ms for _, _, ms in result["by_kernel"])
    print(
        f"EfficientNet-Lite0 forward on {info['backend']} ({adapter.get('vendor', '')} {adapter.get('architecture', '')})"
    )
    print(f"  captured forward, median of 7:  {result['forward_ms']:7.0f} ms (reference)")
    print(f"  the steps, each replayed alone: {steps_ms:7.0f} ms ({steps_ms / result['forward_ms']:.2f}x)")
    print_table(result["by_kernel"], steps_ms, 36)
    if args.layers:
        print()
        print_table(result["by_shape"], steps_ms, 52)


if __name__ == "__main__":
    main()
