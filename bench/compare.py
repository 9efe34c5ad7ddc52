"""EfficientNet-Lite0, ours against TensorFlow.js 4.22 in the same headless Chromium, one run.

    .venv/bin/python bench/compare.py                       # 10 warm runs each (3 on TF.js's cpu backend)
    .venv/bin/python bench/compare.py --runs 20 --out /tmp/compare.json --url http://127.0.0.1:8000/
    .venv/bin/python bench/compare.py --ours-only --static DIR --out /tmp/a.json   # another page folder, no TF.js
    .venv/bin/python bench/compare.py --model movenet-lightning   # a graph model of docs/models.md (below)
    .venv/bin/python bench/compare.py --model centernet --rounds 5   # each part 5 times in turns: medians

Batch 1, a [1, 224, 224, 3] input of zeros, the forward pass to the top-5 (softmax and top-k included):
- ours, in the playground page (?backend=webgpu, then wasm on 1 thread and on 2 (set_backend("wasm", threads=n)),
  then numpy; Pyodide in the worker), through the page's
  classifier: load (model.json, shards, checks), warm-up (batch-norm folding and pipeline compiles: the page's), first
  run (it records the captured forward pass), then the median of --runs warm runs, captured (pe.capture: one bridge
  call per run, as the page classifies) and uncaptured (an op at a time);
- TF.js (npm, pinned bench-only in bench/tfjs/, `npm ci --prefix bench/tfjs --ignore-scripts` first) on webgpu,
  wasm (its SIMD build, one thread), wasm threaded (its threaded SIMD build, one thread per logical core: TF.js would
  take half of navigator.hardwareConcurrency, so that page reports twice the cores it has) and cpu, in a blank page of
  the playground server's origin, cross-origin isolated as the playground page is (its COOP/COEP headers; only then
  has TF.js's wasm backend threads): tf.loadLayersModel of OUR converted model from the server's /models, so both
  run the same weights; warm-up is a first predict (its shaders compile there), then a first run and the median of
  --runs warm runs;
- the roofline: a 1024x1024x1024 float32 matmul in the same page on the same adapter, through the page's bridge
  (pe.matmul's WGSL GEMM, both variants: register-blocked and tiled; the best counts), in GFLOP/s and as the time
  EfficientNet-Lite0's multiply-adds (counted from the forward pass's kernels) would take at that rate. The variant
  the adapter runs is timed in turns with the warm runs (one matmul after each, the median counts), so a change of
  load on the machine touches the forward pass and its roofline alike; the other once, the best of 2 rounds.
Every part gets a fresh browser context (an empty HTTP cache), but for one more run of ours on webgpu: a
repeat visit, in a profile kept from a first visit that loaded the classifier (its HTTP cache, Dawn's shader cache and
Cache Storage). `--ours-only` measures ours alone (a quick before/after of a change to the page: run it in turns
with `--static` pointing at the other commit's static/). Writes JSON (--out, default bench/results/compare.json) and a bar chart next to it (.png: an SVG
drawn in the same Chromium and screenshot), and prints the ratios. Timings are for reading, never asserted in tests.

With --model NAME, a graph model of docs/models.md (movenet-lightning, centernet...): ours loads it with
pe.load_graph_model on webgpu, wasm (1 and 2 threads) and numpy, TF.js with tf.loadGraphModel on its four backends,
the same files from /models, and each executes it on the same pixel-like input ((i * 7919) % 256 in the input's
dtype): load, warm-up (the first execute), first run, cold and the median of --runs warm runs, each from execute to
every output read back; and how far each part's outputs are from ours on numpy (no roofline, no repeat visit). With
--rounds N, every part runs N times in turns, each in a fresh context, and its times are the medians of its rounds: a
cold start is one sample per round, and TF.js's moves by a fifth from one to the next. Ours
starts once the page has settled (wait_until_stored: the classifier's files, which the page downloads after ready,
are in and the next boot's snapshot is made), so that the model's load shares the network and the cores with nothing
of our page's, as TF.js's blank page. Writes bench/results/compare-NAME.json and .png.
"""

import argparse
import contextlib
import datetime
import html
import json
import os
import platform
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

from harness import (
    MULTIPLY_ADDS,
    REPO,
    launch,
    launch_options,
    open_playground,
    open_settled_playground,
    playground_server,
    run_in_page,
    run_python,
    wait_until_stored,
)
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

