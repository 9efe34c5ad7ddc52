"""Where a captured forward pass spends its time on wasm, call by call, on one thread and on two, in Node.

    .venv/bin/python bench/experiments/replay_profile.py [--models efficientnet-lite0 centernet] [--replays 5]

Each model (EfficientNet-Lite0's predict; movenet-lightning's and centernet's execute: `python -m app fetch-models`
and `convert efficientnet-lite0` first) is recorded with pe.capture on wasm, on 1 thread and then on 2 (Node's
worker_threads run the page's pool), and replayed --replays times with every call of the program timed: the
module's exports on the calling thread (`native:gemm`...), the pool's split calls (`split:gemm`...: its threads'
kernels, the wake-up and the join), the copies into and out of the pool's shared memory (with their bytes), and
the kernel steps (`kernel:...`: numpy's work from Python). Printed per kind: calls and ms per replay, next to the
best untimed replay and the bytes the program holds. What stays on the calling thread shows as `native:` and
`kernel:` lines on 2 threads. Timings are for reading, never asserted in tests; on a busy machine a split call
waits for a worker the scheduler does not run, so compare lines from the same run.
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

EFFICIENTNET = "efficientnet-lite0"

SETUP = """
import collections, time, pyodide_js
from py_engine.backends.wasm.capture import run_kernel_step
from py_engine.backends.wasm import native, threads
from py_engine.engine import ENGINE
pyodide_js.mountNodeFS("/models", __MODELS__)
pyodide_js.mountNodeFS("/inputs", __INPUTS__)
cases = {}
for name in __NAMES__:
    if name == "efficientnet-lite0":
        model = await pe.load_layers_model("file:///models/efficientnet-lite0/model.json")
        model.fold_batch_norms(release_unfolded=True)
        x = pe.tensor(np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32))
        cases[name] = (pe.capture(lambda t, model=model: model.predict(t)), x)
    else:
        model = await pe.load_graph_model(f"file:///models/{name}/model.json")
        cases[name] = (model.execute, pe.tensor(np.load(f"/inputs/{name}.npy")))


def label(call, pool, names):
    if pool is not None:  # bound methods compare equal, JS functions are not hashable
        for fn, kind in ((pool.split, "split"), (pool.copy_in, "copy in"), (pool.copy_out, "copy out")):
            if call == fn:
                return kind
    return "native:" + names.get(id(call), getattr(call, "__name__", "?"))


def timed_steps(program, pool, names, spent):
    # the program's _steps, every call timed: [calls, seconds, bytes] per kind
    def steps(values, one_thread):  # capture.py's _steps (the pool never lost here), each call timed
        for step in program.steps:
            if step[0]:
                for call, args in step[1]:
                    start = time.perf_counter()
                    call(*args)
                    kind = label(call, pool, names)
                    if kind == "split":
                        kind += ":" + next(n for n, i in pool.index.items() if i == args[0][threads.FN - threads.CALL])
                    entry = spent[kind]
                    entry[0] += 1
                    entry[1] += time.perf_counter() - start
                    entry[2] += args[2] if kind.startswith("copy") else 0
                continue
            start = time.perf_counter()
            run_kernel_step(step, values, program.backend)
            entry = spent["kernel:" + step[1].__name__]
            entry[0] += 1
            entry[1] += time.perf_counter() - start

    return steps
"""

ROUND = """
result = {}
for n in (1, 2):
    assert await pe.set_backend("wasm", threads=n)
    backend = ENGINE.active()
    backend.release_pool(idle=True)
    names = {id(fn): name for name, fn in vars(native.exports).items()}
    for name, (run, x) in cases.items():
        def once():
            ys = run(x)
            ys = ys if isinstance(ys, list) else [ys]
            [y.numpy() for y in ys]
            pe.dispose(ys)
        for _ in range(3):  # recorded, replayed
            once()
        best = []
        for _ in range(__REPLAYS__):
            start = time.perf_counter()
            once()
            best.append(time.perf_counter() - start)
        program = max(backend.programs, key=lambda p: len(p.steps))
        spent = collections.defaultdict(lambda: [0, 0.0, 0])
        program._steps = timed_steps(program, threads.pool, names, spent)
        for _ in range(__REPLAYS__):
            once()
        del program._steps
        result[f"{name}|{n}"] = [min(best) * 1e3, program.nbytes, program.split_steps, len(program.steps),
                                 {kind: [c / __REPLAYS__, s * 1e3 / __REPLAYS__, b / __REPLAYS__]
                                  for kind, (c, s, b) in spent.items()}]
await pe.set_backend("wasm", threads=1)
result
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=[EFFICIENTNET, "movenet-lightning", "centernet"])
    parser.add_argument("--replays", type=int, default=5)
    args = parser.parse_args()
    models = Settings().models_dir.resolve()
    with tempfile.TemporaryDirectory() as inputs:
        for name in args.models:
            if name != EFFICIENTNET:
                np.save(Path(inputs) / f"{name}.npy", model_inputs(models / name / "model.json")[0][1])
        node = start_node_pyodide()
        node.run(
            SETUP.replace("__MODELS__", repr(str(models)))
            .replace("__INPUTS__", repr(inputs))
            .replace("__NAMES__", repr(args.models))
        )
        result = node.run(ROUND.replace("__REPLAYS__", str(args.replays)))
        node.close()
    for key, (best, nbytes, split, steps, spent) in result.items():
        name, threads = key.split("|")
        print(f"{name}, {threads} thread(s): best replay {best:.2f} ms; {steps} steps, {split} split; "
              f"program {nbytes / 2**20:.1f} MiB")  # fmt: skip
        for kind, (calls, ms, nbytes) in sorted(spent.items(), key=lambda item: -item[1][1]):
            moved = f"  {nbytes / 1e6:.2f} MB" if nbytes else ""
            print(f"    {kind:32s} {calls:6.1f} calls {ms:8.3f} ms{moved}")


if __name__ == "__main__":
    main()
