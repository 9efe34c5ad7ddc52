"""Backend and kernel registries, backend switching with data moving on first use, fallback."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine import kernel_registry
from py_engine.backends.numpy import NumpyBackend
from py_engine.engine import ENGINE


class FakeGpuBackend(NumpyBackend):
    """numpy under another name that counts as GPU memory: enough to watch data move between backends."""

    name = "fakegpu"
    is_gpu = True
    host_arrays = False  # it stands for a GPU: a move copies

    @property
    def uploads(self):
        return self.counts["uploads"]

    def allocated_bytes(self):
        return 0


@pytest.fixture
def fakegpu():
    pe.register_backend("fakegpu", FakeGpuBackend)  # first: pe.register_kernel knows only registered backends
    added = [k for (k, b) in list(kernel_registry._KERNELS) if b == "numpy"]
    for name in added:
        pe.register_kernel(name, "fakegpu", kernel_registry._KERNELS[(name, "numpy")])
    yield
    asyncio.run(pe.set_backend("numpy"))
    pe.dispose(list(ENGINE.live.values()))
    for name in added:
        pe.unregister_kernel(name, "fakegpu")
    ENGINE.forget_backend("fakegpu")
    del ENGINE._factories["fakegpu"]


def test_numpy_is_the_default_backend():
    assert pe.get_backend() == "numpy"
    info = pe.backend_info()
    assert info["name"] == "numpy" and info["device"] == "cpu" and info["fallback_reason"] is None
    asyncio.run(pe.ready())


def test_missing_kernel_names_the_kernel_the_backend_and_where_it_exists():
    pe.register_kernel("OnlyOnWebgpu", "webgpu", lambda x: x)
    try:
        with pytest.raises(pe.KernelNotFoundError) as err:
            ENGINE.run_kernel("OnlyOnWebgpu", (pe.ones((2,)),))
        message = str(err.value)
        assert "'OnlyOnWebgpu' is not registered for the active backend 'numpy'" in message
        assert "registered for: webgpu" in message and "set_backend('webgpu')" in message
    finally:
        pe.unregister_kernel("OnlyOnWebgpu", "webgpu")
    with pytest.raises(pe.KernelNotFoundError, match="no backend has it"):
        ENGINE.run_kernel("OnlyOnWebgpu", ())


def test_register_kernel_refuses_silent_replacement():
    pe.register_kernel("Twice", "numpy", lambda x: x * 2)
    try:
        with pytest.raises(ValueError, match=r"already registered.*override=True"):
            pe.register_kernel("Twice", "numpy", lambda x: x * 3)
        pe.register_kernel("Twice", "numpy", lambda x: x * 3, override=True)
        assert ENGINE.run_kernel("Twice", (pe.tensor([1.0]),)).tolist() == [3.0]
    finally:
        pe.unregister_kernel("Twice", "numpy")
    with pytest.raises(pe.KernelNotFoundError, match="cannot unregister"):
        pe.unregister_kernel("Twice", "numpy")
    with pytest.raises(TypeError, match="callable"):
        pe.register_kernel("Twice", "numpy", 42)


def test_a_custom_kernel_registered_per_backend():
    """The seed's CRF example: a kernel registered for numpy only runs on numpy."""

    def viterbi_decode(emissions, transitions):
        score, back = emissions[0], []
        for e in emissions[1:]:
            total = score[:, None] + transitions + e[None, :]
            back.append(total.argmax(0))
            score = total.max(0)
        path = [int(score.argmax())]
        for b in reversed(back):
            path.append(int(b[path[-1]]))
        return np.array(path[::-1], np.int32)

    pe.register_kernel("OnlyOnWebgpu", "numpy", viterbi_decode, override=True)
    try:
        emissions = pe.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        transitions = pe.tensor([[0.0, -5.0], [-5.0, 0.0]])  # switching tags is expensive
        assert ENGINE.run_kernel("OnlyOnWebgpu", (emissions, transitions)).tolist() == [0, 0, 0]
    finally:
        pe.unregister_kernel("OnlyOnWebgpu", "numpy")


def test_unknown_backend_is_an_error():
    with pytest.raises(pe.BackendError, match=r"unknown backend 'tpu'.*numpy"):
        asyncio.run(pe.set_backend("tpu"))


