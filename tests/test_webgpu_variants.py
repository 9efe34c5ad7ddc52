"""The webgpu kernels in each of their variants, recorded in backend.variants: matmul/conv "register-blocked" (CPU
adapters) and "tiled" (workgroup memory, real GPUs), chosen by backend.on_cpu; TopK's by the row's length."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE

VARIANTS = {True: "register-blocked", False: "tiled"}


@pytest.fixture(params=[True, False], ids=["on_cpu", "on_gpu"])
def backend(request):
    """The webgpu backend, active, with on_cpu forced to the parameter (restored afterwards)."""
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    backend = ENGINE.active()
    saved = backend.on_cpu
    backend.on_cpu = request.param
    yield backend
    backend.on_cpu = saved


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_matches_numpy_in_one_dispatch(backend, rng, ta, tb):
    a = rng.uniform(-1, 1, (2, 1, 67, 33)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 33, 129)).astype(np.float32)
    a_in, b_in = (np.swapaxes(a, -1, -2).copy() if ta else a), (np.swapaxes(b, -1, -2).copy() if tb else b)
    before = backend.stats()["dispatches"]
    out = pe.matmul(pe.tensor(a_in), pe.tensor(b_in), ta, tb)
    assert backend.stats()["dispatches"] - before == 1  # transposes and broadcasting are index math, not copies
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-5)
    assert backend.variants["matmul"] == VARIANTS[backend.on_cpu]


def test_matmul_int32(backend, rng):
    a, b = rng.integers(-9, 9, (30, 70)).astype(np.int32), rng.integers(-9, 9, (70, 65)).astype(np.int32)
    out = pe.matmul(pe.tensor(a), pe.tensor(b)).numpy()
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, a @ b)
    assert pe.backend_info()["variants"]["matmul"] == VARIANTS[backend.on_cpu]


@pytest.mark.parametrize("backend", [True], indirect=True, ids=["on_cpu"])  # tiled: 70000 slow groups on a CPU
def test_matmul_more_batches_than_one_dispatch_holds(backend, rng):
    """Grids wider than 65535 workgroups go out as several dispatches (shared by both variants)."""
    a, b = rng.uniform(-1, 1, (70000, 1, 2)).astype(np.float32), rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    before = backend.stats()["dispatches"]
    out = pe.matmul(pe.tensor(a), pe.tensor(b)).numpy()
    assert backend.stats()["dispatches"] - before == 2  # 65535 + 4465 batch elements
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "strides, padding, dilations", [(1, "same", 1), (2, "valid", 1), (2, ((1, 2), (0, 3)), 2)], ids=str
)
def test_conv2d_and_gradients_match_numpy(backend, rng, strides, padding, dilations):
    x = rng.uniform(-1, 1, (2, 13, 12, 5)).astype(np.float32)
    f = rng.uniform(-1, 1, (3, 3, 5, 6)).astype(np.float32)

    def run():
        xt, ft = pe.tensor(x), pe.tensor(f)
        y = pe.conv2d(xt, ft, strides, padding, dilations)
        w = pe.tensor(np.linspace(-1, 1, int(np.prod(y.shape)), dtype=np.float32).reshape(y.shape))
        dx, df = pe.grads(lambda a, b: (pe.conv2d(a, b, strides, padding, dilations) * w).sum())(xt, ft)
        return y.numpy(), dx.numpy(), df.numpy()

    got = run()
    asyncio.run(pe.set_backend("numpy"))
    want = run()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    assert backend.variants["conv"] == VARIANTS[backend.on_cpu]


def test_filter_gradient_split_into_slices(backend, rng):
    """A long filter-gradient reduction runs as partial sums plus one adding dispatch."""
    x, dy = rng.uniform(-1, 1, (2, 40, 41, 3)).astype(np.float32), rng.uniform(-1, 1, (2, 40, 41, 4)).astype(np.float32)
    attrs = {"strides": (1, 1), "pad": ((1, 1), (1, 1)), "dilations": (1, 1), "filter_shape": (3, 3, 3, 4)}
    before = backend.stats()["dispatches"]
    got = ENGINE.run_kernel("Conv2DBackpropFilter", (pe.tensor(x), pe.tensor(dy)), attrs).numpy()
    assert backend.stats()["dispatches"] - before == 2
    asyncio.run(pe.set_backend("numpy"))
    want = ENGINE.run_kernel("Conv2DBackpropFilter", (pe.tensor(x), pe.tensor(dy)), attrs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("n", "variant"),
    [(1000, "bitonic"), (5000, "selection"), (45000, "segmented selection"), (300000, "segmented selection")],
)
def test_top_k_of_long_rows_matches_numpy_with_ties(n, variant, rng):
    """Long rows are cut into segments (a selection thread looping ~65536 steps returned zeros on llvmpipe), the
    segments' picks merged in a second dispatch: the same values and indices, ties to the lower index."""
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    x = np.round(rng.uniform(0, 4, (2, n))).astype(np.float32)  # many ties
    values, indices = pe.top_k(pe.tensor(x), 100)
    assert ENGINE.active().variants["top_k"] == variant
    order = np.argsort(-x, axis=1, kind="stable")[:, :100]
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, order, 1))
