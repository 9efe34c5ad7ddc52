"""Dispatch plans (py_engine/backends/webgpu/dispatch_plans.py): a built-in kernel's first run for a signature is
logged, later runs replay it. A replay must do exactly what running the kernel would: these tests check the
signature (what makes two calls the same), the cases that must not be replayed, and what a replay keeps."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.backends.webgpu import dispatch_plans
from py_engine.backends.webgpu.dispatch_plans import DISPATCH, FREE, SPOIL, TAKE, DispatchPlan, signature
from py_engine.backends.webgpu.gpu_array import GpuArray
from py_engine.engine import ENGINE
from py_engine.errors import ResourceExhaustedError


def counts(gpu):
    stats = gpu.stats()
    return stats["kernel_plans"], stats["kernel_plan_replays"], stats["dispatches"]


def test_the_second_call_of_a_signature_replays_the_first(gpu):
    a, b = pe.tensor([1.0, 2.0, 3.0]), pe.tensor([10.0, 20.0, 30.0])
    np.testing.assert_array_equal((a + b).numpy(), [11, 22, 33])
    assert counts(gpu) == (1, 0, 1)
    c = pe.tensor([5.0, 6.0, 7.0])
    np.testing.assert_array_equal((c + a).numpy(), [6, 8, 10])  # new buffers, the same signature
    assert counts(gpu) == (1, 1, 2)
    np.testing.assert_array_equal((a + pe.tensor([1.0, 1.0])[:1]).numpy(), [2, 3, 4])  # broadcast: a new signature
    assert counts(gpu)[:2] == (3, 1)  # the slice is a kernel too


def test_a_plan_is_written_out_as_a_function_on_its_first_replay_only(gpu):
    """Writing a plan out costs a compile: a plan never replayed (`x * lr`, lr new each step) must not pay it."""
    a, b = pe.tensor([1.0, 2.0]), pe.tensor([3.0, 4.0])
    (a * b).dispose()
    (plan,) = gpu.plans.values()
    assert plan.replay.__func__ is DispatchPlan._first_replay
    np.testing.assert_array_equal((a * b).numpy(), [3.0, 8.0])
    written = plan.replay
    assert getattr(written, "__func__", None) is None  # the function written out
    np.testing.assert_array_equal((b * a).numpy(), [3.0, 8.0])
    assert plan.replay is written and gpu.plan_replays == 2


def test_plans_of_one_structure_share_one_compiled_factory(gpu, monkeypatch):
    """Compiling costs ~1 ms in the page: the binary ops on every shape are one structure, compiled once."""
    monkeypatch.setattr(dispatch_plans, "_FACTORIES", {})
    compiled = []
    for n in (1, 5, 300):
        a, b = pe.ones((n,)), pe.ones((n,)) * 3.0  # the second fill replays the first
        for op, want in ((pe.add, 4.0), (pe.mul, 3.0), (pe.maximum, 3.0)):  # one structure
            for _ in range(2):  # logged, then replayed
                assert op(a, b).numpy()[-1] == want
        compiled.append(len(dispatch_plans._FACTORIES))
    assert gpu.plan_replays >= 9 and compiled == [2, 2, 2]  # the fill's, the binary ops'; none per shape or op


def test_a_replay_makes_the_same_results_as_the_kernel_on_every_shape_of_a_chain(gpu, rng):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    w = rng.standard_normal((7, 4)).astype(np.float32)

    def step(t):
        return pe.softmax(pe.relu(pe.matmul(t, pe.tensor(w)) * 0.5 - 0.1), -1).sum(axis=1)

    first = pe.tidy(step, pe.tensor(x)).numpy()
    replays = gpu.plan_replays
    again = pe.tidy(step, pe.tensor(x)).numpy()
    assert gpu.plan_replays > replays
    np.testing.assert_array_equal(again, first)


def test_a_replay_takes_and_frees_the_kernels_temporaries_as_it_did(gpu, rng):
    x = pe.tensor(rng.uniform(0, 1, (2, 100_000)).astype(np.float32))  # long rows: partial sums, then their sum
    want = x.numpy().astype(np.float64).sum(axis=1)
    in_use = gpu.pool.bytes_in_use
    runs = []
    for _ in range(2):
        before = counts(gpu)
        with pe.scope():
            np.testing.assert_allclose(x.sum(axis=1).numpy(), want, rtol=1e-5)
        runs.append(tuple(now - then for now, then in zip(counts(gpu), before)))
        assert gpu.pool.bytes_in_use == in_use
    assert runs == [(1, 0, 2), (0, 1, 2)]  # logged, then replayed: two dispatches each time


def test_attributes_are_part_of_the_signature_with_their_type_and_sign(gpu):
    x = pe.tensor([-2.0, 3.0])
    np.testing.assert_array_equal(pe.leaky_relu(x, 0.5).numpy(), [-1.0, 3.0])
    np.testing.assert_array_equal(pe.leaky_relu(x, 0.25).numpy(), [-0.5, 3.0])  # not the first call's alpha
    assert np.signbit(pe.leaky_relu(x, 0.0).numpy()[0])  # -2 * 0.0
    assert not np.signbit(pe.leaky_relu(x, -0.0).numpy()[0])  # -2 * -0.0: equal keys would have replayed -0.0
    assert signature(None, [], {"n": 1}) != signature(None, [], {"n": 1.0}) != signature(None, [], {"n": True})
    assert signature(None, [], {"axes": [0, 1]}) == signature(None, [], {"axes": (0, 1)})  # one list, either form


def test_inputs_sharing_a_buffer_replay_correctly_and_log_no_plan(gpu):
    a = pe.tensor([1.0, 2.0])
    np.testing.assert_array_equal((a + a).numpy(), [2.0, 4.0])
    assert counts(gpu)[:2] == (0, 0)  # one buffer for both inputs: a log could not tell them apart
    b = pe.tensor([5.0, 7.0])
    np.testing.assert_array_equal((a + b).numpy(), [6.0, 9.0])
    np.testing.assert_array_equal((b + b).numpy(), [10.0, 14.0])  # the plan binds the one buffer twice
    assert counts(gpu)[:2] == (1, 1)


def test_a_replay_records_the_variant_its_kernel_chose(gpu):
    short, long = pe.ones((4, 8)), pe.ones((2, 4096))
    short.sum(axis=1).dispose()
    assert gpu.variants["reduce"] == "per-thread"
    long.sum(axis=1).dispose()
    assert gpu.variants["reduce"] == "workgroup"
    short.sum(axis=1).dispose()  # replayed
    assert gpu.plan_replays == 1 and gpu.variants["reduce"] == "per-thread"


def test_a_plan_over_the_memory_budget_runs_its_kernel_which_names_the_op_and_gives_back_what_it_took(gpu):
    a, b = pe.ones((1 << 16,)), pe.ones((1 << 16,))
    (a * b).dispose()  # logged
    pe.set_memory_budget(ENGINE.bytes_by_backend["webgpu"] + 1000)
    try:
        in_use, replays = gpu.pool.bytes_in_use, gpu.plan_replays
        with pytest.raises(ResourceExhaustedError, match="Mul"):
            a * b
        assert gpu.plan_replays == replays and gpu.pool.bytes_in_use == in_use
    finally:
        pe.set_memory_budget(None)


def test_changing_the_adapter_kind_forgets_the_plans(gpu):
    (pe.ones((3,)) + 1.0).dispose()
    assert gpu.plans
    gpu.on_cpu = not gpu.on_cpu
    assert not gpu.plans
    gpu.on_cpu = not gpu.on_cpu


def test_users_kernels_are_run_every_time(gpu):
    """A pe.Program's dispatch function may read state that is not in the signature: it is never replayed."""
    factor = [2.0]
    scale = pe.Program(
        "PlanScale",
        "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {\n"
        "  if (g.x < arrayLength(&x)) { out[g.x] = x[g.x] * params.factor; }\n}",
        inputs=["x"],
        uniforms={"factor": "f32"},
        dispatch=lambda x: pe.Dispatch({"out": (x.shape, x.dtype)}, -(-x.size // 64), {"factor": factor[0]}),
    )
    pe.register_kernel("PlanScale", "webgpu", scale)
    try:
        x = pe.tensor([1.0, 2.0])
        np.testing.assert_array_equal(pe.run_kernel("PlanScale", [x]).numpy(), [2.0, 4.0])
        factor[0] = 3.0
        np.testing.assert_array_equal(pe.run_kernel("PlanScale", [x]).numpy(), [3.0, 6.0])
        assert gpu.plan_replays == 0
    finally:
        pe.unregister_kernel("PlanScale", "webgpu")


def test_warm_up_and_capture_neither_log_nor_replay(gpu):
    x = pe.tensor(np.ones(8, np.float32))  # an upload, not a kernel

    def double(t):
        return t * 2.0

    asyncio.run(pe.warmup(double, x))
    assert counts(gpu)[:2] == (0, 0)
    captured = pe.capture(double)
    for _ in range(3):
        np.testing.assert_array_equal(captured(x).numpy(), np.full(8, 2.0))
    captured.dispose()
    assert gpu.plan_replays == 0


def array(bid):  # what a kernel gets for a tensor
    return GpuArray(bid, (1,), "float32")


def test_a_log_that_a_replay_could_not_repeat_makes_no_plan():
    args, shader = [array(1)], object()
    take, out = (TAKE, 2, 1, (1,), "float32"), array(2)
    ok = [take, (DISPATCH, shader, [1, 2], b"", (1, 1, 1))]
    assert DispatchPlan.from_log(ok, args, out, {}).outputs == [(1, (1,), "float32", 1, 4)]  # what it took, slot 1
    assert DispatchPlan.from_log([*ok, (SPOIL,)], args, out, {}) is None  # it uploaded or read back
    assert DispatchPlan.from_log([*ok, (FREE, 1)], args, out, {}) is None  # it freed an input
    assert DispatchPlan.from_log([take, (DISPATCH, shader, [1, 9], b"", (1, 1, 1))], args, out, {}) is None
    assert DispatchPlan.from_log(ok, args, args[0], {}) is None  # it returned its input