TFJS = REPO / "bench" / "tfjs" / "node_modules" / "@tensorflow"
CLASSIFIER, CLASSIFIER_TITLE = "efficientnet-lite0", "EfficientNet-Lite0"
MODEL_JSON = f"models/{CLASSIFIER}/model.json"
REPEAT = "ours webgpu, repeat visit"
# TF.js runs in a blank page on the playground server's origin, answered by this script, with TF.js's files
# routed from bench/tfjs: a page of another origin may not fetch from a loopback server (Chromium's local network
# access checks), and the model is fetched as the interop test does (e2e/test_tfjs_interop.py).
TFJS_PAGE = "tfjs-compare.html"
TFJS_FILES = "tfjs-compare/"  # + a path under bench/tfjs/node_modules/@tensorflow/
TFJS_SCRIPTS = ["tfjs/dist/tf.min.js", "tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js"]
TFJS_SCRIPTS += ["tfjs-backend-wasm/dist/tf-backend-wasm.min.js"]
TFJS_WASM = "tfjs-backend-wasm/dist/"
# The playground server's headers (app/page.py): TF.js's page is cross-origin isolated as ours is, which gives it
# SharedArrayBuffer and so its wasm backend's threads
ISOLATED = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}
# a part's times, ms (warm: the median of its warm runs)
TIMES = ("warm_ms", "load_ms", "warmup_ms", "first_ms", "cold_ms")
# label: (backend, wasm's threads: None for the other backends)
OURS_PARTS = {
    "ours webgpu": ("webgpu", None),
    "ours wasm": ("wasm", 1),
    "ours wasm 2 threads": ("wasm", 2),
    "ours numpy": ("numpy", None),
}
# label: (TF.js backend, whether its wasm backend may use threads)
TFJS_PARTS = {
    "TF.js webgpu": ("webgpu", False),
    "TF.js wasm": ("wasm", False),
    "TF.js wasm threaded": ("wasm", True),
    "TF.js cpu": ("cpu", False),
}

# Runs in the playground page (`pe` and `np` predefined); its last expression is the result.
OURS = (
    MULTIPLY_ADDS
    + """
import statistics, time
import playground
from py_engine.engine import ENGINE


async def timed(forward, x):
    # ms from the call to the top-5 (the logits read back, softmax and top-k on the host, as the page does), and
    # the top-1 class
    with pe.scope():
        start = time.perf_counter()
        _, indices = playground.top_k(await forward(x).data())
        return (time.perf_counter() - start) * 1e3, int(indices[0])


MATMUL_SIZE = 1024


async def matmul_seconds(a, b, count=1):
    # `count` matmuls queued back to back, synced by one readback at the end: seconds per matmul
    with pe.scope():
        start = time.perf_counter()
        for _ in range(count - 1):
            pe.matmul(a, b).dispose()
        await pe.matmul(a, b).reshape(-1)[:1].data()
        return (time.perf_counter() - start) / count


async def matmul_gflops(on_cpu, per_round=3, rounds=2):
    # (variant, GFLOP/s) of the variant an adapter of this kind runs: the best of `rounds` rounds
    backend = ENGINE.active()
    saved, backend.on_cpu = backend.on_cpu, on_cpu
    a, b = pe.ones((MATMUL_SIZE, MATMUL_SIZE)), pe.ones((MATMUL_SIZE, MATMUL_SIZE))
    try:
        await matmul_seconds(a, b)  # compiles the pipeline
        best = min([await matmul_seconds(a, b, per_round) for _ in range(rounds)])
        return backend.variants["matmul"], 2 * MATMUL_SIZE**3 / best / 1e9
    finally:
        backend.on_cpu = saved
        pe.dispose([a, b])


began = time.perf_counter()
load = await playground.load_classifier()
c = playground._classifier
x = pe.tensor(np.zeros((1, 224, 224, 3), np.float32))  # uploaded, as TF.js's tf.zeros is: no fill kernel to compile
first_ms, top1 = await timed(c.forward, x)
cold_ms = (time.perf_counter() - began) * 1e3
gpu = pe.get_backend() == "webgpu"
if gpu:  # the roofline's matmul, in the variant this adapter runs
    a, b = pe.ones((MATMUL_SIZE, MATMUL_SIZE)), pe.ones((MATMUL_SIZE, MATMUL_SIZE))
    await matmul_seconds(a, b)  # compiles the pipeline
captured, uncaptured, matmul = [], [], []
for _ in range(RUNS):  # in turns, so a change of load on the machine touches all alike
    captured.append((await timed(c.forward, x))[0])
    uncaptured.append((await timed(c.logits, x))[0])
    if gpu:
        matmul.append(await matmul_seconds(a, b))
with pe.scope():
    macs = multiply_adds(pe.profile(c.logits, x).kernels)
x.dispose()
result = {
    "load_ms": load["load_ms"],
    "warmup_ms": load["warmup_ms"],
    "first_ms": first_ms,
    "cold_ms": cold_ms,
    "warm_ms": statistics.median(captured),
    "warm_uncaptured_ms": statistics.median(uncaptured),
    "runs": RUNS,
    "top1": top1,
    "multiply_adds": macs,
}
if gpu:
    pe.dispose([a, b])
    backend = ENGINE.active()
    here = {backend.variants["matmul"]: 2 * MATMUL_SIZE**3 / statistics.median(matmul) / 1e9}
    result["matmul_gflops"] = dict([await matmul_gflops(not backend.on_cpu)]) | here
result
"""
)