def test_a_backend_that_cannot_start_falls_back_to_numpy_with_the_reason():
    def broken():
        raise RuntimeError("no adapter found")

    pe.register_backend("broken", broken)
    try:
        assert asyncio.run(pe.set_backend("broken")) is False
        info = pe.backend_info()
        assert info["name"] == "numpy"
        assert info["fallback_reason"] == "backend 'broken' could not start: RuntimeError: no adapter found"
        assert asyncio.run(pe.set_backend("numpy")) is True and pe.backend_info()["fallback_reason"] is None
    finally:
        del ENGINE._factories["broken"]


def test_async_backend_factories_are_awaited(fakegpu):
    async def factory():
        await asyncio.sleep(0)
        return FakeGpuBackend()

    ENGINE._factories["fakegpu"] = (factory, 0)
    assert asyncio.run(pe.set_backend("fakegpu")) is True
    assert pe.get_backend() == "fakegpu"


def test_tensors_move_to_the_new_backend_on_first_use(fakegpu):
    x = pe.tensor([1.0, 2.0, 3.0])
    assert pe.memory().num_bytes_in_gpu == 0
    assert asyncio.run(pe.set_backend("fakegpu")) is True
    gpu = ENGINE._backends["fakegpu"]
    assert x._buf.backend.name == "numpy"  # nothing moves until it is used
    y = x * 2
    assert x._buf.backend is gpu and y._buf.backend is gpu
    assert gpu.uploads == 2  # x moved once, the scalar 2 was made there
    m = pe.memory()
    assert (m.num_tensors, m.num_data_buffers, m.num_bytes, m.num_bytes_in_gpu) == (2, 2, 24, 24)
    assert y.tolist() == [2.0, 4.0, 6.0]
    asyncio.run(pe.set_backend("numpy"))
    z = y + x  # both move back
    assert z.tolist() == [3.0, 6.0, 9.0] and pe.memory().num_bytes_in_gpu == 0
    pe.dispose([x, y, z])
    assert (pe.memory().num_data_buffers, pe.memory().num_bytes) == (0, 0)


def test_views_move_with_their_shared_buffer(fakegpu):
    x = pe.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = x.reshape((4,))
    asyncio.run(pe.set_backend("fakegpu"))
    assert (v + 1).tolist() == [2.0, 3.0, 4.0, 5.0]
    assert x._buf is v._buf and x._buf.backend.name == "fakegpu"
    assert pe.memory().num_data_buffers == 2


def test_on_backend_runs_a_block_on_the_host_and_each_result_moves_once(fakegpu):
    assert asyncio.run(pe.set_backend("fakegpu")) is True
    gpu = ENGINE._backends["fakegpu"]
    with pe.on_backend("numpy") as host:
        assert pe.get_backend() == "numpy"
        w = pe.tensor([1.0, 2.0]) * 3  # made and computed on the host
    assert pe.get_backend() == "fakegpu" and host.name == "numpy"
    assert w._buf.backend is host and gpu.uploads == 0 and pe.memory().num_bytes_in_gpu == 0
    y = w + w  # the first GPU op moves it: one upload, then it stays
    assert w._buf.backend is gpu and y._buf.backend is gpu and gpu.uploads == 1
    assert (y * w).tolist() == [18.0, 72.0] and gpu.uploads == 1


def test_on_backend_holds_for_its_own_task_only(fakegpu):
    assert asyncio.run(pe.set_backend("fakegpu")) is True

    async def pinned(started, resume):
        with pe.on_backend("numpy"):
            started.set()
            await resume.wait()  # another task runs ops meanwhile
            return pe.tensor([1.0])._buf.backend.name

    async def other(started, resume):
        await started.wait()
        name = pe.tensor([1.0])._buf.backend.name
        resume.set()
        return name

    async def both():
        started, resume = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(pinned(started, resume), other(started, resume))

    assert asyncio.run(both()) == ["numpy", "fakegpu"]


def test_on_backend_names_what_is_wrong():
    with pytest.raises(pe.BackendError, match=r"unknown backend 'tpu'.*numpy"):
        pe.on_backend("tpu").__enter__()
    ENGINE.forget_backend("webgpu")
    with pytest.raises(pe.BackendError, match=r"on_backend\('webgpu'\): that backend is not running.*set_backend"):
        pe.on_backend("webgpu").__enter__()
