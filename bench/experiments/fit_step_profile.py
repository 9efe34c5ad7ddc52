"""Where the small CNN's captured fit step spends its time on wasm, per step of the replayed program, in Node.

    .venv/bin/python bench/experiments/fit_step_profile.py [--threads 1] [--fits 10]

bench/train_step.py's CNN (Conv2D(8,3,relu) -> MaxPooling2D(2) -> Conv2D(16,3,relu) -> Flatten -> Dense(10,
softmax), batch 64, SGD(0.01)) fits 8 batches an epoch, capture on (its default), in the served Pyodide in Node
(tests/pyodide; Node's worker_threads run the page's pool with --threads 2). Each replayed step is timed: native
steps (N; NS where split over the pool) and kernel steps (K, numpy's or the module's work from Python), by place in
the program, kernel and input shapes: its best time over the replays (the machine is shared: a sum moves with the
load, a best time much less). Also: the best fit's time a step, fit's own time outside the replays (slicing the
batches, the epoch's table, the readback), and the bytes a step copies into and out of the pool. The model keeps its
step's program between fits, so no fit after the first records. Timings are for reading, never asserted in tests.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench/harness.py, shared with the benchmarks

from harness import SMALL_CNN, TIMED_REPLAY_STEPS  # noqa: E402

from tests.pyodide import start_node_pyodide  # noqa: E402 - the repository root is on the path now

PROFILE = (
    SMALL_CNN
    + TIMED_REPLAY_STEPS
    + """
import collections

assert await pe.set_backend("wasm", threads=__THREADS__)
spent = collections.defaultdict(float)

def timed(label, fn):
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start
    return run

steps_apart()
wasm_capture.KernelProgram.replay = timed("replay", wasm_capture.KernelProgram.replay)

x, y, model = small_cnn(512)

def fit():
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=False)

fit()
fit()  # the first fit makes the optimizer's slots and records the step
best.clear()
copied = pe.backend_info()["threads_copied_bytes"]
times, outside = [], []
for _ in range(__FITS__):
    replayed = spent["replay"]
    start = time.perf_counter()
    fit()
    times.append(time.perf_counter() - start)
    outside.append(times[-1] - (spent["replay"] - replayed))  # fit's own Python: batches, the table, the readback
copied = (pe.backend_info()["threads_copied_bytes"] - copied) / (__FITS__ * 8)
[min(times) / 8 * 1e3, sorted(outside)[len(outside) // 2] / 8 * 1e3, copied,
 sorted(([t * 1e3, f"{kind:2} #{place} {name}"] for (place, kind, name), t in best.items()), reverse=True)]
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="the wasm backend's threads")
    parser.add_argument("--fits", type=int, default=10, help="fits of 8 batches timed")
    args = parser.parse_args()
    node = start_node_pyodide()
    try:
        code = PROFILE.replace("__THREADS__", str(args.threads)).replace("__FITS__", str(args.fits))
        fit_ms, outside_ms, copied, rows = node.run(code)
    finally:
        node.close()
    print(
        f"fit on {args.threads} thread(s): {fit_ms:.2f} ms a step (the best fit of {args.fits}), of which "
        f"{outside_ms:.2f} outside the replays (the median fit's); {copied / 1e6:.2f} MB copied into and out of the "
        f"pool a step; each step's best time (ms), its kind, place and kernel:"
    )
    for ms, name in rows:
        print(f"  {ms:6.3f}  {name}")
    print(f"  {sum(ms for ms, _ in rows):6.3f}  the steps' best times, summed")


if __name__ == "__main__":
    main()
