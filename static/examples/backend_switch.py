# Switch backends and warm up: the same code on numpy, on wasm (our SIMD kernels) and on webgpu. pe.warmup compiles
# the GPU pipelines a function needs ahead of time, so its first real run compiles none (the counter stays put).
import time


def step(x, w):
    return pe.relu(x @ w).mean(axis=0)


original = pe.get_backend()
result = {}
for backend in ["numpy", "wasm", "webgpu"]:
    if not await pe.set_backend(backend):
        print(f"{backend} is not available here:", pe.backend_info()["fallback_reason"])
        continue
    with pe.scope():
        x, w = pe.random_normal((64, 128), seed=1), pe.random_normal((128, 32), seed=2)
        compiled = await pe.warmup(step, x, w)  # 0 on numpy and wasm: nothing to compile
        before = pe.stats().get("pipeline_compiles", 0)
        began = time.perf_counter()
        values = await step(x, w).data()
        result[backend] = {
            "warmup_compiled": compiled,
            "compiled_by_the_run": pe.stats().get("pipeline_compiles", 0) - before,
            "ms": round((time.perf_counter() - began) * 1e3, 1),
            "sum": round(float(values.sum()), 3),
        }
    print(backend, result[backend])
await pe.set_backend(original)  # back to the page's backend (the Backend menu)
result
