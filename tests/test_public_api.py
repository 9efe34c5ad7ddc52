"""The public API says what is wrong where a user writes it, as a custom kernel written from the docs alone found:
dtypes TF.js does not have, a misspelled backend, a coroutine called without `await`, and the docs' names of the
uniform struct."""

import asyncio
import linecache
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import py_engine as pe
from py_engine import kernel_registry
from py_engine.backends.numpy import NumpyBackend
from py_engine.engine import ENGINE, must_await
from py_engine.errors import BackendError, DTypeError

DOCS = Path(__file__).resolve().parent.parent / "docs"

# ---- dtypes: TF.js has float32, int32 and bool ("Unknown data type float64" for the rest) ---------------------

UNSUPPORTED = ["float64", "float16", "int64", "uint8", np.float64, np.float16, np.int64, np.dtype("float64")]


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=str)
def test_a_dtype_tfjs_does_not_have_is_refused_naming_the_ones_there_are(dtype):
    name = np.dtype(dtype).name
    closest = "int32" if name.startswith(("int", "uint")) else "float32"
    for make in (lambda: pe.tensor([1.5, 2.0], dtype), lambda: pe.zeros((2,), dtype), lambda: pe.fill((2,), 1, dtype)):
        with pytest.raises(DTypeError, match=rf"unsupported dtype '{name}'; a tensor is float32, int32 or bool") as e:
            make()
        assert f"pass dtype='{closest}'" in str(e.value)
    with pytest.raises(DTypeError, match=rf"cast: unsupported dtype '{name}'"):
        pe.cast(pe.ones((2,)), dtype)


def test_the_supported_dtypes_are_taken_in_every_spelling():
    for dtype, name in [("float32", "float32"), (np.float32, "float32"), (float, "float32"), (None, "float32")]:
        assert pe.tensor([1.5], dtype).dtype == name
    for dtype, name in [("int32", "int32"), (np.int32, "int32"), (int, "int32"), ("bool", "bool"), (np.bool_, "bool")]:
        assert pe.tensor([1], dtype).dtype == name
    # data is another matter: numpy's float64 and int64 arrays are stored as float32 and int32, as TF.js does
    assert pe.tensor(np.array([0.25])).dtype == "float32" and pe.tensor(np.array([3])).dtype == "int32"


@pytest.fixture
def user_kernels():
    """register(name, backend, fn) through pe.register_kernel, unregistered when the test ends."""
    names = []

    def register(name, backend, fn):
        pe.register_kernel(name, backend, fn)
        names.append((name, backend))

    yield register
    for name, backend in names:
        pe.unregister_kernel(name, backend)


def test_a_program_output_declared_float64_is_refused_before_anything_runs(user_kernels):
    program = pe.Program(
        "Float64Out",
        "@compute @workgroup_size(1) fn main() { out[0] = x[0]; }",
        inputs=["x"],
        dispatch=lambda x: pe.Dispatch({"out": (x.shape, "float64")}, 1),
    )
    user_kernels("Float64Out", "webgpu", program)
    assert asyncio.run(pe.set_backend("webgpu")), pe.backend_info()["fallback_reason"]
    x = pe.tensor([1.0, 2.0])
    before = pe.memory().num_tensors
    with pytest.raises(DTypeError, match=r"Program 'Float64Out': unsupported dtype 'float64'.*dtype='float32'"):
        pe.run_kernel("Float64Out", [x])
    assert pe.memory().num_tensors == before


def test_a_numpy_kernel_returning_float64_is_converted_and_says_so_once(user_kernels):
    user_kernels("DoubleInFloat64", "numpy", lambda x: x.astype(np.float64) * 2)
    x = pe.tensor([1.5, 2.0])
    with pytest.warns(UserWarning) as said:
        y = pe.run_kernel("DoubleInFloat64", [x])
    assert y.dtype == "float32" and y.tolist() == [3.0, 4.0]
    (warning,) = said
    assert str(warning.message).startswith("kernel 'DoubleInFloat64' returned a float64 array; tensors are float32")
    assert ".astype('float32')" in str(warning.message)
    assert warning.filename == __file__  # the user's line, not the engine's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pe.run_kernel("DoubleInFloat64", [x])  # said once per kernel and dtype
        assert pe.argmax(x).dtype == "int32"  # the engine's own kernels convert numpy's int64 without a word


