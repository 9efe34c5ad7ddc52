"""Time per training step, ours against TensorFlow.js 4.22 in the same headless Chromium, same run.

    .venv/bin/python bench/train_step.py        # everything: 15 steps, 5 rounds of 8 batches
    .venv/bin/python bench/train_step.py --parts page,tfjs --steps 30    # leave CPython out
    .venv/bin/python bench/train_step.py --parts page --page-backends wasm   # ours on wasm, 1 and 2 threads
    .venv/bin/python bench/train_step.py --url http://127.0.0.1:8000/     # a running playground server

Two models, batch 64, SGD(0.01) (--optimizer adam: Adam(0.001)), categorical crossentropy, synthetic data (normal x,
random one-hot y):
an MLP 784-128-10 (relu, softmax) and a small CNN on 28x28x1 (Conv2D(8,3,relu) -> MaxPooling2D(2) ->
Conv2D(16,3,relu) -> Flatten -> Dense(10, softmax)). For each, warm steps only, four ways, interleaved in
--epochs rounds (so a change of load on the machine touches every way alike):
- step: a hand-written step on batch b sliced from the data (ours: pe.variable_grads +
  optimizer.apply_gradients; TF.js: optimizer.minimize), the median of --steps steps (spread over the rounds),
  each synced by reading its loss back;
- loop: the same step over the --batches batches, one readback at the end, per step (median of the rounds);
- fit: model.fit over the same batches in order (shuffle off), one epoch a round, per step (median of the
  rounds; one readback per epoch in both engines): fit/loop is what fit's bookkeeping adds;
- fit+shuf: the same with fit's default shuffling (a gather of each batch's rows).
Ours on numpy and webgpu in CPython (wgpu-py), and on webgpu, wasm (1 thread, and 2: set_backend("wasm",
threads=2)) and numpy in the page (Pyodide in the worker; wasm runs only there); TF.js (npm, pinned
bench-only in bench/tfjs/, `npm ci --prefix bench/tfjs --ignore-scripts` first) on webgpu, wasm and cpu in a
separate page served by a local static server. CPython's numpy runs single-threaded (OPENBLAS_NUM_THREADS=1
unless set), as numpy in Pyodide and TF.js's wasm without cross-origin isolation do. Prints milliseconds,
kernels and uploads per step, and the ratios the targets are stated in. Timings are for reading, never
asserted in tests.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import sys

from harness import REPO, launch, playground_server, run_python, static_server
from playwright.sync_api import sync_playwright

MODELS = {"mlp": "MLP 784-128-10", "cnn": "CNN 28x28x1"}
TFJS = REPO / "bench" / "tfjs"
OPTIMIZERS = {"sgd": "SGD(0.01)", "adam": "Adam(0.001)"}

# Runs in CPython and in the page alike (`pe` and `np` predefined); `await measure(...)` gives one case's numbers.
MEASURE = """
import statistics, time

BATCH = 64


def build(kind):
    L = pe.layers
    if kind == "mlp":
        layers = [L.Dense(128, activation="relu", input_shape=(784,))]
    else:
        layers = [
            L.Conv2D(8, 3, activation="relu", input_shape=(28, 28, 1)),
            L.MaxPooling2D(2),
            L.Conv2D(16, 3, activation="relu"),
            L.Flatten(),
        ]
    return pe.Sequential([*layers, L.Dense(10, activation="softmax")])


class EpochTimer(pe.callbacks.Callback):
    # no on_batch_end: fit keeps its one readback per epoch, which on_epoch_end comes after
    def __init__(self):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self.start)


def per_step(fn, steps):
    # (kernels, uploads) per step of fn(), which runs `steps` steps; untimed
    before = pe.stats()["uploads"]
    kernels = len(pe.profile(fn).kernels)
    return kernels / steps, (pe.stats()["uploads"] - before) / steps


