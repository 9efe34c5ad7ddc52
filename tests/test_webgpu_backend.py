"""The webgpu backend's own machinery on wgpu-py: pipeline cache, batched submits, buffer pool, uniforms,
readback, data_to_gpu, warm-up and device loss."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.backends.webgpu.backend import PENDING_LIMIT
from py_engine.backends.webgpu.buffer_pool import size_class
from py_engine.backends.webgpu.kernels.math import run_elementwise


def program(x):
    return pe.relu(x * 2.0 - 1.0) + pe.exp(x)


def test_the_same_program_compiles_each_pipeline_once(gpu):
    x = pe.tensor(np.linspace(-1, 1, 300, dtype=np.float32))
    pe.tidy(program, x).dispose()
    first = pe.stats()["pipeline_compiles"]
    assert first == 5  # mul, sub, relu, exp, add
    for _ in range(5):
        pe.tidy(program, x).dispose()
    assert pe.stats()["pipeline_compiles"] == first


def test_dispatches_are_batched_into_few_submits(gpu):
    x = pe.ones((1000,))
    (x + 1.0).dispose()  # its shader compiled: a compile submits what was recorded before it (below)
    before = pe.stats()
    y = x
    for _ in range(100):
        y = y + 1.0
    assert y.numpy()[0] == 101.0
    after = pe.stats()
    assert after["dispatches"] - before["dispatches"] == 100
    assert after["submits"] - before["submits"] == 2  # one at 64 recorded dispatches, one for the readback


def test_a_dispatch_that_compiles_submits_the_work_recorded_before_it(gpu):
    """The GPU runs the recorded work while the shader compiles (in the page: while a compile started ahead of the
    engine finishes), so a first call streams through its layers as their shaders come."""
    x = pe.ones((16,))
    (x + 1.0).dispose()
    gpu.flush()
    y = x + 1.0  # its shader is known: recorded, not submitted
    before = pe.stats()
    assert before["recorded_unsubmitted"] == 1
    z = run_elementwise(gpu, "CompileSubmitProbe", "x * 3.0", [x._buf.handle], (16,), "float32")
    after = pe.stats()
    assert after["pipeline_compiles"] == before["pipeline_compiles"] + 1
    assert after["submits"] == before["submits"] + 1 and after["recorded_unsubmitted"] == 1  # the probe's dispatch
    assert y.tolist() == [2.0] * 16 and gpu.read(z).tolist() == [3.0] * 16
    gpu.free(z)


def test_repeated_work_creates_no_new_gpu_buffers(gpu):
    """Uniforms go through one ring buffer and freed buffers are reused: steady state allocates nothing."""
    x = pe.tensor(np.arange(4096, dtype=np.float32))
    for _ in range(100):  # freed buffers come back at each submit (every 64 dispatches): see every phase first
        pe.tidy(program, x).dispose()
    created = pe.stats()["buffers_created"]
    for _ in range(100):
        pe.tidy(program, x).dispose()
    assert pe.stats()["buffers_created"] == created
    assert pe.stats()["pool_reuses"] > 0


def test_size_classes_waste_at_most_a_quarter():
    for n in [1, 255, 256, 257, 1000, 4096, 4097, 10**6, 123_456_789]:
        c = size_class(n)
        assert c >= n and (c <= 256 or c <= n * 1.25)
    assert size_class(300) == size_class(310) == 320


def test_a_freed_buffer_is_not_reused_before_the_work_reading_it_is_submitted(gpu):
    x = pe.tensor(np.full(64, 3.0, np.float32))
    y = x * 2.0  # recorded, not submitted
    x.dispose()
    z = pe.tensor(np.full(64, -1.0, np.float32))  # an upload that must not land in x's buffer yet
    assert y.tolist() == [6.0] * 64 and z.tolist() == [-1.0] * 64


def test_a_kernel_output_reuses_a_buffer_freed_before_the_submit_an_upload_does_not(gpu):
    x = pe.tensor(np.full(64, 3.0, np.float32))
    gpu.flush()
    y = x * 2.0
    z = y + 1.0  # reads y: recorded, not submitted
    freed = y._buf.handle.buffer
    y.dispose()
    upload = pe.tensor(np.full(64, -1.0, np.float32))
    created = pe.stats()["buffers_created"]
    w = z * 3.0  # recorded after z's dispatch, so it may overwrite y's buffer
    assert upload._buf.handle.buffer != freed and w._buf.handle.buffer == freed
    assert pe.stats()["buffers_created"] == created and pe.stats()["recorded_unsubmitted"] > 0
    assert z.tolist() == [7.0] * 64 and w.tolist() == [21.0] * 64 and upload.tolist() == [-1.0] * 64


def test_a_scope_costs_no_submit_and_freed_memory_waiting_for_one_stays_bounded(gpu):
    x = pe.ones((16,))
    (x + 1.0).dispose()  # its shader compiled (a compile submits)
    before = pe.stats()
    for _ in range(10):
        pe.tidy(lambda: x + 1.0).dispose()
    after = pe.stats()
    assert after["submits"] == before["submits"]
    assert after["recorded_unsubmitted"] == before["recorded_unsubmitted"] + 10
    big = pe.zeros((4 << 20,))  # 16 MiB
    for _ in range(20):
        with pe.scope():
            big + 1.0
    limit = gpu.pool.bytes_in_use + 3 * PENDING_LIMIT
    assert pe.stats()["pool_bytes_allocated"] <= limit  # not 20 x 16 MiB waiting for the next batch


def test_memory_counts_gpu_bytes_and_the_pool(gpu):
    x = pe.ones((1000,))
    m = pe.memory()
    assert m.num_bytes_in_gpu == 4000 and m.num_bytes_in_gpu_allocated >= 4000
    x.dispose()
    assert pe.memory().num_bytes_in_gpu == 0
    gpu.flush()
    assert pe.memory().num_bytes_in_gpu_allocated > 0  # kept for reuse ...
    pe.release_pool()
    assert pe.memory().num_bytes_in_gpu_allocated == 0  # ... until released


def test_leaving_webgpu_gives_its_pool_back_and_moved_tensors_their_buffers(gpu):
    keep = pe.tensor(np.arange(4096, dtype=np.float32))
    pe.tidy(lambda: (keep * 2.0 + 1.0).sum()).dispose()  # intermediates freed into the pool
    assert gpu.pool.bytes_allocated > gpu.pool.bytes_in_use == 4096 * 4
    asyncio.run(pe.set_backend("numpy"))
    assert gpu.pool.bytes_allocated == gpu.pool.bytes_in_use == 4096 * 4  # only `keep` still lives there
    assert (keep + 1.0).numpy()[5] == 6.0  # keep moves to numpy on first use ...
    assert gpu.pool.bytes_allocated == 0  # ... and its GPU buffer goes back to the device, not to the pool
    keep.dispose()


def test_readback_sync_and_async(gpu):
    x = pe.tensor([[1.5, -2.0], [0.0, 4.0]])
    assert x.numpy().tolist() == [[1.5, -2.0], [0.0, 4.0]]
    assert asyncio.run(x.data()).tolist() == [1.5, -2.0, 0.0, 4.0]
    before = pe.stats()["readbacks"]
    pe.tensor([True, False]).numpy()
    assert pe.stats()["readbacks"] == before + 1


def test_data_to_gpu_hands_out_the_buffer_without_a_readback(gpu):
    x = pe.tensor(np.arange(10, dtype=np.float32))
    y = x * 3.0
    readbacks = pe.stats()["readbacks"]
    data = y.data_to_gpu()
    assert pe.stats()["readbacks"] == readbacks
    assert data.shape == (10,) and data.dtype == "float32" and data.buffer.size >= 40
    raw = gpu.device.device.queue.read_buffer(data.buffer, 0, 40)
    assert np.frombuffer(raw, np.float32).tolist() == [3.0 * i for i in range(10)]
    y.dispose()
    assert pe.memory().num_data_buffers == 2  # the tensor_ref keeps y's buffer alive ...
    data.release()
    assert pe.memory().num_data_buffers == 1  # ... until released


def test_data_to_gpu_needs_a_gpu_backend():
    with pytest.raises(pe.BackendError, match="needs a GPU backend"):
        pe.ones((2,)).data_to_gpu()


def test_warmup_compiles_without_running_and_later_runs_compile_nothing(gpu):
    x = pe.tensor(np.linspace(-1, 1, 100, dtype=np.float32))
    before = pe.stats()
    assert asyncio.run(pe.warmup(program, x)) == 5
    after = pe.stats()
    assert after["pipeline_compiles"] - before["pipeline_compiles"] == 5
    assert after["dispatches"] == before["dispatches"]  # nothing ran
    assert pe.memory().num_tensors == 1  # the dry run released its tensors
    pe.tidy(program, x).dispose()
    assert pe.stats()["pipeline_compiles"] == after["pipeline_compiles"]


def test_device_loss_gives_a_clear_error_and_a_numpy_fallback(gpu):
    x = pe.tensor([1.0, 2.0])
    gpu.device.destroy()
    with pytest.raises(pe.DeviceLostError, match=rf"Tensor#{x.id} .* lived on the webgpu device, which was lost"):
        x.numpy()
    info = pe.backend_info()
    assert info["name"] == "numpy" and "lost its device" in info["fallback_reason"]
    y = pe.tensor([3.0]) * 2.0  # new work runs on numpy
    assert y.tolist() == [6.0]
    x.dispose()  # disposing what was on the lost device works and keeps the counts right
    assert pe.memory().num_bytes_in_gpu == 0
    assert asyncio.run(pe.set_backend("webgpu")) is True  # a new device
    assert (pe.tensor([1.0]) + 1.0).tolist() == [2.0]


def test_ops_on_a_lost_device_raise_and_fall_back(gpu):
    x = pe.tensor([1.0, 2.0])
    gpu.device.destroy()
    with pytest.raises(pe.DeviceLostError):
        x + 1.0
    assert pe.get_backend() == "numpy"
