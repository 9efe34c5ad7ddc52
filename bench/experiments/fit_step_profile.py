"""Where the small CNN's captured fit step spends its time on wasm, per step of the replayed program, in Node.

    .venv/bin/python bench/experiments/fit_step_profile.py [--threads 1] [--fits 10]

bench/train_step.py's CNN (Conv2D(8,3,relu) -> MaxPooling2D(2) -> Conv2D(16,3,relu) -> Flatten -> Dense(10,
softmax), batch 64, SGD(0.01)) fits 8 batches an epoch, capture on (its default), in the served Pyodide in Node
(tests/pyodide; Node's worker_threads run the page's pool with --threads 2). Each replayed step is timed: native
steps (N; NS where split over the pool) and kernel steps (K, numpy's or the module's work from Python), by kernel
and input shapes, in ms per training step; with the time in recording (the first batch of each fit: fit gives its
programs back at the end) and in the program's replay. Timings are for reading, never asserted in tests.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench/harness.py, shared with the benchmarks

from harness import SMALL_CNN  # noqa: E402

from tests.pyodide import start_node_pyodide  # noqa: E402 - the repository root is on the path now

PROFILE = (
    SMALL_CNN
    + """
import collections, time
from py_engine.backends.wasm import capture as wasm_capture
from py_engine.engine import capture as engine_capture

assert await pe.set_backend("wasm", threads=__THREADS__)
spent, calls = collections.defaultdict(float), collections.Counter()

def timed(label, fn):
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start
            calls[label] += 1
    return run

built = wasm_capture.KernelProgram.__init__

def build(program, recording, outputs):  # each step's name: its kernel and its inputs' shapes
    program.names = [f"{getattr(s.fn, '__qualname__', s.fn)} {[recording.arrays[k].shape for k in s.keys]}"
                     for s in recording.steps]
    built(program, recording, outputs)

def steps(program, values, one_thread):  # KernelProgram._steps, each step timed
    for name, step in zip(program.names, program.steps):
        start = time.perf_counter()
        if step[0]:
            for call, args in step[1]:
                call(*args)
            kind = "NS" if step[2] is not None else "N"
        else:
            _, fn, keys, dims, attrs, outs, copies = step
            args = [values[i] if d is None else values[i].reshape(d) for i, d in zip(keys, dims)]
            out = fn(*args, **attrs) if attrs else fn(*args)
            for i, o in zip(outs, out if type(out) is tuple else (out,)):
                values[i] = wasm_capture.own(o.copy() if any(o is a for a in args) else o, fn, program.backend)[0]
            for i, target in copies:
                np.copyto(target, values[i])
            kind = "K"
        spent[(kind, name)] += time.perf_counter() - start
        calls[(kind, name)] += 1

wasm_capture.KernelProgram.__init__ = build
wasm_capture.KernelProgram._steps = steps
wasm_capture.KernelProgram.replay = timed("replay", wasm_capture.KernelProgram.replay)
engine_capture.CapturedFunction._record = timed("record", engine_capture.CapturedFunction._record)

x, y, model = small_cnn(512)

def fit():
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=False)

fit()
spent.clear()
calls.clear()
times, outside = [], []
for _ in range(__FITS__):
    replayed = spent["replay"]
    start = time.perf_counter()
    fit()
    times.append(time.perf_counter() - start)
    outside.append(times[-1] - (spent["replay"] - replayed))  # fit's own Python: batches, the table, the readback
batches = __FITS__ * 8
rows = sorted(((t / batches * 1e3, key, calls[key] / batches) for key, t in spent.items()), reverse=True)
[min(times) / 8 * 1e3, sorted(outside)[len(outside) // 2] / 8 * 1e3,
 [[ms, key if isinstance(key, str) else " ".join(key), n] for ms, key, n in rows]]
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="the wasm backend's threads")
    parser.add_argument("--fits", type=int, default=10, help="fits of 8 batches timed")
    args = parser.parse_args()
    node = start_node_pyodide()
    try:
        fit_ms, outside_ms, rows = node.run(PROFILE.replace("__THREADS__", str(args.threads)).replace("__FITS__", str(args.fits)))
    finally:
        node.close()
    print(f"fit on {args.threads} thread(s): {fit_ms:.2f} ms a step (the best fit of {args.fits}), of which "
          f"{outside_ms:.2f} outside the replays (the median fit's); per step:")
    for ms, name, n in rows:
        print(f"  {ms:6.3f} ms  {n:5.3f} calls  {name}")


if __name__ == "__main__":
    main()