async def measure(kind, batches, warmup, steps, epochs, rule):
    rng = np.random.default_rng(0)
    n = BATCH * batches
    x = pe.tensor(rng.normal(size=(n, 784) if kind == "mlp" else (n, 28, 28, 1)).astype(np.float32))
    y = pe.tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)])
    model = build(kind)
    optimizer = pe.optimizers.SGD(learning_rate=0.01) if rule == "sgd" else pe.optimizers.Adam(learning_rate=0.001)
    model.compile(optimizer=optimizer, loss="categorical_crossentropy")
    loss_fn = model.training_config.losses[0]

    def step(b):  # batch b of x and y, sliced as fit does without shuffling
        with pe.scope() as scope:
            xb, yb = x[b * BATCH : (b + 1) * BATCH], y[b * BATCH : (b + 1) * BATCH]
            loss, grads = pe.variable_grads(lambda: loss_fn(yb, model(xb, training=True)), model.trainable_weights)
            optimizer.apply_gradients(grads)
            return scope.export(loss)

    async def synced_step(b):
        start = time.perf_counter()
        loss = step(b)
        await loss.data()
        loss.dispose()
        return time.perf_counter() - start

    def loop():
        for b in range(batches - 1):
            step(b).dispose()
        return step(batches - 1)

    async def synced_loop():
        start = time.perf_counter()
        loss = loop()
        await loss.data()
        loss.dispose()
        return (time.perf_counter() - start) / batches

    def fit(callbacks=(), shuffle=False):  # one epoch
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=list(callbacks), shuffle=shuffle)

    for i in range(warmup):
        await synced_step(i % batches)
    fit()
    timer, shuffled_timer, step_times, loop_times = EpochTimer(), EpochTimer(), [], []
    for _ in range(epochs):  # interleaved, so a change of load on the machine touches every way alike
        step_times += [await synced_step(i % batches) for i in range(max(1, steps // epochs))]
        loop_times.append(await synced_loop())
        fit([timer])
        fit([shuffled_timer], shuffle=True)
    loop_kernels, loop_uploads = per_step(lambda: loop().dispose(), batches)
    fit_kernels, fit_uploads = per_step(fit, batches)
    model.dispose()
    optimizer.dispose()
    pe.dispose([x, y])
    ms = lambda times: statistics.median(times) * 1e3
    return {
        "step_ms": ms(step_times),
        "loop_ms": ms(loop_times),
        "fit_ms": ms(timer.times) / batches,
        "shuffled_fit_ms": ms(shuffled_timer.times) / batches,
        "loop_kernels": loop_kernels,
        "fit_kernels": fit_kernels,
        "loop_uploads": loop_uploads,
        "fit_uploads": fit_uploads,
        "leftover_tensors": pe.memory().num_tensors,
    }
"""


def settings_args(args, kind):
    return f"{kind!r}, {args.batches}, {args.warmup}, {args.steps}, {args.epochs}, {args.optimizer!r}"


def ours_in_cpython(args):
    import numpy as np

    import py_engine as pe

    scope = {"pe": pe, "np": np}
    exec(MEASURE, scope)
    results = {}
    for backend in ("numpy", "webgpu"):
        if not asyncio.run(pe.set_backend(backend)):
            print(f"CPython: no {backend}: {pe.backend_info()['fallback_reason']}", file=sys.stderr)
            continue
        device = pe.backend_info().get("device") or ""
        label = f"ours, CPython, {backend}" + (f" ({device.split(' (')[0]})" if backend == "webgpu" else "")
        results[label] = {kind: asyncio.run(eval(f"measure({settings_args(args, kind)})", scope)) for kind in MODELS}
        progress(label, results[label])
    asyncio.run(pe.set_backend("numpy"))
    return results


def ours_in_page(browser, url, args):
    page = browser.new_page()
    page.goto(f"{url}?backend=webgpu")
    info = page.evaluate("playground.ready")
    adapter = info["adapter"] or {}
    run_python(page, MEASURE + "\nNone")
    results = {}
    for backend, threads in (("webgpu", None), ("wasm", 1), ("wasm", 2), ("numpy", None)):
        if backend not in args.page_backends.split(","):
            continue
        started = page.evaluate("name => playground.setBackend(name)", backend)
        if started["backend"] != backend:
            print(f"page: no {backend}: {started['fallback_reason']}", file=sys.stderr)
            continue
        label = f"ours, page, {backend}" + (
            f" ({adapter.get('architecture') or adapter.get('vendor')})" if backend == "webgpu" else ""
        )
        if threads:
            run_python(page, f'await pe.set_backend("wasm", threads={threads})')
            got = run_python(page, 'pe.backend_info()["threads"]')
            if got != threads:
                print(f"page: no wasm on {threads} threads: {run_python(page, 'pe.backend_info()')}", file=sys.stderr)
                continue
            label += f" {threads} thread{'s' * (threads > 1)}"
        results[label] = {kind: run_python(page, f"await measure({settings_args(args, kind)})") for kind in MODELS}
        progress(label, results[label])
    page.close()
    return results


def tfjs_in_page(browser, args):
    if not (TFJS / "node_modules" / "@tensorflow" / "tfjs").exists():
        sys.exit("TF.js is not installed: npm ci --prefix bench/tfjs --ignore-scripts")
    results = {}
    with static_server(TFJS) as url:
        for backend in ("webgpu", "wasm", "cpu"):
            page = browser.new_page()
            page.goto(url + "train_step.html")
            cases = {}
            for kind in MODELS:
                settings = {
                    "kind": kind,
                    "backend": backend,
                    **{k: getattr(args, k) for k in ("batches", "warmup", "steps", "epochs", "optimizer")},
                }
                cases[kind] = page.evaluate("settings => tfjsTrainStep(settings)", settings)
            extra = cases["mlp"]
            detail = f" (simd {extra['simd']}, threads {extra['threads']})" if backend == "wasm" else ""
            label = f"TF.js {tf_version(page)}, {backend}{detail}"
            results[label] = cases
            progress(label, cases)
            page.close()
    return results


def tf_version(page):
    return page.evaluate("tf.version.tfjs")


def progress(label, cases):
    keys = ("step_ms", "loop_ms", "fit_ms", "shuffled_fit_ms")
    times = ", ".join(
        f"{k} " + ("/".join(f"{c[key]:.1f}" for key in keys) + " ms" if "error" not in c else "failed")
        for k, c in cases.items()
    )
    print(f"{label}: step/loop/fit/fit+shuf {times}", file=sys.stderr, flush=True)


def print_table(results, args):
    print(
        f"\nms per training step, batch 64, {OPTIMIZERS[args.optimizer]}; step: median of "
        f"{max(1, args.steps // args.epochs) * args.epochs} steps, each synced by a readback; loop and fit: median of "
        f"{args.epochs} rounds of {args.batches} steps, one readback each"
    )
    header = "".join(f"{MODELS[k]:>43s}" for k in MODELS)
    print(f"  {'':44s}{header}")
    columns = "".join(f"{'step':>8s}{'loop':>8s}{'fit':>8s}{'fit/loop':>10s}{'fit+shuf':>9s}" for _ in MODELS)
    print(f"  {'':44s}{columns}")
    failures = []
    for label, cases in results.items():
        cells = ""
        for kind in MODELS:
            c = cases[kind]
            if "error" in c:
                failures.append(f"  {label}, {MODELS[kind]}: {c['error']}")
                cells += f"{'(cannot train, below)':>43s}"
            else:
                ratio = c["fit_ms"] / c["loop_ms"]
                cells += (
                    f"{c['step_ms']:8.1f}{c['loop_ms']:8.1f}{c['fit_ms']:8.1f}{ratio:9.2f}x{c['shuffled_fit_ms']:9.1f}"
                )
        print(f"  {label:44s}{cells}")
    print("\n".join(failures))
    ours = {label: cases for label, cases in results.items() if label.startswith("ours")}
    if ours:
        print("\nours, kernels and uploads per step (loop / fit)")
        for label, cases in ours.items():
            cells = "".join(
                f"   {MODELS[k]}: {c['loop_kernels']:.1f} / {c['fit_kernels']:.1f} kernels, "
                f"{c['loop_uploads']:.1f} / {c['fit_uploads']:.1f} uploads"
                for k, c in cases.items()
            )
            print(f"  {label:44s}{cells}")
    leftovers = {
        label: [c["leftover_tensors"] for c in cases.values() if "leftover_tensors" in c]
        for label, cases in results.items()
    }
    print(f"  tensors left after each case (0: nothing leaked): {leftovers}")
    print_ratios(results)


def find(results, who, backend):
    """The cases of `who` ("ours, page" or "TF.js") on `backend`, or None when that part did not run."""
    return next((c for label, c in results.items() if label.startswith(who) and f", {backend}" in label), None)


def print_ratios(results):
    """The targets: fit in the page <= 0.3x TF.js-webgpu on webgpu, <= 1x TF.js-wasm on numpy; fit <= 1.1x loop; on
    wasm, the MLP's fit <= 0.6x TF.js-wasm's and the CNN's <= 0.3x ours on webgpu (TF.js-wasm cannot train it), and
    the CNN's on 2 threads <= 0.7x its fit on 1."""
    page_gpu, page_cpu = find(results, "ours, page", "webgpu"), find(results, "ours, page", "numpy")
    page_wasm, page_wasm_2 = find(results, "ours, page", "wasm 1 thread"), find(results, "ours, page", "wasm 2 threads")
    tf_gpu, tf_wasm, tf_cpu = (find(results, "TF.js", backend) for backend in ("webgpu", "wasm", "cpu"))
    pairs = [
        ("page webgpu fit / TF.js-webgpu step (target <= 0.3)", page_gpu, "fit_ms", tf_gpu, "step_ms"),
        ("page webgpu fit / TF.js-webgpu fit", page_gpu, "fit_ms", tf_gpu, "fit_ms"),
        ("page wasm fit / TF.js-wasm fit (target MLP <= 0.6)", page_wasm, "fit_ms", tf_wasm, "fit_ms"),
        ("page wasm fit / page webgpu fit (target CNN <= 0.3)", page_wasm, "fit_ms", page_gpu, "fit_ms"),
        ("page wasm fit / TF.js-wasm step", page_wasm, "fit_ms", tf_wasm, "step_ms"),
        ("page wasm fit / page numpy fit", page_wasm, "fit_ms", page_cpu, "fit_ms"),
        ("page wasm fit, 2 threads / 1 thread (target CNN <= 0.7)", page_wasm_2, "fit_ms", page_wasm, "fit_ms"),
        ("page wasm step, 2 threads / 1 thread", page_wasm_2, "step_ms", page_wasm, "step_ms"),
        ("page numpy fit / TF.js-wasm step (target <= 1)", page_cpu, "fit_ms", tf_wasm, "step_ms"),
        ("page numpy fit / TF.js-wasm fit", page_cpu, "fit_ms", tf_wasm, "fit_ms"),
        ("page numpy fit / TF.js-cpu step", page_cpu, "fit_ms", tf_cpu, "step_ms"),
        ("page webgpu step / TF.js-webgpu step", page_gpu, "step_ms", tf_gpu, "step_ms"),
        ("page numpy step / TF.js-wasm step", page_cpu, "step_ms", tf_wasm, "step_ms"),
        ("page wasm step / TF.js-wasm step", page_wasm, "step_ms", tf_wasm, "step_ms"),
    ]
    lines = [(name, a, ka, b, kb) for name, a, ka, b, kb in pairs if a and b]
    if not lines:
        return
    print("\nratios of time per step (below 1: ours is faster)")
    print(f"  {'':54s}" + "".join(f"{MODELS[k]:>16s}" for k in MODELS))
    for name, a, ka, b, kb in lines:
        ratios = (f"{a[k][ka] / b[k][kb]:15.2f}x" if ka in a[k] and kb in b[k] else f"{'-':>16s}" for k in MODELS)
        print(f"  {name:54s}" + "".join(ratios))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--parts", default="cpython,page,tfjs", help="which of cpython,page,tfjs to run (default all)")
    parser.add_argument(
        "--page-backends", default="webgpu,wasm,numpy", help="ours in the page on which backends (default all)"
    )
    parser.add_argument(
        "--steps", type=int, default=15, help="synced steps per case, spread over the rounds (default 15)"
    )
    parser.add_argument("--epochs", type=int, default=5, help="rounds: loops and fit epochs timed per case (default 5)")
    parser.add_argument("--batches", type=int, default=8, help="batches of 64 per round and per epoch (default 8)")
    parser.add_argument("--warmup", type=int, default=3, help="steps before timing (default 3)")
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd", help="sgd (default) or adam")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    unknown = parts - {"cpython", "page", "tfjs"}
    if unknown or args.batches < 1 or min(args.steps, args.epochs) < 1:
        parser.error(f"--parts takes cpython, page, tfjs (got {sorted(unknown)}); --steps, --epochs, --batches >= 1")
    results = ours_in_cpython(args) if "cpython" in parts else {}
    if parts & {"page", "tfjs"}:
        with sync_playwright() as p:
            browser = launch(p)
            print(f"Chromium {browser.version}")
            if "page" in parts:
                with playground_server(args.url, needs_model=False) as url:
                    results.update(ours_in_page(browser, url, args))
            if "tfjs" in parts:
                results.update(tfjs_in_page(browser, args))
            browser.close()
    print_table(results, args)


if __name__ == "__main__":
    main()