TFJS_MEASURE = """async ([modelUrl, wasmPath, backend, threaded, runs]) => {
  if (backend === "wasm") {
    tf.wasm.setWasmPaths(wasmPath);
    // in an isolated page TF.js takes its threaded build; unthreaded, its SIMD build (one thread)
    if (threaded) tf.wasm.setThreadsCount(window.logicalCores);
    else tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  }
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js could not start its ${backend} backend`);
  await tf.ready();
  const timed = async (model, x) => {  // ms from predict to the top-5 read back, and the top-1 class
    const start = performance.now();
    const top = tf.tidy(() => {
      const { values, indices } = tf.topk(tf.softmax(model.predict(x)), 5);
      return tf.concat([values, indices.toFloat()], 1);
    });
    const data = await top.data();
    top.dispose();
    return [performance.now() - start, data[5]];
  };
  const began = performance.now();
  const model = await tf.loadLayersModel(modelUrl);
  const load_ms = performance.now() - began;
  const x = tf.zeros([1, 224, 224, 3]);
  const [warmup_ms] = await timed(model, x);
  const [first_ms, top1] = await timed(model, x);
  const cold_ms = performance.now() - began;
  const warm = [];
  for (let i = 0; i < runs; i++) warm.push((await timed(model, x))[0]);
  x.dispose();
  model.dispose();
  warm.sort((a, b) => a - b);
  const mid = warm.length >> 1;
  const env = tf.env();
  return {
    load_ms, warmup_ms, first_ms, cold_ms, top1, runs, version: tf.version.tfjs,
    warm_ms: warm.length % 2 ? warm[mid] : (warm[mid - 1] + warm[mid]) / 2,
    ...(backend === "wasm" ? { simd: await env.getAsync("WASM_HAS_SIMD_SUPPORT"),
                              threads: await env.getAsync("WASM_HAS_MULTITHREAD_SUPPORT"),
                              threads_count: tf.wasm.getThreadsCount() } : {}),
  };
}"""


def run_ours(context, url, backend, code):
    """What Python `code` gives in a playground page on `backend` opened in `context`, with the page's adapter."""
    info, result = run_in_page(context, url, code, backend)
    return {**result, "adapter": info["adapter"]}


def ours(browser, url, backend, runs, threads=None):
    """Ours on `backend` (wasm: on `threads` threads) in a fresh context."""
    context = browser.new_context()
    code = OURS.replace("RUNS", str(runs))
    if threads:
        code = f'assert await pe.set_backend("wasm", threads={threads}), pe.backend_info()\n' + code
    try:
        return run_ours(context, url, backend, code)
    finally:
        context.close()


# A first visit's classifier load: its shards downloaded and its pipelines compiled, as a visitor's first image does.
FIRST_VISIT = "import playground\nawait playground.load_classifier()"


