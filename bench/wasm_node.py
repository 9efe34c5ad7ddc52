"""The wasm backend's kernels without a browser: the served Pyodide and TF.js-wasm, each in Node, in turns.

    .venv/bin/python bench/wasm_node.py [--rounds 3]

Prints, per EfficientNet-Lite0 1x1-convolution shape, GFLOP/s of our GEMM with its bias + relu6 epilogue (the
FusedConv2D kernel's), numpy's matmul in the same Pyodide, and TF.js-wasm's fused matMul (SIMD, one thread,
`npm ci --prefix bench/tfjs --ignore-scripts` first); then EfficientNet-Lite0's warm forward pass (batch 1,
`python -m app convert efficientnet-lite0` first) on wasm (1 thread, and 2: Node's worker_threads run the page's
pool), numpy, and TF.js-wasm's predict of the same model folder; bench/train_step.py's small CNN's fit step on wasm
(1 and 2 threads); and, each round, how long two threads of a plain loop take against one (whether two cores were
free). Each figure is the best of --rounds rounds, the engines in turns within a round, with the ratios to
TF.js-wasm. Node runs V8 as Chromium does, but an older one: the page's numbers come from bench/compare.py.
"""

import argparse
import functools
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import SMALL_CNN  # noqa: E402

from tests.pyodide import start_node_pyodide  # noqa: E402 - the repository root is on the path now

SHAPES = [(12544, 16, 96), (3136, 144, 24), (784, 240, 40), (196, 672, 112), (49, 192, 1152), (49, 1152, 192)]
MODEL = ROOT / "models" / "efficientnet-lite0"

OURS = (
    SMALL_CNN
    + """
import time, pyodide_js
from py_engine.backends.wasm.kernels.linalg import gemm, pack
await pe.set_backend("wasm")
if "model" not in globals():
    pyodide_js.mountNodeFS("/models", __MODEL__)
    model = await pe.load_layers_model("file:///models/model.json")
    model.fold_batch_norms(release_unfolded=True)
    image = pe.tensor(np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32))

def best_ms(f, reps):
    f()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        times.append((time.perf_counter() - t) / reps)
    return min(times) * 1e3

rng, result = np.random.default_rng(0), {"gemm": [], "matmul": []}
for m, k, n in __SHAPES__:
    a, b, bias = (rng.standard_normal(s, np.float32) for s in ((m, k), (k, n), (n,)))
    packed, c, reps = pack(b, k, n), np.empty((m, n), np.float32), max(2, int(4e7 / (m * n * k)))
    result["gemm"].append(best_ms(lambda: gemm(a, packed, m, n, k, c, bias=bias, activation=2), reps))
    result["matmul"].append(best_ms(lambda: np.minimum(np.maximum(a @ b + bias, 0), 6), max(1, reps // 8)))

def forward():
    model.predict(image).dispose()

if "cnn" not in globals():  # bench/train_step.py's small CNN, batch 64, 4 batches an epoch
    cnn_x, cnn_y, cnn = small_cnn(256)

def fit_step():
    cnn.fit(cnn_x, cnn_y, batch_size=64, epochs=1, verbose=0, shuffle=False)

for name, backend, threads in (("wasm", "wasm", 1), ("wasm_2_threads", "wasm", 2), ("numpy", "numpy", None)):
    assert await pe.set_backend(backend, **({"threads": threads} if threads else {}))
    result["forward_" + name] = best_ms(forward, 1 if backend == "numpy" else 3)
    if backend == "wasm":
        result["fit_" + name] = best_ms(fit_step, 1) / 4
await pe.set_backend("wasm", threads=1)
result
"""
)

# two worker_threads running the same plain loop, against one: whether this machine has two cores free now
PARALLEL = """
const { Worker } = require("worker_threads");
const loop = "let x = 0; for (let i = 0; i < 2e8; i++) x += i % 7; require('worker_threads').parentPort.postMessage(x);";
const run = (n) => {
  const start = performance.now();
  return Promise.all(Array.from({ length: n }, () => new Promise((done) => new Worker(loop, { eval: true })
    .once("message", done)))).then(() => performance.now() - start);
};
(async () => console.log(JSON.stringify({ one: await run(1), two: await run(2) })))();
"""

