"""EfficientNet-Lite0's forward pass with each register-block rule of the GEMM, in turns in one page.

    .venv/bin/python bench/experiments/gemm_blocks.py [--url http://127.0.0.1:8000/] [--rounds 8]

In headless Chromium on webgpu (a CPU adapter, so the register-blocked GEMM runs: SwiftShader on these machines), the
page loads the model as forward_profile.py does and captures its forward pass once per rule of
py_engine/backends/webgpu/kernels/linalg.py's register_block: the engine's own (14x16, 7x8 for a convolution that
tests its padding) and 7x8 blocks everywhere (the rule before 14x16 blocks); one row under FEW_ROWS rows in both. A
block is part of its shader's key, so each block compiles a pipeline of its own. Then --rounds rounds run each
captured forward pass once, in turns with a 1024^3 matmul (the roofline, as bench/compare.py sets it), so a change of
load on the machine touches all alike. Prints each rule's fastest and median time and, per round, its time over the
engine rule's, the engine's fastest forward pass over the model's multiply-adds at the fastest matmul's rate; checks
that all give the same logits. Timings are for reading, never asserted in tests.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/harness.py, shared with the benchmarks
from harness import MULTIPLY_ADDS, playground_server, run_in_playground

MEASURE = (
    MULTIPLY_ADDS
    + """
import time
import numpy as np
from py_engine.backends.webgpu.kernels import linalg

engine_rule = linalg.register_block
RULES = {"engine": engine_rule, "7x8": lambda rows, bounded: linalg.ONE_ROW if rows < linalg.FEW_ROWS else (7, 8)}
model = await pe.load_layers_model("/models/efficientnet-lite0/model.json")
model.fold_batch_norms(release_unfolded=True)
x = pe.tensor(np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32))
forwards, logits = {}, {}
try:
    for name, rule in RULES.items():  # the rule applies while a forward pass is recorded
        linalg.register_block = rule
        forwards[name] = pe.capture(model.predict)
        with pe.scope():
            logits[name] = forwards[name](x).numpy()
finally:
    linalg.register_block = engine_rule
a, b = pe.ones((1024, 1024)), pe.ones((1024, 1024))
with pe.scope():
    pe.matmul(a, b).reshape(-1)[:1].numpy()  # compiles its pipeline
times, matmul = {name: [] for name in RULES}, []
for _ in range(__ROUNDS__):
    for name, forward in forwards.items():
        start = time.perf_counter()
        with pe.scope():
            await forward(x).data()
        times[name].append((time.perf_counter() - start) * 1e3)
    start = time.perf_counter()
    with pe.scope():
        await pe.matmul(a, b).reshape(-1)[:1].data()
    matmul.append(time.perf_counter() - start)
for forward in forwards.values():
    forward.dispose()
with pe.scope():
    macs = multiply_adds(pe.profile(model.predict, x).kernels)
model.dispose(); pe.dispose([x, a, b])
same = all(np.allclose(logits["engine"], other, rtol=1e-4, atol=1e-5) for other in logits.values())
{"times": times, "same_logits": bool(same), "gflops": 2 * 1024**3 / min(matmul) / 1e9, "multiply_adds": macs}
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of one forward pass per rule (default 8)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1 (got {args.rounds})")
    with playground_server(args.url) as url:
        info, result = run_in_playground(url, MEASURE.replace("__ROUNDS__", str(args.rounds)))
    adapter = info["adapter"] or {}
    print(f"EfficientNet-Lite0 forward on webgpu ({adapter.get('vendor', '')} {adapter.get('architecture', '')}),")
    print(f"{args.rounds} rounds in turns; the same logits under every rule: {result['same_logits']}")
    engine = result["times"]["engine"]
    for name, times in result["times"].items():
        ratios = sorted(t / e for t, e in zip(times, engine))
        print(
            f"  {name:7s} min {min(times):6.0f} ms  median {sorted(times)[len(times) // 2]:6.0f} ms  "
            f"over the engine's, per round: {' '.join(f'{r:.2f}' for r in ratios)}"
        )
    roof_ms = 2 * result["multiply_adds"] / result["gflops"] / 1e6
    print(
        f"roofline: the 1024^3 matmul at {result['gflops']:.2f} GFLOP/s would do the model's "
        f"{result['multiply_adds'] / 1e6:.0f}M multiply-adds in {roof_ms:.0f} ms; the engine's fastest forward pass "
        f"is {min(engine) / roof_ms:.2f}x that"
    )
    if not result["same_logits"]:
        raise SystemExit("the rules gave different logits")


if __name__ == "__main__":
    main()
