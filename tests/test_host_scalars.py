"""An op's Python-number operand on webgpu (`x * 2.0`): a HostScalar read as a uniform by the elementwise kernels,
uploaded only for a kernel that needs a buffer (py_engine/backends/webgpu/backend.py)."""

import numpy as np
import pytest

import py_engine as pe
from py_engine.backends.webgpu.backend import HostScalar, WebGPUBackend
from py_engine.engine import ENGINE
from py_engine.testing.conformance.math import BINARY, COMPARE

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5, 1e-30], np.float32)
NUMBERS = [2.0, -0.0, 0.0, 0.5, float("nan"), float("inf"), -3.0, 1e-30]


def test_a_number_operand_is_not_uploaded(gpu):
    x = pe.tensor([1.0, -2.0, 3.0])
    before = gpu.stats()
    y = (x * 2.0 + 1.0 - 0.5) / 4.0
    assert pe.where(y > 0.5, y, 0.0).numpy().tolist() == [0.625, 0.0, 1.625]
    after = gpu.stats()
    assert after["uploads"] == before["uploads"]  # five numbers, five uniforms
    assert after["readbacks"] - before["readbacks"] == 1


@pytest.mark.parametrize("name", [*BINARY, *COMPARE])
def test_a_uniform_gives_the_bits_an_uploaded_operand_gives(gpu, name, monkeypatch):
    fn = getattr(pe, name)
    x = pe.tensor(SPECIALS)

    def results():
        return [fn(x, n).numpy().tobytes() + fn(n, x).numpy().tobytes() for n in NUMBERS]

    held = results()
    monkeypatch.setattr(WebGPUBackend, "host_scalar", lambda self, array: None)  # every number uploaded
    assert results() == held


def test_integer_and_bool_numbers(gpu):
    i = pe.tensor([[1, -2, 7]])
    assert (i * 3).numpy().tolist() == [[3, -6, 21]] and (i * 3).dtype == "int32"
    assert (10 // i).numpy().tolist() == [[10, -5, 1]]
    assert (i * 1.5).numpy().tolist() == [[1.5, -3.0, 10.5]]  # the int tensor is cast, the number is a float
    m = pe.tensor([True, False])
    assert pe.logical_and(m, True).numpy().tolist() == [True, False]
    assert pe.logical_or(False, m).numpy().tolist() == [True, False]


def test_a_kernel_that_needs_a_buffer_gets_the_number_uploaded_once(gpu):
    s = ENGINE.from_number(np.array(4.0, np.float32), "float32")
    assert type(s._buf.handle) is HostScalar and s._buf.handle.buffer is None
    column = pe.tensor([[1.0], [2.0]])
    before = gpu.stats()
    assert s.numpy() == 4.0  # read on the host
    assert gpu.stats()["readbacks"] == before["readbacks"]
    for _ in range(2):  # a matmul binds buffers: the first use uploads the number, the second reuses it
        np.testing.assert_array_equal(pe.matmul(column, pe.reshape(s, (1, 1))).numpy(), [[4.0], [8.0]])
    assert gpu.stats()["uploads"] - before["uploads"] == 1
    assert (column * s).numpy().tolist() == [[4.0], [8.0]]  # still read as a uniform
    # (the autouse fixture checks that disposing every tensor gives the uploaded buffer back)


def test_a_replayed_kernel_that_binds_a_number_uploads_each_new_one(gpu):
    column = pe.tensor([[1.0], [2.0]])

    def scaled():  # a new number tensor each call: its own HostScalar, not uploaded yet
        s = ENGINE.from_number(np.array(4.0, np.float32), "float32")
        return pe.matmul(column, pe.reshape(s, (1, 1)))

    np.testing.assert_array_equal(pe.tidy(scaled).numpy(), [[4.0], [8.0]])  # logged
    replays, uploads = gpu.plan_replays, gpu.stats()["uploads"]
    np.testing.assert_array_equal(pe.tidy(scaled).numpy(), [[4.0], [8.0]])
    assert gpu.plan_replays == replays + 1 and gpu.stats()["uploads"] == uploads + 1


def test_numbers_with_another_value_replay_another_plan(gpu):
    x = pe.tensor([1.0, 2.0])
    assert [(x * n).numpy().tolist() for n in (2.0, 3.0, 2.0, -0.0)] == [[2, 4], [3, 6], [2, 4], [-0.0, -0.0]]
    assert np.signbit((x * -0.0).numpy()).all() and not np.signbit((x * 0.0).numpy()).any()
    assert gpu.plan_replays == 2  # 2.0 and -0.0, each seen before


def test_a_recorded_function_keeps_its_numbers_in_its_uniforms(gpu):
    def scale(t):
        return t * 2.0 + 1.0

    captured = pe.capture(scale)
    x = pe.tensor([1.0, 2.0])
    before = gpu.stats()["uploads"]
    for k in range(3):
        assert captured(x + k).numpy().tolist() == [3.0 + 2 * k, 5.0 + 2 * k]
    assert gpu.stats()["capture_replays"] == 2 and gpu.stats()["uploads"] == before
    captured.dispose()


def test_gradients_through_number_operands(gpu):
    x = pe.tensor([1.0, -2.0])
    np.testing.assert_array_equal(pe.grad(lambda t: (3.0 * t * t - t / 2.0).sum())(x).numpy(), [5.5, -12.5])
