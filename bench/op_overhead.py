"""Per-op overhead of the engine for a tiny op, next to raw numpy measured in the same run.

    .venv/bin/python bench/op_overhead.py            # numpy backend
    .venv/bin/python bench/op_overhead.py webgpu     # webgpu backend (wgpu-py): the cost of recording a dispatch
    .venv/bin/python bench/op_overhead.py plan       # webgpu backend on a PlanDevice: its Python alone, no GPU work

Prints microseconds per op (best of several repeats) and the engine's overhead over numpy.
Timings are for reading, never asserted in tests.
"""

import asyncio
import sys
import timeit

import numpy as np

import py_engine as pe
from py_engine.backends.webgpu import WebGPUBackend
from py_engine.backends.webgpu.plan_device import PlanDevice
from py_engine.engine import ENGINE


def best_us(fn, number=20000, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "numpy"
    if backend == "plan":  # a device that runs nothing, standing for a CPU adapter (SwiftShader's kernel variants)
        device = PlanDevice("cpu")
        ENGINE.register_backend("webgpu", lambda: WebGPUBackend(device))
        backend = "webgpu"
    assert asyncio.run(pe.set_backend(backend)), pe.backend_info()["fallback_reason"]
    a_np, b_np = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    a, b = pe.tensor(a_np), pe.tensor(b_np)

    numpy_add = best_us(lambda: np.add(a_np, b_np))
    engine_add = best_us(lambda: (a + b).dispose())
    engine_scalar = best_us(lambda: (a * 2.0).dispose())
    engine_relu = best_us(lambda: pe.relu(a).dispose())
    engine_view = best_us(lambda: a.reshape((2, 2)).dispose())

    pe.set_debug(True)
    engine_debug = best_us(lambda: (a + b).dispose())
    pe.set_debug(False)

    def tidy_add():
        pe.tidy(lambda: a + b).dispose()

    engine_tidy = best_us(tidy_add)

    def taped():
        pe.grad(lambda t: t * b)(a).dispose()

    engine_grad = best_us(taped, number=2000)

    if pe.get_backend() != "numpy":
        print(f"stats after the run: {pe.stats()}")
    print(f"numpy {np.__version__}, backend {pe.get_backend()}, float32[4]")
    print(f"{'case':38s} {'us/op':>8s} {'overhead':>9s}")
    rows = [
        ("numpy add (reference)", numpy_add),
        ("engine a + b, then dispose", engine_add),
        ("engine a * 2.0 (scalar operand)", engine_scalar),
        ("engine relu(a)", engine_relu),
        ("engine reshape view", engine_view),
        ("engine tidy(lambda: a + b)", engine_tidy),
        ("engine a + b, debug mode (sites on)", engine_debug),
        ("engine grad of t * b (tape on)", engine_grad),
    ]
    for name, us in rows:
        print(f"{name:38s} {us:8.2f} {us - numpy_add:8.2f}  ({us / numpy_add:.1f}x numpy)")
    print(f"\nper-op overhead outside autograd (a + b): {engine_add - numpy_add:.2f} us (target <= 10 us)")


if __name__ == "__main__":
    main()
