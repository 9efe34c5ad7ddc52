"""The Python side of the playground's worker (static/worker.js loads it as the module `playground`).

Starts the engine, turns results into JSON-able data for the page, reports memory and stats.
Tensors in results are read with `await t.data()`, so converting never needs a synchronous readback.
"""

import dataclasses
import time

import numpy as np

import py_engine as pe

# The namespace of the page's runPython code: one per worker, kept between runs.
USER_GLOBALS = {"__name__": "__main__", "pe": pe, "py_engine": pe, "np": np}


def backend_info():
    info = pe.backend_info()
    adapter = None
    if pe.ENGINE.active().is_gpu:
        adapter = {k: info.get(k, "") for k in ("vendor", "architecture", "device", "description", "adapter_type")}
    return {"backend": info["name"], "adapter": adapter, "fallback_reason": info["fallback_reason"], "details": info}


async def first_op():
    with pe.scope():  # on a GPU: compiles two pipelines, records, submits and reads back
        await (pe.ones((8,)) * 2.0).sum().data()


async def start(backend):
    """Make `backend` active and time a first small op on it; numpy, with the reason, if either fails."""
    began = time.perf_counter()
    await pe.set_backend(backend)
    started = time.perf_counter()
    try:
        await first_op()
    except Exception as e:
        if pe.get_backend() == "numpy":
            raise
        failed = pe.get_backend()
        await pe.set_backend("numpy")
        pe.ENGINE.fallback_reason = f"backend {failed!r} failed its first op: {type(e).__name__}: {str(e)[:2000]}"
        await first_op()
    done = time.perf_counter()
    return {**backend_info(), "backend_start_ms": (started - began) * 1e3, "warmup_ms": (done - started) * 1e3}


async def to_jsonable(value):
    """`value` as None/bool/int/float/str/list/dict; tensors and arrays become {shape, dtype, values}."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, pe.Tensor):
        out = {"shape": list(value.shape), "dtype": str(value.dtype)}
        if value.is_disposed:
            return {**out, "disposed": True}
        return {**out, "values": (await value.data()).reshape(value.shape).tolist()}
    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": str(value.dtype), "values": value.tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): await to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [await to_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return await to_jsonable(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return await to_jsonable(dataclasses.asdict(value))
    return repr(value)


def memory():
    return pe.memory().to_dict()


def stats():
    return pe.stats()