def ours_repeat_visit(playwright, url, runs):
    """Ours on webgpu on a user's second visit: one profile kept across two browser launches, so what the browser
    keeps (the HTTP cache's immutable shards, Dawn's cache of compiled shaders, the page's Cache Storage) serves
    the second; the first visit loads the classifier and stays until the page has stored what its next boot takes
    (it does so once idle), as a visitor who looks at the result would."""
    with tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(profile, **launch_options())
        try:
            page, _ = open_playground(context, url)
            run_python(page, FIRST_VISIT)
            wait_until_stored(page, STORED_TIMEOUT_MS)
        finally:
            context.close()
        context = playwright.chromium.launch_persistent_context(profile, **launch_options())
        try:
            return run_ours(context, url, "webgpu", OURS.replace("RUNS", str(runs)))
        finally:
            context.close()


STORED_TIMEOUT_MS = 120_000  # idle 3 s, then a Pyodide snapshot made in a worker of its own


# TF.js's wasm backend caps its threads at half of navigator.hardwareConcurrency (it takes two logical cores for one
# physical core), at most 8: the threaded run's page reports twice the logical cores it has and asks for one thread
# per logical core (on 2 cores TF.js would run 1 thread).
ALL_CORES = """
window.logicalCores = navigator.hardwareConcurrency;
Object.defineProperty(Navigator.prototype, "hardwareConcurrency", { get: () => 2 * window.logicalCores });
"""


def tfjs(browser, url, backend, threaded, runs, measure_js=TFJS_MEASURE, model_json=MODEL_JSON):
    context = browser.new_context()
    try:
        page = context.new_page()
        if threaded:
            page.add_init_script(ALL_CORES)
        page.route(
            url + TFJS_PAGE,
            lambda route: route.fulfill(content_type="text/html", headers=ISOLATED, body="<!doctype html>"),
        )
        page.route(
            url + TFJS_FILES + "**", lambda route: route.fulfill(path=TFJS / route.request.url[len(url + TFJS_FILES) :])
        )
        page.goto(url + TFJS_PAGE)
        for script in TFJS_SCRIPTS:
            page.add_script_tag(path=TFJS / script)
        return page.evaluate(measure_js, [url + model_json, url + TFJS_FILES + TFJS_WASM, backend, threaded, runs])
    finally:
        context.close()


# --model NAME, a graph model of docs/models.md: ours (pe.load_graph_model, execute) against TF.js's tf.loadGraphModel
# of the same files from /models, on the same input: pixel-like values (i * 7919) % 256 in the input's dtype, made
# alike on both sides, so that the outputs can be compared too (SAMPLES values of each, evenly spaced).
SAMPLES = 64
GRAPH_OURS = """
import statistics, time

SAMPLES = SAMPLES_


def summary(name, shape, values):
    flat = values.astype("float64")
    return {"name": name, "shape": shape, "sum": float(flat.sum()),
            "sample": flat[:: max(1, flat.size // SAMPLES)][:SAMPLES].tolist()}


async def timed(model, x):
    # ms from execute to every output read back, and the outputs
    with pe.scope():
        start = time.perf_counter()
        ys = model.execute(x)
        ys = ys if isinstance(ys, list) else [ys]
        values = [(list(y.shape), await y.data()) for y in ys]
        return (time.perf_counter() - start) * 1e3, values


began = time.perf_counter()
model = await pe.load_graph_model(MODEL_URL_)
load_ms = (time.perf_counter() - began) * 1e3
spec = model.inputs[0]
shape = [1 if d in (-1, None) else d for d in spec.shape]
x = pe.tensor(((np.arange(int(np.prod(shape))) * 7919) % 256).astype(spec.dtype).reshape(shape))
warmup_ms, _ = await timed(model, x)
first_ms, values = await timed(model, x)
cold_ms = (time.perf_counter() - began) * 1e3
warm = [(await timed(model, x))[0] for _ in range(RUNS_)]
result = {
    "load_ms": load_ms, "warmup_ms": warmup_ms, "first_ms": first_ms, "cold_ms": cold_ms,
    "warm_ms": statistics.median(warm), "runs": RUNS_, "input": {"shape": shape, "dtype": spec.dtype},
    "outputs": [summary(info.name, shape, v) for info, (shape, v) in zip(model.outputs, values)],
}
x.dispose()
model.dispose()
result
"""

