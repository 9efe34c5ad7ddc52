"""The wasm backend's relaxed-SIMD modules (kernels_relaxed.wasm, kernels_shared_relaxed.wasm), where the JavaScript
has relaxed SIMD: chosen by feature detection and named in backend_info(), the conformance suite and the
differential tests on them, their products within the documented bound of the plain module's, and the threads' pool
on the same variant (its self-test demands one thread's results bit for bit).

Node 20's V8 has relaxed SIMD behind --experimental-wasm-relaxed-simd; a Node whose V8 shipped it needs no flag."""

import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from py_engine.backends.wasm import native

from .pyodide import start_node_pyodide
from .test_wasm_backend import ALL_NATIVE, DIFFERENTIAL, FAST, _agree, _spec
from .test_wasm_threads import EVERY_KERNEL_THREADED

RELAXED_FLAG = "--experimental-wasm-relaxed-simd"


def relaxed_node_flags():
    """The flag where this Node knows it (Node 20), none where it does not (a V8 that shipped relaxed SIMD)."""
    known = subprocess.run(["node", RELAXED_FLAG, "-e", "0"], capture_output=True).returncode == 0
    return (RELAXED_FLAG,) if known else ()


@pytest.fixture(scope="module")
def node():
    flags = relaxed_node_flags()
    probe = "new WebAssembly.Module(Buffer.from(process.argv[1], 'hex'))"
    if subprocess.run(["node", *flags, "-e", probe, native.RELAXED_PROBE.hex()], capture_output=True).returncode:
        version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        pytest.fail(f"Node {version} has no relaxed SIMD with its final opcodes: these tests take Node 20 or later")
    pyodide = start_node_pyodide(flags)
    pyodide.run(ALL_NATIVE)
    pyodide.run(DIFFERENTIAL)
    pyodide.run(EVERY_KERNEL_THREADED)
    yield pyodide
    pyodide.close()


def test_the_relaxed_module_runs_where_relaxed_simd_validates_and_backend_info_says_so(node):
    info, name, size = node.run(
        """
        from py_engine.backends.wasm import native
        from importlib import resources
        assert await pe.set_backend("wasm", threads=1)
        path = resources.files(native.__package__).joinpath(native.module_name())
        [pe.backend_info(), native.module_name(), len(path.read_bytes())]
        """
    )
    assert info["simd"] == "relaxed" and info["fallback_reason"] is None
    assert name == "kernels_relaxed.wasm" and info["module_bytes"] == size


def test_the_conformance_suite_passes_on_the_relaxed_module(node):
    report = node.run(
        """
        from py_engine.testing.conformance import all_cases, run_suite
        report = await run_suite("wasm")
        with all_native():
            native_report = await run_suite("wasm")
        {**report, "total": len(all_cases()), "native_failed": native_report["failed"],
         "simd": pe.backend_info()["simd"]}
        """
    )
    assert report["simd"] == "relaxed"
    assert report["failed"] == {} and report["native_failed"] == {}, str(report)[:5000]
    assert report["passed"] == report["total"] > 1000


def test_relaxed_products_are_within_the_documented_bound_of_the_plain_modules(node):
    """docs/wasm_backend.md: a sum of K products differs from the plain module's by at most 2 gamma_K times the sum
    of the products' magnitudes (each is within gamma_K = K u / (1 - K u), u = 2^-24, of the exact sum); here a
    GEMM and a 3x3 convolution, checked element by element, and not equal everywhere (the fused multiply-add is
    used). A depthwise convolution's forward pass multiplies and adds in both modules: the same results."""
    checked = node.run(
        """
        from py_engine.backends.wasm import native
        from py_engine.engine import ENGINE
        rng = np.random.default_rng(3)
        a, b = rng.standard_normal((67, 577), np.float32), rng.standard_normal((577, 45), np.float32)
        x, w = rng.standard_normal((1, 13, 11, 24), np.float32), rng.standard_normal((3, 3, 24, 19), np.float32)
        dw = rng.standard_normal((3, 3, 24, 1), np.float32)
        ops = {
            "matmul": (lambda: pe.matmul(a, b), np.abs(a) @ np.abs(b), 577),
            "conv2d": (lambda: pe.conv2d(x, w, 1, "same"), pe.conv2d(np.abs(x), np.abs(w), 1, "same").numpy(), 216),
            "depthwise": (lambda: pe.depthwise_conv2d(x, dw, 1, "same"),
                          pe.depthwise_conv2d(np.abs(x), np.abs(dw), 1, "same").numpy(), 9),
        }

        async def outputs():
            assert await pe.set_backend("wasm", threads=1)
            return pe.backend_info()["simd"], {name: f().numpy() for name, (f, _, _) in ops.items()}

        relaxed = await outputs()
        ENGINE.forget_backend("wasm")
        detected, native.simd = native.simd, lambda: "simd128"
        try:
            plain = await outputs()
        finally:
            native.simd = detected
            ENGINE.forget_backend("wasm")
        result = {"variants": [relaxed[0], plain[0]]}
        for name, (_, magnitude, k) in ops.items():
            r, p = relaxed[1][name], plain[1][name]
            bound = 2 * (k * 2.0**-24 / (1 - k * 2.0**-24)) * magnitude
            result[name] = [bool(np.all(np.abs(r - p) <= bound)), bool(np.array_equal(r, p))]
        result
        """
    )  # fmt: skip
    assert checked.pop("variants") == ["relaxed", "simd128"]
    assert checked == {"matmul": [True, False], "conv2d": [True, False], "depthwise": [True, True]}, checked


def test_the_threads_run_the_relaxed_shared_module_and_give_one_threads_results(node):
    """The pool's self-test demands one thread's results bit for bit: a plain shared module beside a relaxed one
    would fail it and leave one thread."""
    info = node.run(
        """
        from py_engine.testing.conformance import run_suite
        assert await pe.set_backend("wasm", threads=2)
        with every_kernel_threaded():
            report = await run_suite("wasm")
        {**pe.backend_info(), "failed": report["failed"]}
        """
    )
    assert info["simd"] == "relaxed" and info["threads"] == 2, info["threads_reason"]
    assert info["threaded_calls"] > 300 and info["failed"] == {}, str(info["failed"])[:3000]
    node.run('await pe.set_backend("wasm", threads=1)')


@FAST
@given(
    c=st.integers(1, 19), out=st.integers(1, 21), k=st.sampled_from([1, 3]), strides=st.sampled_from([1, 2]),
    activation=st.sampled_from(["linear", "relu6"]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_relaxed_fused_conv2d_and_depthwise_and_their_gradients_agree(node, c, out, k, strides, activation, seed):
    kwargs = {"activation": activation, "strides": strides, "padding": "same"}
    shape = (1, -(-9 // strides), -(-10 // strides))
    _agree(node, _spec("fused_conv2d", seed, [(1, 9, 10, c), (k, k, c, out), (out,)], kwargs, lambda *_: (*shape, out)))
    if k == 3:
        depthwise = [(1, 9, 10, c), (3, 3, c, 1), (c,)]
        _agree(node, _spec("fused_depthwise_conv2d", seed, depthwise, kwargs, lambda *_: (*shape, c)))