TFJS = """
const fs = require("fs");
const tf = require(__TFJS__ + "/@tensorflow/tfjs");
const wasm = require(__TFJS__ + "/@tensorflow/tfjs-backend-wasm");
(async () => {
  wasm.setThreadsCount(1);
  await tf.setBackend("wasm");
  const best = async (f, reps) => {
    await f();
    let min = Infinity;
    for (let r = 0; r < 3; r++) {
      const t = performance.now();
      for (let i = 0; i < reps; i++) await f();
      min = Math.min(min, (performance.now() - t) / reps);
    }
    return min;
  };
  const gemm = [];
  for (const [m, k, n] of __SHAPES__) {
    const a = tf.randomNormal([m, k]), b = tf.randomNormal([k, n]), bias = tf.randomNormal([n]);
    const reps = Math.max(2, Math.floor(4e7 / (m * n * k)));
    gemm.push(await best(() => tf.fused.matMul({ a, b, bias, activation: "relu6" }).dispose(), reps));
  }
  const folder = __MODEL__ + "/", json = JSON.parse(fs.readFileSync(folder + "model.json"));
  const data = Buffer.concat(json.weightsManifest.flatMap((g) => g.paths.map((p) => fs.readFileSync(folder + p))));
  const model = await tf.loadLayersModel(tf.io.fromMemory({
    modelTopology: json.modelTopology, weightSpecs: json.weightsManifest.flatMap((g) => g.weights),
    weightData: data.buffer.slice(data.byteOffset, data.byteOffset + data.length),
  }));
  const image = tf.randomNormal([1, 224, 224, 3]);
  const forward = await best(async () => { const y = model.predict(image); await y.data(); y.dispose(); }, 3);
  console.log(JSON.stringify({ gemm, forward }));
})();
"""


def tfjs_round():
    modules = ROOT / "bench" / "tfjs" / "node_modules"
    if not (modules / "@tensorflow" / "tfjs-backend-wasm").is_dir():
        raise SystemExit("TF.js is not installed: npm ci --prefix bench/tfjs --ignore-scripts")
    script = (
        TFJS.replace("__TFJS__", json.dumps(str(modules)))
        .replace("__SHAPES__", json.dumps(SHAPES))
        .replace("__MODEL__", json.dumps(str(MODEL)))
    )
    done = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not (MODEL / "model.json").is_file():
        raise SystemExit("EfficientNet-Lite0 is not converted: .venv/bin/python -m app convert efficientnet-lite0")
    node = start_node_pyodide()
    code = OURS.replace("__SHAPES__", repr(SHAPES)).replace("__MODEL__", repr(str(MODEL)))
    ours, tfjs, parallel = [], [], []
    for _ in range(args.rounds):
        done = subprocess.run(["node", "-e", PARALLEL], capture_output=True, text=True, check=True)
        parallel.append(json.loads(done.stdout))
        ours.append(node.run(code))
        tfjs.append(tfjs_round())
    node.close()

    def best(rounds, *path):
        return min(functools.reduce(lambda value, key: value[key], path, r) for r in rounds)

    print(f"{'m x k x n':>18} {'ours wasm':>10} {'numpy':>8} {'TF.js-wasm':>11}  GFLOP/s   ours/TF.js time")
    for i, (m, k, n) in enumerate(SHAPES):
        flop = 2 * m * n * k / 1e6
        g, np_, tf = best(ours, "gemm", i), best(ours, "matmul", i), best(tfjs, "gemm", i)
        print(f"{m:>6} x {k:>4} x {n:>4} {flop / g:>10.1f} {flop / np_:>8.1f} {flop / tf:>11.1f}   {g / tf:>14.2f}x")
    wasm, numpy, tf = best(ours, "forward_wasm"), best(ours, "forward_numpy"), best(tfjs, "forward")
    two = best(ours, "forward_wasm_2_threads")
    print(
        f"EfficientNet-Lite0 warm forward, ms: ours wasm {wasm:.1f}, on 2 threads {two:.1f}, ours numpy {numpy:.1f}, "
        f"TF.js-wasm {tf:.1f}"
    )
    print(f"ours wasm / TF.js-wasm: {wasm / tf:.2f}x; ours numpy / TF.js-wasm: {numpy / tf:.2f}x")
    print(f"ours wasm 2 threads / 1 thread: {two / wasm:.2f}x; 2 threads / TF.js-wasm (1 thread): {two / tf:.2f}x")
    fit, fit_two = best(ours, "fit_wasm"), best(ours, "fit_wasm_2_threads")
    print(f"small CNN fit step (batch 64), ms: ours wasm {fit:.1f}, on 2 threads {fit_two:.1f} ({fit_two / fit:.2f}x)")
    times = ", ".join(f"{p['two'] / p['one']:.2f}x" for p in parallel)
    print(f"two threads of a plain loop against one, each round (1.00x: two cores free): {times}")


if __name__ == "__main__":
    main()