TFJS_GRAPH_MEASURE = """async ([modelUrl, wasmPath, backend, threaded, runs]) => {
  if (backend === "wasm") {
    tf.wasm.setWasmPaths(wasmPath);
    if (threaded) tf.wasm.setThreadsCount(window.logicalCores);
    else tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  }
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js could not start its ${backend} backend`);
  await tf.ready();
  const timed = async (model, x) => {  // ms from execute to every output read back, and the outputs
    const start = performance.now();
    const out = model.execute(x);
    const ys = Array.isArray(out) ? out : [out];
    const values = await Promise.all(ys.map((y) => y.data()));
    const ms = performance.now() - start;
    const shapes = ys.map((y) => y.shape);
    tf.dispose(ys);
    return [ms, values, shapes];
  };
  const began = performance.now();
  const model = await tf.loadGraphModel(modelUrl);
  const load_ms = performance.now() - began;
  const spec = model.inputs[0];
  const shape = spec.shape.map((d) => (d === -1 || d == null ? 1 : d));
  const size = shape.reduce((a, b) => a * b, 1);
  const x = tf.tensor(Array.from({ length: size }, (_, i) => (i * 7919) % 256), shape, spec.dtype);
  const [warmup_ms] = await timed(model, x);
  const [first_ms, values, shapes] = await timed(model, x);
  const cold_ms = performance.now() - began;
  const warm = [];
  for (let i = 0; i < runs; i++) warm.push((await timed(model, x))[0]);
  warm.sort((a, b) => a - b);
  const mid = warm.length >> 1;
  const outputs = values.map((v, k) => {
    const step = Math.max(1, Math.floor(v.length / SAMPLES_));
    const sample = [];
    for (let i = 0; i < v.length && sample.length < SAMPLES_; i += step) sample.push(v[i]);
    return { name: model.outputs[k].name, shape: shapes[k], sum: v.reduce((a, b) => a + b, 0), sample };
  });
  x.dispose();
  model.dispose();
  return {
    load_ms, warmup_ms, first_ms, cold_ms, runs, outputs, version: tf.version.tfjs,
    warm_ms: warm.length % 2 ? warm[mid] : (warm[mid - 1] + warm[mid]) / 2,
    input: { shape, dtype: spec.dtype },
  };
}""".replace("SAMPLES_", str(SAMPLES))


def measure_graph(browser, url, args):
    """(results, failures) of the graph model args.model over args.rounds rounds (measure_graph_round), each part's
    times the medians of its rounds, with each round's cold time (cold_rounds_ms)."""
    rounds, failures = [], {}
    for round_number in range(args.rounds):
        if args.rounds > 1:
            print(f"round {round_number + 1} of {args.rounds}", file=sys.stderr, flush=True)
        results, failed = measure_graph_round(browser, url, args)
        rounds.append(results)
        failures |= failed
    merged = {}
    for label in dict.fromkeys(label for results in rounds for label in results):  # a part that ran in any round
        runs = [r[label] for r in rounds if label in r]
        merged[label] = {**runs[0], **{key: statistics.median(r[key] for r in runs) for key in TIMES}}
        merged[label]["cold_rounds_ms"] = [r["cold_ms"] for r in runs]
    return merged, failures


def measure_graph_round(browser, url, args):
    """(results, failures) of one round: ours on webgpu, wasm (1 and 2 threads) and numpy, then TF.js's parts, each
    in a fresh browser context."""
    model_json = f"models/{args.model}/model.json"
    code = GRAPH_OURS.replace("SAMPLES_", str(SAMPLES)).replace("RUNS_", str(args.runs))
    results, failures = {}, {}
    for label, (backend, threads) in OURS_PARTS.items():
        context = browser.new_context()
        try:
            page, info = open_settled_playground(context, url, backend, STORED_TIMEOUT_MS)
            if threads:  # the pool started before the load is timed, as a page that asked for it at boot
                run_python(page, f'assert await pe.set_backend("wasm", threads={threads}), pe.backend_info()')
            result = run_python(page, code.replace("MODEL_URL_", repr(url + model_json)))
            results[label] = {**result, "adapter": info["adapter"]}
        finally:
            context.close()
        progress(label, results[label])
    for label, (backend, threaded) in TFJS_PARTS.items() if not args.ours_only else ():
        runs = args.cpu_runs if backend == "cpu" else args.runs
        try:
            results[label] = tfjs(browser, url, backend, threaded, runs, TFJS_GRAPH_MEASURE, model_json)
        except PlaywrightError as error:
            failures[label] = error.message.splitlines()[0]
            print(f"{label}: failed: {failures[label]}", file=sys.stderr, flush=True)
            continue
        progress(label, results[label])
    return results, failures


