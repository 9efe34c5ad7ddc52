"""What the GEMM pays per output element besides its multiply-adds, against the cost of a bare store, in the page.

    .venv/bin/python bench/experiments/gemm_costs.py [--url http://127.0.0.1:8000/] [--rows 12544] [--cols 96]

In headless Chromium on webgpu, one page times (captured, 5 runs per replay, the fastest of 3 replays):
- pe.matmul of [rows, K] by [K, cols] for K = 16 .. 256 (EfficientNet-Lite0's first 1x1 convolution is 12544 x 96
  at K = 16); a straight line through (K, ms) splits each output's cost into a part per multiply-add (the slope: the
  rate the matmul roofline of bench/compare.py measures at K = 1024) and a part per output element (the intercept:
  the start of its sums, the epilogue, the store, the thread's setup);
- the store floor: a shader whose threads each store 16 adjacent float32 outputs and do nothing else;
- EfficientNet-Lite0's forward pass (captured, as the classifier runs it) and its 1x1 convolutions' outputs and
  multiply-adds (pe.profile), so the line predicts their time.
A roofline that counts multiply-adds alone cannot see the intercept (on SwiftShader most of it stays when the GEMM
stores nothing: docs/platform_facts.md). Timings are for reading, never asserted in tests.
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/harness.py, shared with the benchmarks
from harness import CAPTURED_FORWARD, FASTEST_REPLAY, MULTIPLY_ADDS, playground_server, run_in_playground

MEASURE = (
    MULTIPLY_ADDS
    + FASTEST_REPLAY
    + CAPTURED_FORWARD
    + """
import math

ROWS, COLS, STEPS = __ROWS__, __COLS__, (16, 32, 64, 128, 256)
STORES = 16  # adjacent outputs a thread of the store floor writes

STORE_WGSL = '''
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let t = id.x + id.y * 65535u * 64u;
  if (t >= params.threads) { return; }
''' + "".join(f"  out[t * {STORES}u + {j}u] = f32(t) + {j}.0;\\n" for j in range(STORES)) + "}\\n"


def store_dispatch(x):
    threads = x.size // STORES
    groups = -(-threads // 64)
    return pe.Dispatch(
        outputs={"out": (x.shape, "float32")},
        workgroups=(min(groups, 65535), -(-groups // 65535)),
        uniforms={"threads": threads},
    )


pe.register_kernel(
    "BenchStores", "webgpu",
    pe.Program("BenchStores", STORE_WGSL, inputs=["x"], uniforms={"threads": "u32"}, dispatch=store_dispatch),
)


matmul_ms = {}
for k in STEPS:
    a, b = pe.ones((ROWS, k)), pe.ones((k, COLS))
    matmul_ms[k] = fastest_replay_ms(pe.matmul, a, b)
    pe.dispose([a, b])
x = pe.zeros((ROWS, COLS))
store_ms = fastest_replay_ms(lambda t: pe.run_kernel("BenchStores", [t]), x)
x.dispose()

model = await pe.load_layers_model("/models/efficientnet-lite0/model.json")
model.fold_batch_norms(release_unfolded=True)
image = pe.zeros((1, 224, 224, 3))
forward_ms = await captured_forward_ms(model, image)
with pe.scope():
    kernels = pe.profile(model.predict, image).kernels
pointwise = [k for k in kernels if k.name == "FusedConv2D" and tuple(k.input_shapes[1][:2]) == (1, 1)]
{
    "matmul_ms": matmul_ms,
    "store_ms": store_ms,
    "forward_ms": forward_ms,
    "multiply_adds": multiply_adds(kernels),
    "pointwise_outputs": sum(math.prod(k.output_shapes[0]) for k in pointwise),
    "pointwise_multiply_adds": multiply_adds(pointwise),
    "pointwise_layers": len(pointwise),
}
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--rows", type=int, default=12544, help="the matmuls' rows (default 12544: 112 x 112)")
    parser.add_argument("--cols", type=int, default=96, help="the matmuls' columns (default 96)")
    args = parser.parse_args()
    if args.rows < 64 or args.cols < 16:
        parser.error("--rows must be >= 64 and --cols >= 16 (the GEMM's 14x16 blocks, filled)")
    code = MEASURE.replace("__ROWS__", str(args.rows)).replace("__COLS__", str(args.cols))
    with playground_server(args.url) as url:
        info, r = run_in_playground(url, code)
    adapter = info["adapter"] or {}
    outputs = args.rows * args.cols
    points = [(int(k), ms) for k, ms in r["matmul_ms"].items()]
    slope, intercept = statistics.linear_regression(*zip(*points))
    per_output_ns = intercept * 1e6 / outputs
    store_ns = r["store_ms"] * 1e6 / outputs
    rate = outputs / slope / 1e6  # G multiply-adds/s: a step of K is one multiply-add per output
    print(f"webgpu on {adapter.get('vendor', '')} {adapter.get('architecture', '')}")
    print(f"pe.matmul [{args.rows}, K] x [K, {args.cols}], fastest of 3 replays of 5 runs:")
    for k, ms in points:
        print(f"  K={k:<4d} {ms:7.2f} ms   line: {intercept + slope * k:7.2f}")
    print(f"  per multiply-add: {slope:.3f} ms per step of K = {rate:.2f} G multiply-adds/s")
    print(f"  per output element, besides its multiply-adds: {per_output_ns:.2f} ns ({intercept:.2f} ms in all)")
    print(f"store floor ({args.rows * args.cols} float32 stores, 16 adjacent a thread): {r['store_ms']:.2f} ms")
    print(
        f"  {store_ns:.2f} ns per element: the GEMM's per-output cost is {per_output_ns / store_ns:.1f}x a bare store"
    )
    layers, pw_out, pw_macs = r["pointwise_layers"], r["pointwise_outputs"], r["pointwise_multiply_adds"]
    predicted = (pw_macs / rate + pw_out * per_output_ns) / 1e6
    print(f"EfficientNet-Lite0: captured forward {r['forward_ms']:.0f} ms (median of 7)")
    print(
        f"  {layers} 1x1 convolutions: {pw_macs / 1e6:.0f}M of the {r['multiply_adds'] / 1e6:.0f}M multiply-adds, "
        f"{pw_out / 1e6:.2f}M outputs"
    )
    print(
        f"  the line predicts them at {predicted:.0f} ms: {pw_macs / rate / 1e6:.0f} ms of multiply-adds "
        f"+ {pw_out * per_output_ns / 1e6:.0f} ms per output (a store floor's would be {pw_out * store_ns / 1e6:.0f})"
    )
    print(f"  the whole model's multiply-adds at the slope's rate: {r['multiply_adds'] / rate / 1e6:.0f} ms")


if __name__ == "__main__":
    main()
