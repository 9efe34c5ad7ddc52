"""The eleven TF.js graph models of @vladmandic/human: a warm run here against TensorFlow.js 4.22 in Node.

    .venv/bin/python bench/graph_models.py [--runs 5] [--models blazeface,iris]

Per model, on scikit-image's chelsea photo sized for it: the median of `runs` warm runs (after one that compiles
and records) of ours in CPython on numpy and on webgpu (`execute`, replayed whole; `execute_async` for handtrack) and
of TF.js's executeAsync on its cpu and wasm backends in Node (`npm ci --prefix bench/tfjs --ignore-scripts` first),
and ours / TF.js-wasm. Everything runs in this one process and one Node, one after the other.
"""

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import py_engine as pe  # noqa: E402 - the repository root is on the path now
from app.__main__ import main as app_main  # noqa: E402
from app.graph_models import MODELS  # noqa: E402
from tests.graph_model_cases import model_inputs  # noqa: E402

TFJS = """
const tf = require(__TFJS__ + '/@tensorflow/tfjs');
require(__TFJS__ + '/@tensorflow/tfjs-backend-wasm');
const fs = require('fs'), path = require('path');
(async () => {
  const [dir, names, runs] = [__DIR__, __NAMES__, __RUNS__];
  const result = {};
  for (const backend of ['cpu', 'wasm']) {
    await tf.setBackend(backend);
    for (const name of names) {
      const json = JSON.parse(fs.readFileSync(path.join(dir, name, 'model.json'), 'utf8'));
      const shards = json.weightsManifest.flatMap((g) => g.paths).map((p) => fs.readFileSync(path.join(dir, name, p)));
      const model = await tf.loadGraphModel(tf.io.fromMemory({
        modelTopology: json.modelTopology, weightSpecs: json.weightsManifest.flatMap((g) => g.weights),
        weightData: new Uint8Array(Buffer.concat(shards)).buffer, signature: json.signature,
        userDefinedMetadata: json.userDefinedMetadata,
      }));
      const input = JSON.parse(fs.readFileSync(path.join(dir, name + '.input.json'), 'utf8'));
      const x = tf.tensor(input.data, input.shape, input.dtype);
      const times = [];
      for (let k = 0; k <= runs; k++) {
        const start = performance.now();
        const ys = [await model.executeAsync(x)].flat();
        await Promise.all(ys.map((y) => y.data()));
        times.push(performance.now() - start);
        tf.dispose(ys);
      }
      times.shift();
      times.sort((a, b) => a - b);
      (result[name] = result[name] || {})['tfjs ' + backend] = times[Math.floor(times.length / 2)];
      x.dispose();
      model.dispose();
    }
  }
  console.log(JSON.stringify(result));
})();
"""


def run_once(model, x, dynamic):
    """One run to the outputs' values on the host."""
    ys = asyncio.run(model.execute_async(x)) if dynamic else model.execute(x)
    ys = ys if isinstance(ys, list) else [ys]
    for y in ys:
        y.numpy()
    pe.dispose(ys)


def ours(folder, names, runs, backend):
    """{model: median ms of a warm run} on `backend`."""
    assert asyncio.run(pe.set_backend(backend)), pe.backend_info()["fallback_reason"]
    result = {}
    for name in names:
        model = asyncio.run(pe.load_graph_model(folder / name))
        x = pe.tensor(model_inputs(folder / name / "model.json")[0][1])
        dynamic = name == "handtrack"
        run_once(model, x, dynamic)  # compiles, records
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            run_once(model, x, dynamic)
            times.append((time.perf_counter() - start) * 1000)
        result[name] = statistics.median(times)
        x.dispose()
        model.dispose()
    return result


def tfjs(folder, names, runs):
    modules = ROOT / "bench" / "tfjs" / "node_modules"
    if not (modules / "@tensorflow" / "tfjs-backend-wasm").is_dir():
        raise SystemExit("TF.js is not installed: npm ci --prefix bench/tfjs --ignore-scripts")
    for name in names:
        array = model_inputs(folder / name / "model.json")[0][1]
        data = {"shape": list(array.shape), "dtype": str(array.dtype), "data": array.reshape(-1).tolist()}
        (folder / f"{name}.input.json").write_text(json.dumps(data))
    script = (
        TFJS.replace("__TFJS__", json.dumps(str(modules)))
        .replace("__DIR__", json.dumps(str(folder)))
        .replace("__NAMES__", json.dumps(names))
        .replace("__RUNS__", str(runs))
    )
    done = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models", default=",".join(sorted(MODELS)))
    args = parser.parse_args()
    names = args.models.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        assert app_main(["fetch-models", "--models", str(folder)]) == 0
        times = tfjs(folder, names, args.runs)
        for backend in ("numpy", "webgpu"):
            for name, ms in ours(folder, names, args.runs, backend).items():
                times[name][f"ours {backend}"] = ms
    columns = ["ours numpy", "ours webgpu", "tfjs cpu", "tfjs wasm"]
    print(f"warm run, median of {args.runs}, ms; webgpu: {pe.backend_info().get('device')}")
    print(f"| model | {' | '.join(columns)} | numpy / TF.js-wasm |")
    print(f"|---|{'---:|' * (len(columns) + 1)}")
    for name in names:
        row = times[name]
        cells = " | ".join(f"{row[c]:.0f}" for c in columns)
        print(f"| {name} | {cells} | {row['ours numpy'] / row['tfjs wasm']:.2f}x |")


if __name__ == "__main__":
    main()