def check_graph_model(url, name, parser):
    """Exits with the catalogue's names unless the server lists `name` as a graph model."""
    with urllib.request.urlopen(url + "models") as response:
        graphs = [m["name"] for m in json.load(response)["models"] if m["kind"] == "graph-model"]
    if name not in graphs:
        parser.error(f"--model {name}: the server's graph models are {', '.join(graphs) or 'none'}")


def output_differences(results, reference="ours numpy"):
    """{part: the largest |difference| of its outputs' samples from the reference's, over the reference's largest
    |value|}: the same weights on the same input give the same outputs, up to float32 rounding."""
    ref = {o["name"].split(":")[0]: o for o in results[reference]["outputs"]}
    differences = {}
    for label, r in results.items():
        worst = 0.0
        for out in r["outputs"]:
            base = ref[out["name"].split(":")[0]]
            assert out["shape"] == base["shape"], (label, out["name"], out["shape"], base["shape"])
            scale = max(max(abs(v) for v in base["sample"]), 1e-6)
            worst = max(worst, max(abs(a - b) for a, b in zip(out["sample"], base["sample"])) / scale)
        differences[label] = worst
    return differences


def measure(playwright, browser, url, args):
    """(machine, results, failures): a TF.js backend that cannot run this model here is a failure, not the end."""
    results, failures = (
        measure_graph(browser, url, args)
        if args.model != CLASSIFIER
        else measure_classifier(playwright, browser, url, args)
    )
    machine = {
        "date": datetime.date.today().isoformat(),
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "chromium": browser.version,
        "adapter": results["ours webgpu"]["adapter"],
    }
    for r in results.values():
        r.pop("adapter", None)
    return machine, results, failures


def measure_classifier(playwright, browser, url, args):
    results, failures = {}, {}
    for label, (backend, threads) in OURS_PARTS.items():
        results[label] = ours(browser, url, backend, args.runs, threads)
        progress(label, results[label])
    results[REPEAT] = ours_repeat_visit(playwright, url, args.runs)
    progress(REPEAT, results[REPEAT])
    for label, (backend, threaded) in TFJS_PARTS.items() if not args.ours_only else ():
        runs = args.cpu_runs if backend == "cpu" else args.runs
        try:
            results[label] = tfjs(browser, url, backend, threaded, runs)
        except PlaywrightError as error:
            failures[label] = error.message.splitlines()[0]
            print(f"{label}: failed: {failures[label]}", file=sys.stderr, flush=True)
            continue
        progress(label, results[label])
    return results, failures


