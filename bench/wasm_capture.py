"""pe.capture on the wasm backend, in the served Pyodide in Node: warm runs captured (recorded once, then replayed
without the engine's Python per op) against the same runs op by op.

    .venv/bin/python bench/wasm_capture.py [--rounds 5] [--models DIR] [--threads 1 2]

Prints, per model, the best warm time of each way (ms) and captured / op by op: movenet-lightning's and centernet's
execute (graph models: `python -m app fetch-models` first), EfficientNet-Lite0's predict (`python -m app convert
efficientnet-lite0` first), and bench/train_step.py's small CNN's fit step (batch 64). The two ways in turns within each round, so a busy machine slows both alike. Also the program's steps (native calls or kernel
functions) and the bytes it holds. With --threads, each way on each number of threads in turn (Node's worker_threads
run the page's pool), and each captured time against one thread's.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import SMALL_CNN  # noqa: E402

from app.settings import Settings  # noqa: E402 - the repository root is on the path now
from tests.graph_model_cases import model_inputs  # noqa: E402
from tests.pyodide import start_node_pyodide  # noqa: E402

GRAPH_MODELS = ("movenet-lightning", "centernet")

SETUP = (
    SMALL_CNN
    + """
import time, pyodide_js
from py_engine.engine import ENGINE
pyodide_js.mountNodeFS("/models", __MODELS__)
pyodide_js.mountNodeFS("/inputs", __INPUTS__)
backend = ENGINE.active()

def op_by_op(run):
    def uncaptured():
        backend.captures = False  # pe.capture then runs the function as it is, as on numpy
        try:
            run()
        finally:
            del backend.captures
    return uncaptured

def best_ms(run, reps=3):
    run()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3

cases = {}
for name in __GRAPH_MODELS__:
    model = await pe.load_graph_model(f"file:///models/{name}/model.json")
    x = pe.tensor(np.load(f"/inputs/{name}.npy"))
    def execute(model=model, x=x):
        ys = model.execute(x)
        ys = ys if isinstance(ys, list) else [ys]
        [y.numpy() for y in ys]
        pe.dispose(ys)
    cases[name] = (op_by_op(execute), execute)

if __EFFICIENTNET__:
    classifier = await pe.load_layers_model("file:///models/efficientnet-lite0/model.json")
    classifier.fold_batch_norms(release_unfolded=True)
    image = pe.tensor(np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32))
    captured_predict = pe.capture(lambda t: classifier.predict(t))
    def predict(forward):
        y = forward(image)
        y.numpy()
        y.dispose()
    cases["EfficientNet-Lite0 predict"] = (lambda: predict(classifier.predict), lambda: predict(captured_predict))

cnn_x, cnn_y, cnn = small_cnn(256)
def fit_step(capture):  # four steps an epoch; the model keeps its step's program between fits: only a round's first records
    return lambda: cnn.fit(cnn_x, cnn_y, batch_size=64, epochs=1, verbose=0, shuffle=False, capture=capture)
cases["small CNN fit step (x4)"] = (fit_step(False), fit_step(True))
"""
)

ROUND = """
def program_stats():
    stats = pe.stats()
    return [stats[f"capture_{part}"] for part in ("native_steps", "kernel_steps", "split_steps", "bytes")]

result = {}
for threads in __THREADS__:
    assert await pe.set_backend("wasm", threads=threads)
    ENGINE.active().release_pool(idle=True)  # the programs of the other pool go (they would record again anyway)
    for name, (plain, captured) in cases.items():
        before = program_stats()
        times = [best_ms(plain), best_ms(captured)]
        # the programs it recorded (a new pool records again)
        result[f"{name}|{threads}"] = times + [[a - b for a, b in zip(program_stats(), before)]]
await pe.set_backend("wasm", threads=1)
result
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", type=Path, default=Settings().models_dir, help="the models folder")
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="the wasm backend's threads: each in turn")
    args = parser.parse_args()
    models = args.models.resolve()
    missing = [name for name in GRAPH_MODELS if not (models / name / "model.json").is_file()]
    if missing:
        raise SystemExit(f"{', '.join(missing)} not in {models}: .venv/bin/python -m app fetch-models")
    efficientnet = (models / "efficientnet-lite0" / "model.json").is_file()
    if not efficientnet:
        print("EfficientNet-Lite0 is not converted (python -m app convert efficientnet-lite0): left out")
    with tempfile.TemporaryDirectory() as inputs:  # each graph model's input (tests/graph_model_cases.py)
        for name in GRAPH_MODELS:
            np.save(Path(inputs) / f"{name}.npy", model_inputs(models / name / "model.json")[0][1])
        node = start_node_pyodide()
        node.run(
            SETUP.replace("__MODELS__", repr(str(models)))
            .replace("__INPUTS__", repr(inputs))
            .replace("__GRAPH_MODELS__", repr(GRAPH_MODELS))
            .replace("__EFFICIENTNET__", repr(efficientnet))
        )
        rounds = [node.run(ROUND.replace("__THREADS__", repr(args.threads))) for _ in range(args.rounds)]
        node.close()
    one = {}  # case -> captured on the first --threads
    for key in rounds[0]:
        name, threads = key.split("|")
        plain = min(r[key][0] for r in rounds)
        captured = min(r[key][1] for r in rounds)
        one.setdefault(name, captured)
        line = (
            f"{name:>28} {threads} thr: op by op {plain:7.1f} ms, captured {captured:7.1f} ms, {captured / plain:.2f}x"
        )
        if len(args.threads) > 1:
            line += f", {captured / one[name]:.2f}x of {args.threads[0]} thr captured"
        native, kernel, split, nbytes = rounds[0][key][2]
        if native or kernel:
            line += f"  (program: {native} native steps, {split} of them split, {kernel} kernel steps,"
            line += f" {nbytes / 2**20:.1f} MiB)"
        print(line)


if __name__ == "__main__":
    main()
