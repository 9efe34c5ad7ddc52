"""Per-op overhead of the engine for a tiny op, next to raw numpy measured in the same run.

    .venv/bin/python bench/op_overhead.py            # numpy backend
    .venv/bin/python bench/op_overhead.py webgpu     # webgpu backend (wgpu-py): the cost of recording a dispatch
    .venv/bin/python bench/op_overhead.py plan       # webgpu backend on a NullDevice: its Python alone, no GPU work
    .venv/bin/python bench/op_overhead.py plan --bytecodes   # Python bytecodes run per op, by function
    .venv/bin/python bench/op_overhead.py wasm       # in the page: wasm against numpy (--rounds N, --url URL)

Prints microseconds per op (best of several repeats) and the engine's overhead over numpy.
`wasm` runs where the wasm backend runs, in the playground page (Pyodide in the worker, headless Chromium), the same
cases on numpy and on wasm in turns, --rounds times (the best of all rounds counts), and prints wasm / numpy per case.
Timings are for reading, never asserted in tests. --bytecodes counts instead of timing (sys.settrace with
opcode events): the same count on every run and machine, so two versions of the engine compare exactly
(`PYTHONPATH=<other checkout>` from another folder runs the other one); what a bytecode costs is the
interpreter's business (about 20 ns in the page's Pyodide, less in CPython).
"""

import argparse
import asyncio
import collections
import sys

import numpy as np
from harness import launch, open_settled_playground, playground_server, run_python
from playwright.sync_api import sync_playwright

import py_engine as pe
from py_engine.backends.webgpu import WebGPUBackend
from py_engine.backends.webgpu.null_device import NullDevice
from py_engine.engine import ENGINE

# The cases, timed alike in CPython and in the page (`pe` and `np` predefined): {case: microseconds per op} on the
# active backend, each the best of `repeat` repeats of `number` calls (a tenth of that with the tape on)
MEASURE = """
import timeit


def per_op_us(number=20000, repeat=7):
    def best_us(fn, calls=number):
        return min(timeit.repeat(fn, number=calls, repeat=repeat)) / calls * 1e6

    a_np, b_np = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    a, b = pe.tensor(a_np), pe.tensor(b_np)
    rows = {
        "numpy add (reference)": best_us(lambda: np.add(a_np, b_np)),
        "engine a + b, then dispose": best_us(lambda: (a + b).dispose()),
        "engine a * 2.0 (scalar operand)": best_us(lambda: (a * 2.0).dispose()),
        "engine relu(a)": best_us(lambda: pe.relu(a).dispose()),
        "engine reshape view": best_us(lambda: a.reshape((2, 2)).dispose()),
        "engine tidy(lambda: a + b)": best_us(lambda: pe.tidy(lambda: a + b).dispose()),
    }
    pe.set_debug(True)
    rows["engine a + b, debug mode (sites on)"] = best_us(lambda: (a + b).dispose())
    pe.set_debug(False)
    rows["engine grad of t * b (tape on)"] = best_us(lambda: pe.grad(lambda t: t * b)(a).dispose(), number // 10)
    pe.dispose([a, b])
    return rows
"""
REFERENCE, ADD = "numpy add (reference)", "engine a + b, then dispose"  # two of MEASURE's cases


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


def wasm_in_page(args):
    """MEASURE's cases on numpy and on wasm in one playground page, in turns; prints wasm / numpy per case."""
    best = {"numpy": {}, "wasm": {}}  # the best of the rounds
    with playground_server(args.url, needs_model=False) as url, sync_playwright() as p:
        browser = launch(p)
        page, info = open_settled_playground(browser, url, "numpy")
        run_python(page, MEASURE + "\nNone")
        for _ in range(args.rounds):  # in turns, so a change of load on the machine touches both alike
            for backend, rows in best.items():
                started = page.evaluate("name => playground.setBackend(name)", backend)
                if started["backend"] != backend:
                    sys.exit(f"the page runs on {started['backend']}, not {backend}: {started['fallback_reason']}")
                for case, us in run_python(page, "per_op_us()").items():
                    rows[case] = min(us, rows.get(case, float("inf")))
        numpy_version = run_python(page, "np.__version__")
        browser.close()
    numpy_us, wasm_us = best["numpy"], best["wasm"]
    print(
        f"in the page: Pyodide {info['pyodide_version']}, numpy {numpy_version}, float32[4]; "
        f"us per op, the best of {args.rounds} rounds"
    )
    print(f"{'case':38s} {'numpy':>8s} {'wasm':>8s} {'wasm/numpy':>11s}")
    for case, us in numpy_us.items():
        print(f"{case:38s} {us:8.2f} {wasm_us[case]:8.2f} {wasm_us[case] / us:10.2f}x")
    ratio = wasm_us[ADD] / numpy_us[ADD]
    print(
        f"\nper op (a + b) on wasm: {wasm_us[ADD]:.2f} us, {ratio:.2f}x numpy's {numpy_us[ADD]:.2f} us in the page "
        "(target <= 1.2x)"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "backend",
        nargs="?",
        default="numpy",
        choices=["numpy", "webgpu", "plan", "wasm"],
        help="numpy, webgpu, plan (in CPython) or wasm (in the page, against numpy there); default numpy",
    )
    parser.add_argument("--bytecodes", action="store_true", help="count Python bytecodes per op instead (CPython)")
    parser.add_argument("--rounds", type=int, default=3, help="wasm: rounds of numpy and wasm in turns (default 3)")
    parser.add_argument("--url", help="wasm: a running playground server (default: start python -m app serve)")
    args = parser.parse_args()
    if args.backend == "wasm":
        if args.bytecodes or args.rounds < 1:
            parser.error("wasm runs in the page, where bytecodes are not counted; --rounds must be >= 1")
        wasm_in_page(args)
        return
    backend = args.backend
    if backend == "plan":  # a device that runs nothing, standing for a CPU adapter (SwiftShader's kernel variants)
        device = NullDevice("cpu")
        ENGINE.register_backend("webgpu", lambda: WebGPUBackend(device))
        backend = "webgpu"
    assert asyncio.run(pe.set_backend(backend)), pe.backend_info()["fallback_reason"]

    if args.bytecodes:
        a, b = pe.tensor(np.ones(4, np.float32)), pe.tensor(np.full(4, 2.0, np.float32))
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

    scope = {"pe": pe, "np": np}
    exec(MEASURE, scope)
    rows = scope["per_op_us"]()
    if pe.get_backend() != "numpy":
        print(f"stats after the run: {pe.stats()}")
    print(f"numpy {np.__version__}, backend {pe.get_backend()}, float32[4]")
    print(f"{'case':38s} {'us/op':>8s} {'overhead':>9s}")
    numpy_add = rows[REFERENCE]
    for name, us in rows.items():
        print(f"{name:38s} {us:8.2f} {us - numpy_add:8.2f}  ({us / numpy_add:.1f}x numpy)")
    print(f"\nper-op overhead outside autograd (a + b): {rows[ADD] - numpy_add:.2f} us (target <= 10 us)")


if __name__ == "__main__":
    main()