def cpu_model():
    """The CPU's model name as Linux reports it (platform.processor() is empty there), else the architecture."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.machine()


def progress(label, r):
    print(f"{label}: warm {r['warm_ms']:.0f} ms, cold {r['cold_ms']:.0f} ms", file=sys.stderr, flush=True)


def roofline(results):
    """(variant, GFLOP/s, ms for the model's multiply-adds) of the faster matmul variant."""
    gpu = results["ours webgpu"]
    name, gflops = max(gpu["matmul_gflops"].items(), key=lambda item: item[1])
    return name, gflops, 2 * gpu["multiply_adds"] / gflops / 1e6


def ratios(results, roof_ms=None):
    """The ratios the comparison is read in (below 1: the first is faster); a pair with a part that failed is left out."""
    pairs = [
        ("ours webgpu", "TF.js webgpu"),
        ("ours wasm", "TF.js wasm"),
        ("ours wasm", "TF.js wasm threaded"),
        ("ours wasm 2 threads", "ours wasm"),
        ("ours wasm 2 threads", "TF.js wasm threaded"),
        ("ours numpy", "TF.js wasm"),
        ("ours numpy", "TF.js cpu"),
    ]
    lines = {}
    for ours_label, tf_label in pairs:
        if ours_label in results and tf_label in results:
            for key, what in (("warm_ms", "warm forward"), ("cold_ms", "cold")):
                name = f"{ours_label.replace(' ', '-')} / {tf_label.replace(' ', '-')}, {what}"
                lines[name] = results[ours_label][key] / results[tf_label][key]
    for label in ("ours webgpu", "TF.js webgpu") if roof_ms else ():
        if label in results:
            lines[f"{label.replace(' ', '-')} warm forward / roofline"] = results[label]["warm_ms"] / roof_ms
    for label, r in results.items():
        lines[f"{label}: cold / warm forward"] = r["cold_ms"] / r["warm_ms"]
    for label, r in results.items():
        lines[f"{label}: warm-up / warm forward"] = r["warmup_ms"] / r["warm_ms"]
    return lines


def print_report(machine, results, ratio_lines, model="EfficientNet-Lite0"):
    adapter = machine["adapter"] or {}
    print(
        f"{model}, batch 1, {machine['date']}, {machine['cpu']} ({machine['cpu_cores']} cores), "
        f"Chromium {machine['chromium']}, "
        f"webgpu adapter: {adapter.get('vendor', '')} {adapter.get('architecture', '')} {adapter.get('description', '')}"
    )
    if all("top1" in r for r in results.values()):
        top1 = {label: r["top1"] for label, r in results.items()}
        print(f"top-1 class of the zeros input (the same weights give the same class): {top1}")
    else:
        shapes = {o["name"]: o["shape"] for o in results["ours numpy"]["outputs"]}
        print(f"input {results['ours numpy']['input']}, outputs {shapes}")
        differences = ", ".join(f"{label} {d:.1e}" for label, d in output_differences(results).items())
        print(f"outputs' largest difference from ours numpy (over its largest value): {differences}")
    width = max(map(len, results))
    print(
        f"\n  {'':{width}s} {'warm':>8s} {'load':>8s} {'warm-up':>8s} {'1st run':>8s} {'cold':>8s}   (ms; warm: median)"
    )
    for label, r in results.items():
        cells = "".join(f"{r[k]:9.0f}" for k in TIMES)
        extra = f"   uncaptured {r['warm_uncaptured_ms']:.0f}" if "warm_uncaptured_ms" in r else ""
        if "threads_count" in r:  # TF.js's wasm backend: which build ran
            extra += f"   SIMD {r['simd']}, threads {r['threads_count']}"
        if len(r.get("cold_rounds_ms", ())) > 1:
            extra += "   cold by round " + " ".join(f"{ms:.0f}" for ms in r["cold_rounds_ms"])
        print(f"  {label:{width}s}{cells}{extra}   n={r['runs']}")
    print("\nratios (below 1: the first is faster)")
    for name, value in ratio_lines.items():
        print(f"  {name:52s} {value:7.2f}x")


def print_roofline(results):
    gpu = results["ours webgpu"]
    variant, _, roof_ms = roofline(results)
    per_variant = ", ".join(f"{name} {g:.2f}" for name, g in gpu["matmul_gflops"].items())
    print(
        f"\nroofline: matmul 1024^3 on the page's adapter, GFLOP/s: {per_variant}; the best ({variant}) would do "
        f"the model's {gpu['multiply_adds'] / 1e6:.0f}M multiply-adds in {roof_ms:.0f} ms"
    )


def bar_chart_svg(machine, results, roof_ms=None, model="EfficientNet-Lite0"):
    """Two panels of horizontal bars (warm forward, cold) in ms; the roofline (if given) marked on the warm panel."""
    row, label_width, bar_width, panel_gap = 26, 190, 560, 40
    rows = list(results.items())
    panels = [("warm forward, median (ms)", "warm_ms"), ("cold: load + warm-up + first run (ms)", "cold_ms")]
    height = len(panels) * (len(rows) * row + 30) + panel_gap + 30
    width = label_width + bar_width + 90
    adapter = machine["adapter"] or {}
    tfjs_version = next((r["version"] for label, r in rows if label.startswith("TF.js")), "(none ran)")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-weight="bold">{html.escape(model)}, batch 1: ours vs TensorFlow.js '
        f"{html.escape(tfjs_version)}, Chromium {html.escape(machine['chromium'])}, "
        f"{machine['cpu_cores']} cores ({html.escape(machine['cpu'])}), {html.escape(adapter.get('architecture') or adapter.get('vendor') or '')}"
        "</text>",
    ]
    y = 40
    for title, key in panels:
        parts.append(f'<text x="8" y="{y}" font-weight="bold">{html.escape(title)}</text>')
        y += 10
        top = max(r[key] for _, r in rows)
        for label, r in rows:
            length = bar_width * r[key] / top
            color = "#3b7dd8" if label.startswith("ours") else "#e08a2c"
            parts += [
                f'<text x="8" y="{y + 15}">{html.escape(label)}</text>',
                f'<rect x="{label_width}" y="{y + 3}" width="{length:.1f}" height="{row - 8}" fill="{color}"/>',
                f'<text x="{label_width + length + 5:.1f}" y="{y + 15}">{r[key]:.0f}</text>',
            ]
            y += row
        if key == "warm_ms" and roof_ms is not None and roof_ms <= top:
            x = label_width + bar_width * roof_ms / top
            parts += [
                f'<line x1="{x:.1f}" y1="{y - len(rows) * row}" x2="{x:.1f}" y2="{y}" stroke="black" '
                'stroke-dasharray="4 3"/>',
                f'<text x="{x + 4:.1f}" y="{y + 14}" font-size="11">roofline (matmul rate): {roof_ms:.0f} ms</text>',
            ]
        y += panel_gap
    parts.append("</svg>")
    return "\n".join(parts)


