"""Where a graph model's recording (its first execute on wasm: the warm-up) spends its time, in the served Pyodide in
Node on one thread: the recorded run against the same run op by op (warm), the plan and the program's build, and
cProfile's functions of one more recording (a fresh model each time, so each first execute records). The first run op by op of a fresh model is the floor: its
plan, its weights' panels packed and the ops.

    .venv/bin/python bench/experiments/record_profile.py [--model movenet-lightning] [--rounds 3] [--top 25]

Timings are for reading, never asserted in tests.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.settings import Settings  # noqa: E402 - the repository root is on the path now
from tests.graph_model_cases import model_inputs  # noqa: E402
from tests.pyodide import start_node_pyodide  # noqa: E402
from tests.test_wasm_relaxed import relaxed_node_flags  # noqa: E402

PROFILE = """
import cProfile, io, pstats, time
import numpy as np
import pyodide_js
import py_engine as pe
from py_engine.engine import ENGINE
from py_engine.backends.wasm import capture as wasm_capture

assert await pe.set_backend("wasm", threads=1)
pyodide_js.mountNodeFS("/models", __MODELS__)
pyodide_js.mountNodeFS("/inputs", __INPUTS__)
x = pe.tensor(np.load("/inputs/x.npy"))
backend = ENGINE.active()
T = {}
build = wasm_capture.KernelRecording.build


def timed_build(self, inputs, outputs):
    t0 = time.perf_counter()
    try:
        return build(self, inputs, outputs)
    finally:
        T["build"] = (time.perf_counter() - t0) * 1e3


wasm_capture.KernelRecording.build = timed_build


def execute(model):
    ys = model.execute(x)
    ys = ys if isinstance(ys, list) else [ys]
    [y.numpy() for y in ys]
    pe.dispose(ys)


def timed(model):
    t0 = time.perf_counter()
    execute(model)
    return (time.perf_counter() - t0) * 1e3


rows = []
for _ in range(__ROUNDS__):
    model = await pe.load_graph_model("file:///models/__MODEL__/model.json")
    warm_up = timed(model)  # the plan, the recording, the build
    first_replay = timed(model)
    replay = min(timed(model) for _ in range(3))
    model.dispose()
    model = await pe.load_graph_model("file:///models/__MODEL__/model.json")
    backend.captures = False
    try:
        first = timed(model)  # the plan, the weights' panels packed, the ops
        op_by_op = min(timed(model) for _ in range(3))
    finally:
        del backend.captures
    rows.append([warm_up, T["build"], first_replay, replay, first, op_by_op])
    model.dispose()
model = await pe.load_graph_model("file:///models/__MODEL__/model.json")
profile = cProfile.Profile()
profile.enable()
execute(model)
profile.disable()
model.dispose()
out = io.StringIO()
stats = pstats.Stats(profile, stream=out)
stats.sort_stats("tottime").print_stats(__TOP__)
stats.sort_stats("cumulative").print_stats(__TOP__)
[rows, out.getvalue()]
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="movenet-lightning")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    models = Settings().models_dir.resolve()
    with tempfile.TemporaryDirectory() as inputs:
        np.save(Path(inputs) / "x.npy", model_inputs(models / args.model / "model.json")[0][1])
        node = start_node_pyodide(relaxed_node_flags())
        try:
            rows, profile = node.run(
                PROFILE.replace("__MODELS__", repr(str(models)))
                .replace("__INPUTS__", repr(inputs))
                .replace("__MODEL__", args.model)
                .replace("__ROUNDS__", str(args.rounds))
                .replace("__TOP__", str(args.top))
            )
        finally:
            node.close()
    for warm_up, build, first_replay, replay, first, op_by_op in rows:
        print(
            f"{args.model}: warm-up {warm_up:.1f} ms (build {build:.1f}), first replay {first_replay:.1f}, warm "
            f"{replay:.1f}; op by op: first {first:.1f} ms, warm {op_by_op:.1f} ms"
        )
    print(profile)


if __name__ == "__main__":
    main()
