"""Random op programs inside tidy / scope / async scope: memory returns to baseline, values match numpy."""

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import py_engine as pe

UNARY = {
    "neg": (pe.neg, np.negative),
    "tanh": (pe.tanh, np.tanh),
    "square": (pe.square, np.square),
    "relu": (pe.relu, lambda a: np.maximum(a, 0)),
    "view": (lambda t: t.reshape((-1,)).reshape(t.shape), lambda a: a),
    "expand_squeeze": (lambda t: pe.squeeze(pe.expand_dims(t, 0), 0), lambda a: a),
    "sum_keepdims": (lambda t: t.sum(0, keepdims=True), lambda a: a.sum(0, keepdims=True)),
}
BINARY = {
    "add": (pe.add, np.add),
    "sub": (pe.sub, np.subtract),
    "mul": (pe.mul, np.multiply),
    "maximum": (pe.maximum, np.maximum),
}

index = st.integers(0, 1000)
step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), index),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), index, index),
    st.tuples(st.just("scalar"), st.sampled_from(sorted(BINARY)), index, st.floats(-2, 2, width=32)),
    st.tuples(st.just("keep"), index),
    st.tuples(st.just("dispose"), index),
    st.tuples(st.just("nested"), st.sampled_from(sorted(UNARY)), index),
)
program = st.lists(step, min_size=1, max_size=25)


def run_steps(steps, pool, shadow, kept):
    """Apply steps to tensors (pool) and numpy arrays (shadow) side by side."""
    for s in steps:
        kind = s[0]
        if kind == "unary":
            f, ref = UNARY[s[1]]
            i = s[2] % len(pool)
            pool.append(f(pool[i]))
            shadow.append(ref(shadow[i]))
        elif kind == "binary":
            f, ref = BINARY[s[1]]
            i, j = s[2] % len(pool), s[3] % len(pool)
            pool.append(f(pool[i], pool[j]))
            shadow.append(ref(shadow[i], shadow[j]))
        elif kind == "scalar":
            f, ref = BINARY[s[1]]
            i = s[2] % len(pool)
            pool.append(f(pool[i], s[3]))
            shadow.append(ref(shadow[i], np.float32(s[3])).astype(np.float32))
        elif kind == "keep":
            kept.append(pe.keep(pool[s[1] % len(pool)]))
        elif kind == "dispose" and len(pool) > 1:
            i = 1 + s[1] % (len(pool) - 1)  # pool[0] is the caller's input
            if not any(pool[i] is k for k in kept):
                pool.pop(i).dispose()
                shadow.pop(i)
        elif kind == "nested":
            f, ref = UNARY[s[1]]
            i = s[2] % len(pool)
            pool.append(pe.tidy(lambda t=pool[i], f=f: f(t) + 1.0))
            shadow.append(ref(shadow[i]) + np.float32(1))


def survivors_memory(tensors):
    buffers = {id(t._buf): t._buf.nbytes for t in tensors}
    return len({t.id for t in tensors}), len(buffers), sum(buffers.values())


@pytest.mark.usefixtures("each_backend")
@settings(max_examples=150, deadline=None)
@given(program, st.sampled_from(["tidy", "scope", "async_scope"]), st.integers(1, 3))
def test_random_programs_return_memory_to_baseline(steps, mode, n_results):
    start = np.arange(6, dtype=np.float32).reshape(2, 3) / 3 - 1
    x = pe.tensor(start)
    baseline = pe.memory()
    kept, shadow = [], []

    def body():
        pool = [x]
        shadow[:] = [start]
        run_steps(steps, pool, shadow, kept)
        return pool[-n_results:], shadow[-n_results:]

    if mode == "tidy":
        results, expected = pe.tidy(body)
    elif mode == "scope":
        with pe.scope() as s:
            results, expected = body()
            s.export(results)
    else:

        async def main():
            with pe.scope() as s:
                await asyncio.sleep(0)
                out = body()
                await asyncio.sleep(0)
                s.export(out[0])
                return out

        results, expected = asyncio.run(main())

    survivors = [x, *results, *kept]
    m = pe.memory()
    assert (m.num_tensors, m.num_data_buffers, m.num_bytes) == survivors_memory(survivors)
    for t, ref in zip(results, expected):
        np.testing.assert_allclose(t.numpy(), ref, rtol=1e-5, atol=1e-6)
    assert not x.is_disposed
    pe.dispose(survivors)
    m = pe.memory()
    assert (m.num_tensors, m.num_data_buffers, m.num_bytes) == (
        baseline.num_tensors - 1,
        baseline.num_data_buffers - 1,
        baseline.num_bytes - x.size * 4,
    )