def screenshot(browser, svg, path):
    page = browser.new_page()
    page.set_content(f'<!doctype html><body style="margin:0">{svg}</body>')
    page.locator("svg").screenshot(path=str(path))
    page.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--runs", type=int, default=10, help="warm runs per engine and backend (default 10)")
    parser.add_argument("--cpu-runs", type=int, default=3, help="warm runs on TF.js's cpu backend (default 3)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="with --model: rounds of every part, each a fresh context; the times are the rounds' medians "
        "(a cold start is one sample a round; default 1)",
    )
    parser.add_argument(
        "--out", type=Path, help="the JSON (default: bench/results/compare.json, or compare-MODEL.json)"
    )
    parser.add_argument("--static", type=Path, help="the page folder to serve (default: static/)")
    parser.add_argument("--ours-only", action="store_true", help="measure ours alone, without TF.js")
    parser.add_argument(
        "--model",
        default=CLASSIFIER,
        help=f"{CLASSIFIER} (default: the page's classifier), or a graph model of docs/models.md, e.g. "
        "movenet-lightning or centernet (pe.load_graph_model against tf.loadGraphModel)",
    )
    args = parser.parse_args()
    if min(args.runs, args.cpu_runs, args.rounds) < 1:
        parser.error(f"--runs, --cpu-runs and --rounds must be >= 1 (got {args.runs}, {args.cpu_runs}, {args.rounds})")
    if not args.ours_only and not (TFJS / "tfjs").exists():
        sys.exit("TF.js is not installed: npm ci --prefix bench/tfjs --ignore-scripts")
    graph = args.model != CLASSIFIER
    if args.rounds > 1 and not graph:
        parser.error("--rounds is for a graph model (--model NAME)")
    args.out = args.out or REPO / "bench" / "results" / (f"compare-{args.model}.json" if graph else "compare.json")
    chart = args.out.with_suffix(".png")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.url and args.static:
        parser.error("--static serves a page folder from a server of our own: leave out --url")
    with playground_server(args.url, static=args.static, graph_models=graph) as url, sync_playwright() as p:
        if graph:
            check_graph_model(url, args.model, parser)
        browser = launch(p)
        machine, results, failures = measure(p, browser, url, args)
        variant, gflops, roof_ms = (None, None, None) if graph else roofline(results)
        # the same Chromium draws the chart
        screenshot(browser, bar_chart_svg(machine, results, roof_ms, args.model if graph else CLASSIFIER_TITLE), chart)
        browser.close()
    ratio_lines = ratios(results, roof_ms)
    print_report(machine, results, ratio_lines, args.model if graph else CLASSIFIER_TITLE)
    if not graph:
        print_roofline(results)
    for label, reason in failures.items():
        print(f"  {label} did not run: {reason}")
    report = {"model": args.model, "machine": machine, "results": results}
    if graph:
        report["output_differences"] = output_differences(results)
    else:
        report["roofline"] = {"variant": variant, "gflops": gflops, "model_ms": roof_ms}
    report |= {"ratios": ratio_lines, "failures": failures}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out} and {chart}")


if __name__ == "__main__":
    main()
