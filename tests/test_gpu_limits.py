"""GPU memory that cannot be poisoned (webgpu through wgpu-py): allocations over the device's limits or the
memory budget are refused by the op that asked, a kernel that raises gives back every buffer it took, a
dispatch the device would refuse at submit is refused when it is recorded, and a device out of memory gets
the pool's unused buffers back before the op gives up."""

import asyncio
import re
from pathlib import Path

import numpy as np
import pytest
import wgpu

import py_engine as pe
from py_engine.backends.webgpu.buffer_pool import BufferPool, size_class
from py_engine.backends.webgpu.limits import (
    ADAPTER_MAXIMA,
    MAX_ELEMENTS,
    WEBGPU_DEFAULT_LIMITS,
    AllocationLimits,
    required_limits,
)
from py_engine.backends.webgpu.shader_layout import compose_linear_shader, compose_shader
from py_engine.backends.webgpu.wgsl import linear_groups
from py_engine.backends.webgpu.workgroup_memory import workgroup_bytes
from py_engine.engine import ENGINE
from py_engine.errors import ResourceExhaustedError


@pytest.fixture
def gpu():
    """A webgpu backend with a pipeline cache of its own (so compiles happen in the test) and no budget."""
    ENGINE.forget_backend("webgpu")
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    yield ENGINE.backend
    ENGINE.set_memory_budget(None)


def counters(backend):
    """Everything a failed op must leave as it found: the pool's counters and the engine's memory(), once the
    pool gave its spare buffers back (a buffer an op lost would stay counted as allocated)."""
    backend.release_pool()
    return backend.pool.bytes_in_use, backend.pool.bytes_allocated, pe.memory().to_dict()


# ---- the device's limits ---------------------------------------------------------------------


def test_a_tensor_of_2_to_the_31_elements_is_refused_and_leaves_the_pool_as_it_was(gpu):
    x = pe.ones((1000,))
    before = counters(gpu)
    for _ in range(3):  # each try used to leave 8 GiB counted in the pool, out of release_pool's reach
        with pytest.raises(ResourceExhaustedError) as caught:
            pe.zeros((1 << 31,))
        assert counters(gpu) == before
    message = str(caught.value)
    for part in ["Fill", "(2147483648,)", "8589934592 bytes", f"{gpu.limits.max_bytes} bytes", "numpy", "batch"]:
        assert part in message, f"{part!r} is not in: {message}"
    assert (x + 1.0).numpy()[:2].tolist() == [2.0, 2.0]  # the device still works


