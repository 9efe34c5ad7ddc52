"""Per-op overhead of the engine for a tiny op, next to raw numpy measured in the same run.

    .venv/bin/python bench/op_overhead.py            # numpy backend
    .venv/bin/python bench/op_overhead.py webgpu     # webgpu backend (wgpu-py): the cost of recording a dispatch
    .venv/bin/python bench/op_overhead.py plan       # webgpu backend on a PlanDevice: its Python alone, no GPU work
    .venv/bin/python bench/op_overhead.py plan --bytecodes   # Python bytecodes run per op, by function

Prints microseconds per op (best of several repeats) and the engine's overhead over numpy.
Timings are for reading, never asserted in tests. --bytecodes counts instead of timing (sys.settrace with
opcode events): the same count on every run and machine, so two versions of the engine compare exactly
(`PYTHONPATH=<other checkout>` from another folder runs the other one); what a bytecode costs is the
interpreter's business (about 20 ns in the page's Pyodide, less in CPython).
"""

import asyncio
import collections
import sys
import timeit

import numpy as np

import py_engine as pe
from py_engine.backends.webgpu import WebGPUBackend
from py_engine.backends.webgpu.plan_device import PlanDevice
from py_engine.engine import ENGINE


def best_us(fn, number=20000, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def bytecodes_per_op(fn, runs=64):
    """(total, {function: count}) of Python bytecodes one call of fn runs, averaged over `runs` warm calls."""
    for _ in range(100):  # plans logged, pools filled
        fn()
    counts = collections.Counter()

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[f"{code.co_filename.rpartition('py_engine/')[2]}:{code.co_name}"] += 1
        return trace

    sys.settrace(trace)
    try:
        for _ in range(runs):
            fn()
    finally:
        sys.settrace(None)
    return sum(counts.values()) / runs, {name: n / runs for name, n in counts.most_common(12)}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    backend = args[0] if args else "numpy"
    if backend == "plan":  # a device that runs nothing, standing for a CPU adapter (SwiftShader's kernel variants)
        device = PlanDevice("cpu")
        ENGINE.register_backend("webgpu", lambda: WebGPUBackend(device))
        backend = "webgpu"
    assert asyncio.run(pe.set_backend(backend)), pe.backend_info()["fallback_reason"]
    a_np, b_np = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    a, b = pe.tensor(a_np), pe.tensor(b_np)

    if "--bytecodes" in sys.argv:
        cases = {
            "a + b, then dispose": lambda: (a + b).dispose(),
            "a * 2.0": lambda: (a * 2.0).dispose(),
            "relu(a)": lambda: pe.relu(a).dispose(),
            "tidy(lambda: a + b)": lambda: pe.tidy(lambda: a + b).dispose(),
        }
        print(f"backend {pe.get_backend()}, float32[4]: Python bytecodes per op")
        for name, fn in cases.items():
            total, top = bytecodes_per_op(fn)
            print(f"\n{name:24s} {total:7.1f}")
            for where, n in top.items():
                print(f"    {n:7.1f}  {where}")
        return

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