def test_a_numpy_kernel_returning_int64_says_int32(user_kernels):
    user_kernels("ArgmaxInInt64", "numpy", lambda x: np.argmax(x, -1))
    with pytest.warns(UserWarning, match=r"kernel 'ArgmaxInInt64' returned a int64 array.*converted to int32"):
        assert pe.run_kernel("ArgmaxInInt64", [pe.tensor([[1.0, 3.0]])]).tolist() == [1]


# ---- register_kernel: only for a backend that exists -------------------------------------------------------


def test_a_kernel_for_an_unknown_backend_is_refused_listing_the_known_ones():
    with pytest.raises(BackendError) as e:
        pe.register_kernel("Zz", "webgpuu", lambda x: x)
    message = str(e.value)
    assert "unknown backend 'webgpuu' (did you mean 'webgpu'?)" in message
    assert "the backends are: numpy, wasm, webgpu" in message and "pe.register_backend('webgpuu', factory)" in message
    assert ("Zz", "webgpuu") not in kernel_registry._KERNELS


def test_a_backend_defined_later_takes_kernels_once_it_is_registered(user_kernels):
    class Doubling(NumpyBackend):
        name = "doubling"

    with pytest.raises(BackendError, match="unknown backend 'doubling'"):
        pe.register_kernel("Neg", "doubling", lambda x: -x)
    pe.register_backend("doubling", Doubling)
    try:
        user_kernels("Neg", "doubling", lambda x: -2 * x)
        assert asyncio.run(pe.set_backend("doubling"))
        assert pe.neg(pe.tensor([1.0, -3.0])).tolist() == [-2.0, 6.0]
    finally:
        asyncio.run(pe.set_backend("numpy"))
        ENGINE.forget_backend("doubling")
        del ENGINE._factories["doubling"]


# ---- set_backend and warmup: coroutines that say so when they are not awaited ------------------------------


def test_set_backend_without_await_warns_at_the_callers_line_with_the_fix():
    with pytest.warns(RuntimeWarning) as said:
        pe.set_backend("numpy")  # dropped at once: the call did nothing
    (warning,) = said
    assert str(warning.message) == (
        "pe.set_backend('numpy') was never awaited, so it did nothing: run it with "
        "`asyncio.run(pe.set_backend('numpy'))` in a script, or `await pe.set_backend('numpy')` inside async code"
    )
    assert warning.filename == __file__
    assert linecache.getline(warning.filename, warning.lineno).strip().startswith('pe.set_backend("numpy")')


def test_warmup_without_await_warns_too():
    def forward():
        return pe.ones((2,)) + 1.0

    with pytest.warns(RuntimeWarning, match=r"^pe\.warmup\(.*forward\) was never awaited.*asyncio\.run\(pe\.warmup"):
        pe.warmup(forward)


def test_the_awaited_forms_run_and_say_nothing():
    async def in_async_code():
        started = await pe.set_backend("numpy")
        compiled = await asyncio.ensure_future(pe.warmup(lambda: pe.ones((2,)) * 2.0))
        return started, compiled, await asyncio.gather(pe.set_backend("numpy"))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(pe.set_backend("numpy")) is True
        assert asyncio.run(in_async_code()) == (True, 0, [True])
        pe.set_backend("numpy").close()  # closed on purpose: not a mistake to warn about


def test_in_the_page_the_fix_is_await(monkeypatch):
    monkeypatch.setattr(must_await, "IN_PYODIDE", True)
    with pytest.warns(RuntimeWarning) as said:
        pe.set_backend("webgpu")
    message = str(said[0].message)
    assert "`await pe.set_backend('webgpu')`" in message and "asyncio.run" not in message


# ---- the docs: one name for the uniform struct -------------------------------------------------------------


def test_the_docs_name_the_uniform_struct_as_programs_declare_it():
    program = pe.Program("Named", "", inputs=["x"], uniforms={"n": "u32", "shape": "u32[4]"}, dispatch=print)
    declared = program.shader(("float32",), (("out", "float32"),)).source
    struct_var = re.search(r"var<uniform> (\w+):", declared)[1]
    assert struct_var == "params" and f"fn {struct_var}_shape(" in declared
    for doc in ("custom_kernels.md", "backends.md"):
        text = (DOCS / doc).read_text()
        assert f"`{struct_var}`" in text and f"{struct_var}_shape(" in text, f"docs/{doc} does not name `{struct_var}`"
        other = sorted(set(re.findall(r"`(u\.\w+|u_\w+\()", text)))
        assert not other, f"docs/{doc} names the uniforms another way: {other}"
