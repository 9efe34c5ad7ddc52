"""The conformance suite: every op, run on a backend and compared with the numpy backend.

Written once, used by pytest (tests/test_conformance.py) and inside the browser, where
`await run_suite("webgpu")` returns a report. A case is a function of tensors plus the numpy
inputs to make them from; the runner makes the inputs on each backend, runs the case there inside
a scope, and compares the results within float32 tolerance.
"""

import asyncio
import traceback

import numpy as np

from ... import ENGINE, set_backend
from ...ops import tensor
from . import creation, fused, image, indexing, linalg, math, nn, recurrent, reduce, sequence, shape
from .case import Case

SUITES = {
    m.__name__.rsplit(".", 1)[-1]: m.CASES
    for m in (math, creation, reduce, linalg, shape, indexing, nn, image, fused, recurrent, sequence)
}


def all_cases():
    return [case for cases in SUITES.values() for case in cases]


def run_on(case, backend):
    """The case's outputs as numpy arrays, computed on `backend` (which must be active)."""
    with ENGINE.scope():
        inputs = [tensor(a) for a in case.inputs]
        out = case.fn(*inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for t in outs:
            if t._buf.backend.name != backend:
                raise AssertionError(f"{case.id}: the result was computed on {t._buf.backend.name}, not {backend}")
        return [t.numpy() for t in outs]


def compare(case, got, want):
    """None if the results agree, else a message saying where they differ."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k}: {g.dtype}{g.shape}, expected {w.dtype}{w.shape}"
        exact = g.dtype != np.float32
        ok = (g == w) if exact else np.isclose(g, w, rtol=case.rtol, atol=case.atol, equal_nan=True)
        if not ok.all():
            bad = tuple(int(i) for i in np.argwhere(~ok)[0])
            return (
                f"output {k} differs at {bad}: got {g[bad]}, expected {w[bad]} ({int((~ok).sum())} of {ok.size} differ)"
            )
    return None


async def check_case(case, backend):
    """None if `case` on `backend` matches numpy, else the failure message."""
    await set_backend("numpy")
    want = run_on(case, "numpy")
    if not await set_backend(backend):
        raise RuntimeError(f"backend {backend!r} is not available: {ENGINE.fallback_reason}")
    try:
        # the second run replays the dispatch plans the first one logged (backends/webgpu/dispatch_plans.py)
        return compare(case, run_on(case, backend), want) or compare(case, run_on(case, backend), want)
    except Exception:
        return traceback.format_exc(limit=3)


async def run_suite(backend, cases=None):
    """Run every case (or `cases`) on `backend`; returns {"passed": n, "failed": {case id: message}}."""
    failed, previous = {}, ENGINE.active().name
    try:
        for case in cases or all_cases():
            message = await check_case(case, backend)
            if message:
                failed[case.id] = message
            await asyncio.sleep(0)
    finally:
        await set_backend(previous)
    total = len(cases or all_cases())
    return {"passed": total - len(failed), "failed": failed}


__all__ = ["SUITES", "Case", "all_cases", "check_case", "compare", "run_on", "run_suite"]