def test_a_tensor_over_the_largest_buffer_is_refused_at_creation_and_poisons_nothing(gpu):
    largest = gpu.limits.max_bytes // 4  # elements in the largest buffer the device can bind
    before = counters(gpu)
    with pytest.raises(ResourceExhaustedError, match=rf"upload to the GPU: .*\({largest + 1},\).*over this GPU's"):
        pe.tensor(np.zeros(largest + 1, np.float32))
    with pytest.raises(ResourceExhaustedError, match=rf"Fill: a bool tensor of shape \(2, {largest // 2 + 1}\)"):
        pe.ones((2, largest // 2 + 1), "bool")
    assert counters(gpu) == before
    assert (pe.tensor([1.0, 2.0]) * 3.0).tolist() == [3.0, 6.0]  # no later op pays for the refused ones
    exactly = pe.fill((largest,), 2.0)  # the limit itself fits
    assert exactly[-2:].tolist() == [2.0, 2.0]


def test_element_counts_past_the_shaders_i32_are_refused_even_where_the_buffer_would_fit():
    limits = AllocationLimits({"max_buffer_size": 1 << 40, "max_storage_buffer_binding_size": 1 << 40})
    assert limits.fits(MAX_ELEMENTS) and not limits.fits(MAX_ELEMENTS + 1)
    message = str(limits.too_large("Fill", (MAX_ELEMENTS + 1,), "float32", MAX_ELEMENTS + 1))
    assert "32-bit signed indices" in message and "Fill" in message
    small = AllocationLimits({"max_buffer_size": 1002, "max_storage_buffer_binding_size": 4096})
    assert small.max_bytes == 1000 and small.limit_name == "maxBufferSize"  # whole words, the smaller limit


def test_no_size_class_rounds_past_the_largest_buffer(gpu):
    pool = BufferPool(gpu.device, max_bytes=1000)
    assert size_class(900) == 1024
    bid, created = pool.acquire(900)
    assert created and pool.size_of[bid] == 900 and gpu.device.native_buffer(bid).size == 900
    pool.release(bid)
    pool.submitted()
    assert pool.acquire(899) == (bid, False)  # 899 bytes round to the same whole-word class
    pool.release(bid)
    pool.submitted()
    pool.release_free()
    assert pool.bytes_allocated == pool.bytes_in_use == 0


# ---- a kernel that raises gives back what it took --------------------------------------------


class InjectedFault(RuntimeError):
    pass


def inject(monkeypatch, obj, method, nth, after=False):
    """The nth call of obj.method raises InjectedFault (after the real call when `after`); returns the call log."""
    real, calls = getattr(obj, method), []

    def faulty(*args, **kwargs):
        calls.append(args)
        if len(calls) == nth and not after:
            raise InjectedFault(f"{method} #{nth}")
        result = real(*args, **kwargs)
        if len(calls) == nth:
            raise InjectedFault(f"{method} #{nth}, after it ran")
        return result

    monkeypatch.setattr(obj, method, faulty)
    return calls


def large_sum(x):
    return pe.sum(x, 0)  # 300 000 rows: partial sums in temporaries, reduced in several passes


def max_pool_grad(x):
    return pe.grad(lambda t: pe.max_pool(t, 3, 2, "same"))(x)  # a temporary buffer of choices, then dx


OPS = {  # op -> (fn, input shape, how many calls of each step it makes at least)
    "add": (lambda x: x + 2.0, (70, 9), 1),
    "sum-passes": (large_sum, (300_000,), 2),
    "max-pool-grad": (max_pool_grad, (2, 9, 7, 3), 3),
}
# where the fault is injected: (the object, its method, raise after the real call)
STEPS = {
    "after-outputs-are-taken": ("backend", "empty", True),
    "pipeline-creation": ("device", "compile", False),
    "dispatch": ("device", "dispatch", False),
}


@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize(("op", "nth"), [(op, nth) for op, (_, _, calls) in OPS.items() for nth in range(1, calls + 1)])
def test_a_fault_at_any_step_of_a_dispatch_gives_every_buffer_back(gpu, monkeypatch, op, nth, step):
    fn, shape, _ = OPS[op]
    host = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    asyncio.run(pe.set_backend("numpy"))
    expected = pe.tidy(lambda: fn(pe.tensor(host))).numpy()
    asyncio.run(pe.set_backend("webgpu"))  # the fixture's backend: nothing compiled yet, so every step happens
    x = pe.tensor(host)
    before = counters(gpu)
    where, method, after = STEPS[step]
    calls = inject(monkeypatch, gpu if where == "backend" else gpu.device, method, nth, after)
    with pytest.raises(InjectedFault):
        pe.tidy(lambda: fn(x))
    assert counters(gpu) == before, f"{op} lost buffers after a fault at {step} #{nth}"
    monkeypatch.undo()
    assert len(calls) == nth
    assert np.allclose(pe.tidy(lambda: fn(x)).numpy(), expected, atol=1e-4)  # nothing was poisoned


@pytest.fixture
def kernel(gpu):
    """Register a webgpu kernel for the test under a name of its own; unregistered at the end."""
    names = []

    def register(name, fn):
        pe.register_kernel(name, "webgpu", fn)
        names.append(name)
        return lambda *inputs, **attrs: ENGINE.run_kernel(name, inputs, attrs)

    yield register
    for name in names:
        pe.unregister_kernel(name, "webgpu")


FILL_ONES = compose_linear_shader("TestFillOnes", "  out[i] = 1.0;", outputs=[("out", "float32")])


def two_steps_then(backend, x, last_step):
    """A kernel's shape: a temporary filled and freed, an output taken, then `last_step` on the output."""
    temp = backend.empty((4000,), "float32")
    backend.dispatch(FILL_ONES, [temp], {"count": temp.size}, linear_groups(temp.size))
    backend.free(temp)
    out = backend.empty(x.shape, x.dtype)
    last_step(backend, out)
    return out


def bad_uniform(backend, out):
    backend.dispatch(FILL_ONES, [out], {"count": 1 << 40}, linear_groups(out.size))


def bad_shader(backend, out):
    broken = compose_shader("TestBroken", "fn main( {", outputs=[("out", "float32")], uniforms={"count": "u32"})
    backend.dispatch(broken, [out], {"count": out.size}, linear_groups(out.size))


def too_many_workgroups(backend, out):
    backend.dispatch(FILL_ONES, [out], {"count": out.size}, (backend.max_workgroups + 1, 1, 1))


def missing_binding(backend, out):
    backend.dispatch(FILL_ONES, [], {"count": out.size}, linear_groups(out.size))


def output_bound_as_input(backend, out):
    shader = compose_linear_shader("TestInPlace", "", [("a", "float32")], [("out", "float32")])
    backend.dispatch(shader, [out, out], {"count": out.size}, linear_groups(out.size))


FAULTS = {
    "uniform-does-not-fit": (
        bad_uniform,
        ValueError,
        r"TestFillOnes: uniform 'count' = 1099511627776 is out of the u32 range",
    ),
    "shader-does-not-compile": (bad_shader, pe.KernelCompileError, "expected identifier"),
    "workgroups-over-the-limit": (too_many_workgroups, ValueError, r"maxComputeWorkgroupsPerDimension"),
    "binding-missing": (missing_binding, ValueError, r"0 buffers for 0 inputs and 1 outputs"),
    "output-bound-as-input": (output_bound_as_input, ValueError, r"an output is also bound as an input"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_real_failure_is_raised_by_the_op_that_caused_it_and_loses_no_buffer(gpu, kernel, fault):
    last_step, error, message = FAULTS[fault]
    run = kernel("TestTwoSteps", lambda backend, x: two_steps_then(backend, x, last_step))
    x = pe.ones((300,))
    before = counters(gpu)
    with pytest.raises(error, match=message) as caught:
        run(x)
    if error is pe.KernelCompileError:  # the compiler's error names the shader that failed
        assert "kernel 'TestBroken'" in str(caught.value)
    assert counters(gpu) == before
    assert (x * 2.0).tolist()[:2] == [2.0, 2.0]  # the next submit carries no invalid command


def test_a_failed_op_does_not_grow_the_pool(gpu, kernel):
    """What the pool created for an op that failed goes back to the device; what it reused, back to the pool."""

    def take_then_fail(backend, x):
        backend.empty((77_777,), "float32")  # a size nothing else uses: created for this op
        backend.empty(x.shape, x.dtype)  # reused: x * 2.0 below freed one of this size into the pool
        raise InjectedFault("after two outputs were taken")

    run = kernel("TestTakeThenFail", take_then_fail)
    x = pe.ones((300,))
    (x * 2.0).dispose()
    gpu.flush()
    before = gpu.pool.bytes_in_use, gpu.pool.bytes_allocated, gpu.pool.reused
    with pytest.raises(InjectedFault):
        run(x)
    gpu.flush()
    assert (gpu.pool.bytes_in_use, gpu.pool.bytes_allocated) == before[:2]
    assert gpu.pool.reused == before[2] + 1


# ---- the device runs out of memory -----------------------------------------------------------


def test_out_of_memory_gives_the_pools_unused_buffers_back_and_tries_once_more(gpu, monkeypatch):
    pe.tidy(lambda: [pe.ones((5000,)) + 1.0, pe.ones((9000,))])  # freed into the pool
    gpu.flush()
    spare = gpu.pool.bytes_allocated - gpu.pool.bytes_in_use
    assert spare > 0
    attempts = inject_out_of_memory(monkeypatch, gpu.device, times=1)
    y = pe.ones((20_000,))  # a size the pool has no buffer for
    assert len(attempts) == 2 and y.numpy()[-1] == 1.0
    assert gpu.pool.bytes_allocated == gpu.pool.bytes_in_use  # the spare buffers went back to the device


def test_a_replayed_kernel_plan_out_of_memory_also_empties_the_pool_and_tries_once_more(gpu, monkeypatch):
    a, b = pe.ones((20_000,)), pe.ones((20_000,)) * 2.0
    first = a * b  # logged, and kept: the replay's output needs a new buffer
    pe.tidy(lambda: [pe.ones((5000,)) + 1.0, pe.ones((9000,))])  # freed into the pool
    gpu.flush()
    replays = gpu.plan_replays
    attempts = inject_out_of_memory(monkeypatch, gpu.device, times=1)
    second = a * b
    assert gpu.plan_replays == replays + 1 and len(attempts) == 2
    assert second.numpy()[-1] == first.numpy()[-1] == 2.0
    assert gpu.pool.bytes_allocated == gpu.pool.bytes_in_use  # the spare buffers went back to the device


def test_out_of_memory_twice_is_a_clear_error_that_allocates_nothing(gpu, monkeypatch):
    x = pe.ones((100,))
    before = counters(gpu)
    attempts = inject_out_of_memory(monkeypatch, gpu.device, times=2)
    with pytest.raises(ResourceExhaustedError, match=r"Fill: .*\(20000,\).*out of memory even after the buffer pool"):
        pe.ones((20_000,))
    assert len(attempts) == 2
    assert counters(gpu)[0] == before[0] and pe.memory().num_tensors == 1
    assert (x + 1.0).numpy()[0] == 2.0


def inject_out_of_memory(monkeypatch, device, times):
    """The device's next `times` buffer creations fail as wgpu fails when the GPU is out of memory."""
    real, attempts = device.create_buffer, []

    def create_buffer(nbytes):
        attempts.append(nbytes)
        if len(attempts) <= times:
            raise wgpu.GPUOutOfMemoryError(f"Out of memory creating a buffer of {nbytes} bytes")
        return real(nbytes)

    monkeypatch.setattr(device, "create_buffer", create_buffer)
    return attempts


# ---- the memory budget -----------------------------------------------------------------------


def test_the_budget_stops_a_runaway_loop_with_a_message(gpu):
    x = pe.ones((1000,))  # 4000 bytes
    ENGINE.set_memory_budget(40_000)
    kept = []
    with pytest.raises(ResourceExhaustedError) as caught:
        for _ in range(100):  # a loop that keeps every result
            kept.append(x * x)
    assert len(kept) == 9  # x and nine results make 40 000 bytes; the tenth result would pass the budget
    message = str(caught.value)
    for part in [
        "Mul",
        "(1000,)",
        "4000 bytes",
        "40000 bytes (39.1 KiB) of GPU memory are in use",
        "budget is 40000 bytes",
        "pe.dispose",
    ]:
        assert part in message, f"{part!r} is not in: {message}"
    assert pe.memory().num_bytes_in_gpu == 40_000
    pe.dispose(kept)
    assert (x * x).numpy()[0] == 1.0  # under the budget again


def test_the_budget_counts_what_an_op_takes_before_it_returns(gpu):
    x = pe.tensor(np.ones(300_000, np.float32))  # 1.2 MB; its sum takes temporaries for the partial sums
    ENGINE.set_memory_budget(x.size * 4 + 4)  # room for the result, none for the temporaries
    before = counters(gpu)
    with pytest.raises(ResourceExhaustedError, match=r"Sum: a float32 tensor of shape \(1, \d+\)"):
        pe.sum(x)
    assert counters(gpu) == before
    ENGINE.set_memory_budget(None)
    assert pe.sum(x).item() == 300_000.0


def test_the_budget_counts_an_ops_temporaries_and_outputs_together(gpu, kernel):
    def temp_then_output(backend, x):
        temp = backend.empty(x.shape, x.dtype)
        out = backend.empty(x.shape, x.dtype)
        backend.free(temp)
        temp = backend.empty(x.shape, x.dtype)  # in the room the first temporary left
        backend.free(temp)
        return out

    run = kernel("TestTempThenOutput", temp_then_output)
    x = pe.ones((1000,))
    ENGINE.set_memory_budget(4000 + 2 * 4000 - 1)  # x, then the op holds two buffers of 4000 bytes at most
    with pytest.raises(ResourceExhaustedError, match=r"TestTempThenOutput: .* 8000 bytes .* in use"):
        run(x)
    ENGINE.set_memory_budget(4000 + 2 * 4000)
    assert run(x).shape == (1000,)


def test_the_budget_refuses_uploads_and_moves_to_the_gpu(gpu):
    asyncio.run(pe.set_backend("numpy"))
    on_numpy = pe.ones((2000,))
    asyncio.run(pe.set_backend("webgpu"))
    ENGINE.set_memory_budget(4000)
    refused = r"upload to the GPU: a float32 tensor of shape \(2000,\) needs 8000 bytes"
    with pytest.raises(ResourceExhaustedError, match=refused):
        pe.tensor(np.zeros(2000, np.float32))
    with pytest.raises(ResourceExhaustedError, match=refused):
        on_numpy + 1.0  # the tensor would move to the GPU first
    assert on_numpy.numpy()[0] == 1.0 and pe.memory().num_bytes_in_gpu == 0


def test_numpy_ignores_the_budget():
    ENGINE.set_memory_budget(0)
    try:
        assert pe.get_backend() == "numpy"
        assert (pe.ones((1000,)) + 1.0).numpy()[0] == 2.0
    finally:
        ENGINE.set_memory_budget(None)


def test_the_budget_is_a_byte_count_or_none():
    for bad in [-1, 1.5, "1GB"]:
        with pytest.raises(ValueError, match="number of bytes >= 0 or None"):
            ENGINE.set_memory_budget(bad)
    assert ENGINE.memory_budget is None


# ---- a browser's limits: what runs here runs in the page --------------------------------------------------------


def test_the_device_has_the_limits_a_browser_gives(gpu):
    """WebGPU's defaults for what a kernel may use (wgpu-py would give the adapter's own: 1024 threads and 32 KiB of
    workgroup memory on llvmpipe), the adapter's maxima for buffer sizes, as static/worker/gpu_device.js asks in the page."""
    limits, adapter = gpu.device.limits, gpu.device.adapter.limits
    for name, default in WEBGPU_DEFAULT_LIMITS.items():
        assert limits[name.replace("-", "_")] == (adapter[name] if name in ADAPTER_MAXIMA else default), name


def test_the_page_asks_for_the_same_limits():
    """The page's device (static/worker/gpu_device.js) asks for ADAPTER_MAXIMA and nothing else, so every other limit is the browser's default there too."""
    source = (Path(__file__).resolve().parent.parent / "static" / "worker" / "gpu_device.js").read_text()
    asked = re.search(r"for \(const name of \[([^\]]*)\]\) \{\s*requiredLimits\[name\]", source)[1]
    camel = [re.sub(r"-(\w)", lambda m: m[1].upper(), name) for name in ADAPTER_MAXIMA]
    assert re.findall(r'"(\w+)"', asked) == camel


def workgroup_program(name, size, workgroup_floats):
    source = f"""
var<workgroup> scratch: array<f32, {workgroup_floats}>;
@compute @workgroup_size({size})
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(local_invocation_index) i: u32) {{
  scratch[i] = 1.0;
  workgroupBarrier();
  if (id.x < params.n) {{ out[id.x] = scratch[i] + x[id.x]; }}
}}"""
    return pe.Program(
        name,
        source,
        inputs=["x"],
        uniforms={"n": "u32"},
        dispatch=lambda x: pe.Dispatch({"out": (x.shape, "float32")}, -(-x.size // size), {"n": x.size}),
    )


@pytest.mark.parametrize(
    ("size", "workgroup_floats", "error"),
    [
        (1024, 1024, r"workgroup size \[1024, 1, 1\].*max_compute_invocations_per_workgroup` of 256"),
        (512, 512, r"workgroup size \[512, 1, 1\]"),
        (
            64,
            8192,
            r"var<workgroup> variables take 32768 bytes.*over the 16384 bytes of maxComputeWorkgroupStorageSize",
        ),
        (256, 4097, r"take 16400 bytes"),
        (256, 4096, None),  # the limits themselves fit
    ],
)
def test_a_kernel_past_a_browsers_limits_fails_here_as_in_the_page(kernel, size, workgroup_floats, error):
    name = f"Workgroup{size}x{workgroup_floats}"
    run = kernel(name, workgroup_program(name, size, workgroup_floats))
    x = pe.tensor(np.arange(300, dtype=np.float32))
    before = pe.memory().num_tensors
    if error is None:
        assert run(x).numpy().tolist() == (np.arange(300) + 1.0).tolist()
        return
    with pytest.raises(pe.KernelCompileError, match=rf"(?s)kernel '{name}'.*{error}"):
        run(x)
    assert pe.memory().num_tensors == before


def test_workgroup_memory_is_counted_as_a_browser_counts_it():
    assert workgroup_bytes("var<workgroup> a: array<f32, 8192>;") == 32768
    assert (
        workgroup_bytes("const T = 16u;\nvar<workgroup> t: array<vec4<f32>, T * 4u>;\nvar<workgroup> n: u32;") == 1040
    )
    # a struct of a vec3 and an f32 is 16 bytes (vec3's alignment), a mat3x3f three 16-byte columns
    assert workgroup_bytes("struct S { a: vec3<f32>, b: f32 }\nvar<workgroup> s: array<S, 10>;") == 160
    assert workgroup_bytes("var<workgroup> m: mat3x3f; var<workgroup> c: array<atomic<u32>, 3>;") == 48 + 16
    assert workgroup_bytes("// var<workgroup> gone: array<f32, 99999>;\nfn main() {}") == 0
    assert workgroup_bytes("override N: u32 = 4;\nvar<workgroup> a: array<f32, N>;") is None  # unknown: unchecked


def test_an_adapter_below_a_default_is_asked_for_what_it_has():
    adapter = {name: 1 << 30 for name in ADAPTER_MAXIMA} | {
        "max-bind-groups": 2,
        "min-uniform-buffer-offset-alignment": 64,
    }
    wanted = required_limits(adapter)
    assert wanted["max-bind-groups"] == 2 and wanted["min-uniform-buffer-offset-alignment"] == 256
    assert wanted["max-compute-invocations-per-workgroup"] == 256 and wanted["max-buffer-size"] == 1 << 30
