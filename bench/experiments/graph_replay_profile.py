"""Where a graph model's captured warm execute spends its time on wasm, per step of the replayed program, in Node.

    .venv/bin/python bench/experiments/graph_replay_profile.py [--model centernet] [--runs 20] [--plain]

The model (`python -m app fetch-models` first) runs in the served Pyodide in Node on one thread, with relaxed SIMD
as Chromium runs it (--plain: the plain SIMD module). Each replayed step is timed: native steps (N: the module's
calls) and kernel steps (K: a kernel function from Python), by kernel and input shapes, the least of --runs runs of
each step; with the whole execute's least time, whose excess over the steps' sum is the replay's own loop, the
copies and the outputs (and its least CPU time, which a busy machine moves less). Timings are for reading, never
asserted in tests.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench/harness.py, shared with the benchmarks

from harness import TIMED_REPLAY_STEPS  # noqa: E402

from app.settings import Settings  # noqa: E402 - the repository root is on the path now
from tests.graph_model_cases import model_inputs  # noqa: E402
from tests.pyodide import start_node_pyodide  # noqa: E402
from tests.test_wasm_relaxed import relaxed_node_flags  # noqa: E402

PROFILE = (
    TIMED_REPLAY_STEPS
    + """
import pyodide_js
from js import process  # Node's: the process's CPU time, which a busy machine moves less than wall time

assert await pe.set_backend("wasm", threads=1)
pyodide_js.mountNodeFS("/models", __MODELS__)
pyodide_js.mountNodeFS("/inputs", __INPUTS__)
model = await pe.load_graph_model(f"file:///models/__MODEL__/model.json")
x = pe.tensor(np.load("/inputs/x.npy"))

def execute():
    ys = model.execute(x)
    ys = ys if isinstance(ys, list) else [ys]
    [y.numpy() for y in ys]
    pe.dispose(ys)

for _ in range(3):
    execute()
whole, cpu = [], []
for _ in range(__RUNS__):
    start, used = time.perf_counter(), process.cpuUsage()
    execute()
    whole.append(time.perf_counter() - start)
    used = process.cpuUsage(used)
    cpu.append((used.user + used.system) / 1e6)
steps_apart()
for _ in range(__RUNS__):
    execute()
[min(whole) * 1e3, min(cpu) * 1e3, [[t * 1e3, key[1], key[2]] for key, t in best.items()], pe.backend_info()["simd"]]
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="centernet")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--plain", action="store_true", help="the plain SIMD module (no relaxed SIMD)")
    parser.add_argument("--steps", action="store_true", help="also each step, in order")
    args = parser.parse_args()
    models = Settings().models_dir.resolve()
    with tempfile.TemporaryDirectory() as inputs:
        np.save(Path(inputs) / "x.npy", model_inputs(models / args.model / "model.json")[0][1])
        node = start_node_pyodide(() if args.plain else relaxed_node_flags())
        try:
            whole, cpu, rows, simd = node.run(
                PROFILE.replace("__MODELS__", repr(str(models)))
                .replace("__INPUTS__", repr(inputs))
                .replace("__MODEL__", args.model)
                .replace("__RUNS__", str(args.runs))
            )
        finally:
            node.close()
    total = sum(ms for ms, _, _ in rows)
    print(
        f"{args.model} ({simd}): execute {whole:.2f} ms, CPU {cpu:.2f} ms (least of {args.runs}); steps {total:.2f} ms"
    )
    if args.steps:
        for ms, kind, name in rows:
            print(f"  {ms:7.3f} ms  {kind}  {name}")
    groups = {}
    for ms, kind, name in rows:
        group = groups.setdefault((kind, name), [0.0, 0])
        group[0] += ms
        group[1] += 1
    for (kind, name), (ms, n) in sorted(groups.items(), key=lambda g: -g[1][0]):
        print(f"  {ms:7.3f} ms  {n:3d}x  {kind}  {name}")


if __name__ == "__main__":
    main()
