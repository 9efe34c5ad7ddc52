"""pe.capture on wgpu-py: a replay computes what a normal run computes, in one device call, with flat memory;
variables assigned inside; the errors for readback inside; signature changes, the numpy backend, backend switches and
device loss."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from tests.test_models import conv_net, images

RUNS = 5


class CountingDevice:
    """The real device, recording the name of every method called on it."""

    def __init__(self, device):
        self.device, self.calls = device, []

    def __getattr__(self, name):
        attr = getattr(self.device, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self.calls.append(name)
            return attr(*args, **kwargs)

        return counted


@pytest.fixture
def counted_device(gpu):
    """Every call the backend (and its pool) makes on the device, by method name."""
    real = gpu.device
    gpu.device = gpu.pool.device = CountingDevice(real)
    yield gpu.device
    gpu.device = gpu.pool.device = real


def random(shape, seed, dtype=np.float32):
    return pe.tensor(np.random.default_rng(seed).normal(size=shape).astype(dtype))


def mlp_and_inputs():
    w1, b1, w2 = random((12, 32), 1), random((32,), 2), random((32, 5), 3)

    def mlp(x):
        return pe.softmax(pe.relu(x @ w1 + b1) @ w2)

    return mlp, [w1, b1, w2], lambda seed: [random((4, 12), seed)]


def conv_and_inputs():
    kernel, bias = random((3, 3, 3, 8), 4), random((8,), 5)

    def conv(x):
        y = pe.relu(pe.conv2d(x, kernel, strides=2, padding="same") + bias)
        return pe.max_pool(y, 2, 2, "valid").mean(axis=(1, 2))

    return conv, [kernel, bias], lambda seed: [random((2, 16, 16, 3), seed)]


def scalars_and_inputs():
    """Python scalar operands (each uploaded as a constant) over more than one batch of dispatches, with
    intermediates freed on the way and as small as the constants: buffers freed in one batch are reused in the
    next, and a constant must never land in a buffer that an earlier dispatch of the recording wrote."""

    def step(x, i):
        return x * 0.5 + float(i % 3)

    def scalars(x, y):
        for i in range(40):
            x = pe.tidy(step, x, i)
        return [x - 1.0, (x * y).sum(axis=1) / 3.0]

    return scalars, [], lambda seed: [random((3, 20), seed), random((3, 20), seed + 100)]


def folded_model_and_inputs():
    model = conv_net()
    model.fold_batch_norms(release_unfolded=True)
    pe.dispose(model.predict(images(2)))  # builds the inference plan before capturing it
    return model.predict, [model], lambda seed: [pe.tensor(images(2, seed))]


MODELS = {
    "mlp": mlp_and_inputs,
    "conv": conv_and_inputs,
    "scalars": scalars_and_inputs,
    "folded": folded_model_and_inputs,
}


def values(fn, *args):
    """fn(*args) as a numpy array, its tensor disposed."""
    t = fn(*args)
    try:
        return t.numpy()
    finally:
        t.dispose()


def as_list(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


@pytest.mark.parametrize("name", MODELS)
def test_a_replay_equals_normal_execution_for_new_inputs(gpu, name):
    fn, weights, make_inputs = MODELS[name]()
    captured = pe.capture(fn)
    kept = []  # tensors made between replays, in buffers the pool had free: no replay may write into them
    for seed in range(RUNS):
        inputs = make_inputs(10 + seed)
        got = captured(*inputs)
        want = pe.tidy(lambda: fn(*inputs))  # noqa: B023 - called at once
        assert type(got) is type(want)
        for g, w in zip(as_list(got), as_list(want)):
            assert (g.shape, g.dtype) == (w.shape, w.dtype)
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        kept.append((want, [w.numpy() for w in as_list(want)]))
        pe.dispose([inputs, got])
    for want, values in kept:
        for w, v in zip(as_list(want), values):
            np.testing.assert_array_equal(w.numpy(), v)
    assert pe.stats()["capture_programs"] == 1 and pe.stats()["capture_replays"] == RUNS - 1
    captured.dispose()
    pe.dispose([weights, [want for want, _ in kept]])


def test_a_replay_is_one_device_call_and_runs_every_recorded_dispatch(counted_device):
    fn, weights, make_inputs = folded_model_and_inputs()
    captured = pe.capture(fn)
    x = make_inputs(0)
    before = pe.stats()["dispatches"]
    pe.dispose(captured(*x))  # records, running fn normally
    recorded = pe.stats()["dispatches"] - before
    assert recorded > 5
    pe.dispose(captured(*x))  # the pool now holds a buffer for the output
    for seed in range(3):
        x = make_inputs(seed)
        before = pe.stats()
        counted_device.calls.clear()
        y = captured(*x)
        assert counted_device.calls == ["run_program"]
        after = pe.stats()
        assert after["dispatches"] - before["dispatches"] == recorded
        assert after["submits"] - before["submits"] == 1
        assert (after["uploads"], after["capture_replays"]) == (before["uploads"], before["capture_replays"] + 1)
        pe.dispose([x, y])
    captured.dispose()
    pe.dispose(weights)


def test_memory_stays_flat_over_50_replays_and_dispose_gives_it_back(gpu):
    fn, weights, make_inputs = conv_and_inputs()
    x = make_inputs(0)
    pe.release_pool()
    start = pe.memory()
    captured = pe.capture(fn)
    pe.dispose(captured(*x))
    pe.dispose(captured(*x))
    held = pe.stats()["capture_bytes"]
    assert held > 0
    steady = pe.memory()
    assert steady.num_bytes_in_gpu_allocated >= start.num_bytes_in_gpu_allocated + held
    # what the pool has in use: the live tensors and the capture's buffers, nothing else
    assert gpu.pool.bytes_in_use == sum(gpu.pool.size_of[t._buf.handle.buffer] for t in x + weights) + held
    for _ in range(50):
        with pe.scope():
            captured(*x)
    after = pe.memory()
    assert (after.num_tensors, after.num_bytes_in_gpu, after.num_bytes_in_gpu_allocated) == (
        steady.num_tensors,
        steady.num_bytes_in_gpu,
        steady.num_bytes_in_gpu_allocated,
    )
    captured.dispose()
    stats = pe.stats()
    assert (stats["capture_programs"], stats["capture_bytes"]) == (0, 0)
    assert pe.memory().num_bytes_in_gpu_allocated == steady.num_bytes_in_gpu_allocated - held
    pe.release_pool()
    assert pe.memory().num_bytes_in_gpu_allocated == start.num_bytes_in_gpu_allocated
    pe.dispose([x, weights])


def test_reading_back_inside_the_function_is_an_error(gpu):
    w = random((4, 4), 0)
    captured = pe.capture(lambda x: x @ w if (x @ w).sum().item() > -1e9 else x)
    x = random((2, 4), 1)
    before = pe.memory()
    with pytest.raises(pe.CaptureError, match=r"tried to read a tensor back to the CPU .* read it after the call"):
        captured(x)
    after = pe.memory()
    assert (after.num_tensors, after.num_bytes_in_gpu) == (before.num_tensors, before.num_bytes_in_gpu)
    assert pe.stats()["capture_programs"] == 0
    pe.dispose([w, x])


def test_a_variable_assigned_inside_is_updated_in_place_by_every_replay(gpu):
    v = pe.variable(np.zeros(3, np.float32), name="counter")  # a buffer of its own (see the test below)
    own = v._buf

    def step(x):
        v.assign(v + x)
        return v * 2.0

    step = pe.capture(step)
    for call in range(1, 5):
        out = step(pe.ones((3,)))
        assert out.tolist() == [2.0 * call] * 3 and v.tolist() == [float(call)] * 3
        assert v._buf is own, "the variable keeps its buffer: the program reads and updates it in place"
        out.dispose()
    assert pe.stats()["capture_programs"] == 1 and pe.stats()["capture_replays"] == 3
    v.assign(pe.zeros((3,)))  # outside the function: the program no longer binds v's buffer, so it records again
    out = step(pe.ones((3,)))
    assert out.tolist() == [2.0] * 3 and pe.stats()["capture_replays"] == 3
    step.dispose()
    pe.dispose([out, v])


def test_a_variable_sharing_its_buffer_records_once_its_assign_gave_it_its_own_and_the_other_tensor_keeps(gpu):
    """pe.variable(t) shares t's buffer (as tf.variable does): a replay rewriting it in place would change t too. The
    first call assigns normally (the variable takes a new buffer) and is not kept; the next one records."""
    t = pe.zeros((3,))
    v = pe.variable(t, name="shared")
    step = pe.capture(lambda x: v.assign(v + x) * 2.0)
    outs = [step(pe.ones((3,))).tolist() for _ in range(4)]
    assert outs == [[2.0 * call] * 3 for call in range(1, 5)] and v.tolist() == [4.0] * 3
    assert t.tolist() == [0.0] * 3, "the tensor the variable was made from keeps its values"
    assert pe.stats()["capture_programs"] == 1 and pe.stats()["capture_replays"] == 2
    step.dispose()
    pe.dispose([t, v])


def test_keeping_a_computed_tensor_without_returning_it_is_an_error(gpu):
    kept = []

    def leaky(x):
        kept.append(pe.keep(x * 2.0))
        return x + 1.0

    with pytest.raises(pe.CaptureError, match="keeps tensors it computed without returning them"):
        pe.capture(leaky)(pe.ones((3,)))
    pe.dispose(kept)


def test_a_new_signature_runs_normally_unless_max_programs_allows_recording_it(gpu):
    calls = []

    def fn(x):
        calls.append(x.shape)
        return pe.exp(x) * 2.0

    small, large = pe.ones((4,)), pe.ones((8,))
    one = pe.capture(fn)
    for _ in range(3):
        pe.dispose([one(small), one(large)])
    assert calls == [(4,), (8,), (8,), (8,)]  # (4,) was recorded and then replayed; (8,) ran every time
    two = pe.capture(fn, max_programs=2)
    calls.clear()
    for _ in range(3):
        pe.dispose([two(small), two(large)])
    assert calls == [(4,), (8,)]
    assert pe.stats()["capture_programs"] == 1 + 2
    np.testing.assert_array_equal(values(two, large), values(lambda x: pe.exp(x) * 2.0, large))
    pe.dispose([small, large])
    one.dispose()
    two.dispose()


def test_results_keep_their_structure_views_and_inputs_included(gpu):
    w = random((3, 3), 0)

    def fn(x, y):
        return (x.reshape((3, 2)), (x @ w).reshape((6,)), w, y * 3.0)

    captured = pe.capture(fn)
    for seed in range(3):
        x, y = random((2, 3), seed), random((5,), seed + 1)
        got = captured(x, y)
        want = pe.tidy(lambda: fn(x, y))  # noqa: B023
        assert type(got) is tuple and [t.shape for t in got] == [(3, 2), (6,), (3, 3), (5,)]
        for g, e in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
        pe.dispose([x, y, got[:2], got[3], want[:2], want[3]])
        if got[2] is not w:  # a replay returns a copy of w, the recording call w itself (as fn did)
            got[2].dispose()
    captured.dispose()
    w.dispose()


def test_inputs_sharing_one_buffer_run_normally(gpu):
    captured = pe.capture(lambda a, b: a * b)
    x = random((6,), 0)
    y = captured(x, x.reshape((6,)))
    np.testing.assert_array_equal(y.numpy(), x.numpy() ** 2)
    assert pe.stats()["capture_programs"] == 0
    pe.dispose([x, y])


def test_a_captured_function_inside_another_is_recorded_into_it(gpu):
    inner = pe.capture(lambda x: pe.exp(x) + 1.0)
    pe.dispose(pe.tidy(lambda: inner(random((5,), 0))))  # recorded: inner now replays when called on its own
    outer = pe.capture(lambda x: inner(x) * inner(x * 2.0))
    for seed in range(3):
        x = random((5,), seed)
        want = values(lambda x: (pe.exp(x) + 1.0) * (pe.exp(x * 2.0) + 1.0), x)
        np.testing.assert_array_equal(values(outer, x), want)
        x.dispose()
    assert pe.stats()["capture_programs"] == 2 and pe.stats()["capture_replays"] == 2
    inner.dispose()
    outer.dispose()


def test_under_a_gradient_tape_the_function_runs_normally(gpu):
    captured = pe.capture(lambda x: (x * x).sum())
    x = random((4,), 0)
    pe.dispose(captured(x))  # recorded
    g = pe.grad(captured)(x)
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy(), rtol=1e-6)
    pe.dispose([x, g])
    captured.dispose()


def test_on_the_numpy_backend_the_function_just_runs(each_backend):
    calls = []

    def fn(x):
        calls.append(1)
        return x * 2.0 + 1.0

    captured = pe.capture(fn)
    x = pe.tensor([1.0, 2.0])
    for _ in range(3):
        assert values(captured, x).tolist() == [3.0, 5.0]
    assert len(calls) == (3 if each_backend == "numpy" else 1)
    captured.dispose()
    x.dispose()


def test_a_backend_switch_drops_the_programs_and_coming_back_records_again(gpu):
    fn, weights, make_inputs = mlp_and_inputs()
    captured = pe.capture(fn)
    x = make_inputs(0)
    want = pe.tidy(lambda: fn(*x))
    pe.dispose(captured(*x))
    assert pe.stats()["capture_programs"] == 1
    asyncio.run(pe.set_backend("numpy"))
    assert gpu.stats()["capture_programs"] == 0
    assert gpu.pool.bytes_in_use == sum(gpu.pool.size_of[t._buf.handle.buffer] for t in x + weights + [want])
    np.testing.assert_allclose(values(captured, *x), want.numpy(), rtol=1e-5, atol=1e-6)
    asyncio.run(pe.set_backend("webgpu"))  # the same device: recorded again there
    for _ in range(2):
        np.testing.assert_array_equal(values(captured, *x), want.numpy())
    assert pe.stats()["capture_programs"] == 1 and pe.stats()["capture_replays"] == 1
    captured.dispose()
    pe.dispose([x, weights, want])


def test_device_loss_then_replay_raises_and_later_calls_fall_back(gpu):
    fn, weights, make_inputs = mlp_and_inputs()
    captured = pe.capture(fn)
    x = make_inputs(0)
    pe.dispose(captured(*x))
    pe.dispose(captured(*x))  # a replay
    before = pe.memory().num_tensors
    gpu.device.destroy()
    with pytest.raises(pe.DeviceLostError, match="lost"):
        captured(*x)
    assert pe.get_backend() == "numpy" and "lost its device" in pe.backend_info()["fallback_reason"]
    assert pe.memory().num_tensors == before and gpu.stats()["capture_programs"] == 0
    pe.dispose([x, weights])  # their data went with the device
    captured.dispose()

    fn, weights, make_inputs = mlp_and_inputs()  # made again, on numpy
    again = pe.capture(fn)
    x = make_inputs(0)
    y = again(*x)  # runs fn on numpy
    assert y._buf.backend.name == "numpy"
    assert asyncio.run(pe.set_backend("webgpu"))  # a new device: recorded there
    for _ in range(2):
        np.testing.assert_allclose(values(again, *x), y.numpy(), rtol=1e-5, atol=1e-6)
    assert pe.stats()["capture_programs"] == 1
    again.dispose()
    pe.dispose([x, weights, y])
