"""The wasm backend's relaxed-SIMD module against the plain one, in the served Pyodide in Node.

    .venv/bin/python bench/wasm_relaxed.py [--rounds 3] [--models movenet-lightning,centernet,efficientnet-lite0]

One Pyodide instantiates both modules (kernels_relaxed.wasm, kernels.wasm) on its memory and swaps them in turns:
the GEMM with its bias + relu6 epilogue (FusedConv2D's) on 1x1-convolution shapes, 3x3 depthwise convolutions, and
a warm run of each model (the graph models of `python -m app fetch-models`, EfficientNet-Lite0 of
`python -m app convert efficientnet-lite0`; missing ones are skipped). Each figure is the least CPU time of the
process (process.cpuUsage, less moved by other programs on a shared machine than wall time) over --rounds rounds,
several calls per round; the last column is relaxed / plain. Node 20 runs relaxed SIMD behind
--experimental-wasm-relaxed-simd, given where this Node knows it; the page's Chromium has it on.
"""

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.graph_model_cases import model_inputs  # noqa: E402 - the repository root is on the path now
from tests.pyodide import start_node_pyodide  # noqa: E402

MODELS = ROOT / "models"
GEMMS = [(2304, 24, 96), (9216, 16, 96), (144, 96, 576), (36, 160, 960), (3136, 144, 24), (196, 672, 112)]
DEPTHWISE = [(48, 48, 24, 1), (96, 96, 32, 1), (24, 24, 192, 1), (12, 12, 384, 1), (96, 96, 96, 2), (128, 128, 128, 1)]
RELAXED_FLAG = "--experimental-wasm-relaxed-simd"

CODE = """
import js, numpy as np, pyodide_js
from importlib import resources
from py_engine.backends.wasm import native
from py_engine.backends.wasm.kernels.linalg import gemm, pack
from py_engine.backends.wasm.kernels.fused import _fused_depthwise
assert await pe.set_backend("wasm", threads=1)
assert native.simd() == "relaxed", "this JavaScript has no relaxed SIMD"
modules = {v: native.instantiate(resources.files(native.__package__).joinpath(f).read_bytes())
           for v, f in (("relaxed", "kernels_relaxed.wasm"), ("plain", "kernels.wasm"))}
try:
    pyodide_js.mountNodeFS("/models", __MODELS__)
except Exception:
    pass  # mounted in an earlier round

def cpu_ms():
    used = js.process.cpuUsage()
    return (used.user + used.system) / 1e3

def least(f, reps):
    f()
    best = float("inf")
    for _ in range(3):
        start = cpu_ms()
        for _ in range(reps):
            f()
        best = min(best, (cpu_ms() - start) / reps)
    return best

cases = []
rng = np.random.default_rng(0)
for m, k, n in __GEMMS__:
    a, b, bias = (rng.standard_normal(s, np.float32) for s in ((m, k), (k, n), (n,)))
    packed, c = pack(b, k, n), np.empty((m, n), np.float32)
    reps = max(2, int(2e7 / (m * n * k)))
    cases.append((f"GEMM {m}x{k}x{n}", 2 * m * n * k,
                  lambda a=a, p=packed, c=c, m=m, n=n, k=k, bias=bias: gemm(a, p, m, n, k, c, bias=bias, activation=2),
                  reps))
for h, w, ch, s in __DEPTHWISE__:
    x, f, bias = (rng.standard_normal(sh, np.float32) for sh in ((1, h, w, ch), (3, 3, ch, 1), (ch,)))
    pad = ((1, 1), (1, 1)) if s == 1 else ((0, 1), (0, 1))
    call = lambda x=x, f=f, bias=bias, s=s, pad=pad: _fused_depthwise(
        x, f, bias, strides=(s, s), pad=pad, dilations=(1, 1), activation="relu6")
    cases.append((f"depthwise 3x3 {h}x{w}x{ch}/{s}", 2 * 9 * h * w * ch // (s * s), call, max(2, int(1e7 / (9 * h * w * ch)))))
for name, shape, dtype in __CASES__:
    if name == "efficientnet-lite0":
        model = await pe.load_layers_model("file:///models/efficientnet-lite0/model.json")
        model.fold_batch_norms(release_unfolded=True)
        x = pe.zeros(shape)
        run = lambda model=model, x=x: model.predict(x).dispose()
    else:
        model = await pe.load_graph_model(f"file:///models/{name}/model.json")
        x = pe.tensor((np.arange(np.prod(shape)) * 7919 % 256).reshape(shape).astype(dtype))
        run = lambda model=model, x=x: pe.dispose(model.execute(x))
    cases.append((f"{name} warm run", None, run, 3))

result = {}
for variant in ("relaxed", "plain", "relaxed", "plain"):
    native.exports = modules[variant]
    for label, flop, f, reps in cases:
        ms, entry = least(f, reps), result.setdefault(label, {"flop": flop})
        entry[variant] = min(ms, entry.get(variant, ms))
native.exports = modules["relaxed"]
result
"""


def relaxed_flags():
    """The flag where this Node knows it (Node 20), none where its V8 shipped relaxed SIMD."""
    known = subprocess.run(["node", RELAXED_FLAG, "-e", "0"], capture_output=True).returncode == 0
    return (RELAXED_FLAG,) if known else ()


def model_cases(names):
    cases = []
    for name in names:
        model_json = MODELS / name / "model.json"
        if not model_json.is_file():
            print(f"{name}: not in {MODELS} (python -m app fetch-models, or convert efficientnet-lite0): skipped")
        elif name == "efficientnet-lite0":
            cases.append((name, [1, 224, 224, 3], "float32"))
        else:
            _, array = model_inputs(model_json)[0]
            cases.append((name, list(array.shape), str(array.dtype)))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="movenet-lightning,centernet,efficientnet-lite0")
    args = parser.parse_args()
    code = (
        CODE.replace("__MODELS__", repr(str(MODELS)))
        .replace("__GEMMS__", repr(GEMMS))
        .replace("__DEPTHWISE__", repr(DEPTHWISE))
        .replace("__CASES__", repr(model_cases(args.models.split(","))))
    )
    node = start_node_pyodide(relaxed_flags())
    rounds = [node.run(code) for _ in range(args.rounds)]
    node.close()
    print(f"least CPU time of {args.rounds} rounds, ms (GFLOP/s)        relaxed       plain   relaxed / plain")
    for label in rounds[0]:
        flop = rounds[0][label]["flop"]
        relaxed, plain = (min(r[label][v] for r in rounds) for v in ("relaxed", "plain"))
        cells = [f"{ms:8.2f}" + (f" ({flop / ms / 1e6:5.1f})" if flop else "") for ms in (relaxed, plain)]
        print(f"{label:38} {cells[0]} {cells[1]}   {relaxed / plain:6.2f}x")


if __name__ == "__main__":
    main()
