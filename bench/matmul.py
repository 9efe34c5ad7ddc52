"""Matmul throughput and per-dispatch overhead of the webgpu backend, next to numpy measured in the same run.

    .venv/bin/python bench/matmul.py

Prints GFLOP/s of a 1024x1024x1024 float32 matmul on webgpu (wgpu-py; both kernel variants, picked by
flipping backend.on_cpu) and on numpy, then the cost of 1000 tiny elementwise adds when dispatches are
recorded into one command buffer versus submitted one by one, with submits per op from the backend's
stats. The GPU runs asynchronously, so every timing ends with a readback. Timings are for reading,
never asserted in tests. Runs in well under two minutes on a 2-core CPU adapter (llvmpipe).
"""

import asyncio
import time

import numpy as np

import py_engine as pe
from py_engine.engine import ENGINE

SIZE = 1024
REPEATS = 3
ADDS = 1000


def best_seconds(fn, repeats=REPEATS):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def blas_name():
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # the config layout differs between numpy builds; the name is only informative
        return "unknown BLAS"


def matmul_seconds(backend, on_cpu, a, b):
    backend.on_cpu = on_cpu
    pe.matmul(a, b).dispose()  # compile the pipeline outside the timing
    backend.flush()

    def run():
        c = pe.matmul(a, b)
        c.numpy()  # wait for the GPU
        c.dispose()

    before = backend.stats()
    seconds = best_seconds(run)
    after = backend.stats()
    per_op = [(after[k] - before[k]) / REPEATS for k in ("dispatches", "submits")]
    return seconds, backend.variants["matmul"], per_op


def adds_per_op(backend, batch_size, a, b):
    """(microseconds per add, submits per add) for ADDS dependent adds, then one readback."""
    saved, backend.batch_size = backend.batch_size, batch_size

    def run():
        out = a + b
        for _ in range(ADDS - 1):
            nxt = out + b
            out.dispose()
            out = nxt
        out.numpy()
        out.dispose()

    try:
        run()  # warm: pipeline compiled, buffers pooled
        before = backend.stats()["submits"]
        seconds = best_seconds(run)
        submits = (backend.stats()["submits"] - before) / (REPEATS * ADDS)
    finally:
        backend.batch_size = saved
    return seconds / ADDS * 1e6, submits


def main():
    rng = np.random.default_rng(0)
    a_np, b_np = rng.random((SIZE, SIZE), np.float32), rng.random((SIZE, SIZE), np.float32)
    flops = 2 * SIZE**3
    numpy_matmul = best_seconds(lambda: a_np @ b_np)
    small_a, small_b = rng.random(1024, np.float32), rng.random(1024, np.float32)
    numpy_add = best_seconds(lambda: [np.add(small_a, small_b) for _ in range(ADDS)]) / ADDS * 1e6

    if not asyncio.run(pe.set_backend("webgpu")):
        raise SystemExit(f"webgpu is not available: {ENGINE.fallback_reason}")
    backend = ENGINE.active()
    info = backend.info()
    print(
        f"adapter: {info['device'] or info['description']} ({info['adapter_type']}, {info['backend_type']}), "
        f"{info['runtime']}; backend.on_cpu = {backend.on_cpu}"
    )
    print(f"numpy {np.__version__} with {blas_name()} (its own thread count; threadpoolctl not used)\n")

    a, b = pe.tensor(a_np), pe.tensor(b_np)
    on_cpu = backend.on_cpu
    rows = []
    for flag in (True, False):
        seconds, variant, (dispatches, submits) = matmul_seconds(backend, flag, a, b)
        rows.append((f"webgpu {variant}", seconds, f"{dispatches:g} dispatch, {submits:g} submit"))
    backend.on_cpu = on_cpu
    rows.append(("numpy", numpy_matmul, ""))
    print(f"matmul {SIZE}x{SIZE}x{SIZE} float32 (best of {REPEATS}, readback included for webgpu)")
    print(f"{'':28s} {'ms':>9s} {'GFLOP/s':>9s} {'vs numpy':>9s}  per op")
    for name, seconds, per_op in rows:
        gflops = flops / seconds / 1e9
        print(f"{name:28s} {seconds * 1e3:9.1f} {gflops:9.2f} {numpy_matmul / seconds:8.3f}x  {per_op}".rstrip())
    a.dispose()
    b.dispose()

    x, y = pe.tensor(small_a), pe.tensor(small_b)
    print(f"\n{ADDS} dependent adds of float32[1024], then one readback (best of {REPEATS})")
    print(f"{'':40s} {'us/op':>8s} {'submits/op':>11s} {'vs numpy':>9s}")
    for name, batch_size in [
        ("webgpu, one submit per op", 1),
        (f"webgpu, recorded, submit every {backend.batch_size}", backend.batch_size),
        ("webgpu, recorded, one submit per 1000", ADDS),
    ]:
        us, submits = adds_per_op(backend, batch_size, x, y)
        print(f"{name:40s} {us:8.1f} {submits:11.3f} {us / numpy_add:8.1f}x")
    print(f"{'numpy np.add':40s} {numpy_add:8.2f}")
    x.dispose()
    y.dispose()


if __name__ == "__main__":
    main()
