"""User WGSL kernels (pe.Program): the example of docs/custom_kernels.md runs as written on numpy and webgpu,
compiler errors name the kernel and quote the compiler, pipelines are cached, and Program checks what it gets."""

import asyncio
import re
from pathlib import Path

import numpy as np
import pytest

import py_engine as pe
from py_engine import kernel_registry
from tests.gradcheck import check_gradients

DOC = Path(__file__).resolve().parent.parent / "docs" / "custom_kernels.md"
DOC_KERNELS = {"RowMaskedSoftmax": ("numpy", "webgpu"), "BrokenSoftmax": ("webgpu",)}


def doc_code():
    """The ```python blocks of docs/custom_kernels.md, in order, as one program."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    assert len(blocks) >= 5, f"docs/custom_kernels.md has {len(blocks)} python blocks; the walk-through has 5"
    return "\n".join(blocks)


@pytest.fixture
def doc_example():
    """The namespace the doc's code leaves; its kernels are unregistered afterwards (the coverage test wants
    every registered kernel to have conformance cases)."""
    namespace = {"__name__": "custom_kernels_doc"}
    try:
        yield namespace
    finally:
        for name, backends in DOC_KERNELS.items():
            for backend in backends:
                if (name, backend) in kernel_registry._KERNELS:
                    pe.unregister_kernel(name, backend)


def test_the_documented_example_runs_on_each_backend(each_backend, doc_example):
    exec(compile(doc_code(), str(DOC), "exec"), doc_example)
    # the example asserted its own results; on webgpu its compile-error block ran too
    assert ("compile_error" in doc_example) == (each_backend == "webgpu")
    if each_backend == "webgpu":
        assert "17 │" in doc_example["compile_error"], doc_example["compile_error"]  # naga quotes the line


def test_the_documented_kernel_has_the_right_gradient(each_backend, doc_example):
    exec(compile(doc_code(), str(DOC), "exec"), doc_example)
    mask = pe.tensor(np.random.default_rng(1).random((3, 6)) < 0.6)
    logits = np.random.default_rng(2).normal(size=(3, 6))
    check_gradients(lambda x: doc_example["row_masked_softmax"](x, mask), logits)
    pe.dispose(mask)


WGSL = """
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x >= params.n) { return; }
  out[id.x] = x[id.x] * params.factor + params.offset[id.x % 3u];
}
"""


def scale_dispatch(x, factor):
    uniforms = {"n": x.size, "factor": factor, "offset": [1, 2, 3]}
    return pe.Dispatch({"out": (x.shape, "float32")}, -(-x.size // 64), uniforms)


def scale_program(name="Scale", source=WGSL, dispatch=scale_dispatch):
    uniforms = {"n": "u32", "factor": "f32", "offset": "vec3<f32>"}
    return pe.Program(name, source, inputs=["x"], uniforms=uniforms, dispatch=dispatch)


def plan(outputs=None, workgroups=1, **uniforms):
    """A dispatch function returning these outputs (default: out like x), workgroups and uniforms (default: valid)."""
    values = {"n": 1, "factor": 1.0, "offset": [0, 0, 0], **uniforms}
    values = {k: v for k, v in values.items() if v is not None}
    return lambda x, factor: pe.Dispatch(outputs or {"out": (x.shape, "float32")}, workgroups, values)


@pytest.fixture
def registered():
    """register(name, program): the program as a webgpu kernel until the test ends."""
    names = []

    def register(name, program):
        pe.register_kernel(name, "webgpu", program)
        names.append(name)

    yield register
    for name in names:
        pe.unregister_kernel(name, "webgpu")


def webgpu():
    assert asyncio.run(pe.set_backend("webgpu")), pe.backend_info()["fallback_reason"]


def test_a_program_runs_with_its_uniforms_and_is_compiled_once(registered):
    webgpu()
    registered("Scale", scale_program())
    x = pe.tensor(np.arange(200, dtype=np.float32))
    y = pe.run_kernel("Scale", [x], {"factor": 0.5})
    np.testing.assert_array_equal(y.numpy(), np.arange(200) * 0.5 + np.array([1, 2, 3])[np.arange(200) % 3])
    compiles = pe.stats()["pipeline_compiles"]
    z = pe.run_kernel("Scale", [pe.reshape(x, (10, 20))], {"factor": 2.0})  # another shape, same pipeline
    assert z.shape == (10, 20) and pe.stats()["pipeline_compiles"] == compiles
    assert z.numpy()[1, 0] == 20 * 2.0 + 3  # element 20: 20 % 3 = 2
    pe.dispose([x, y, z])


def test_the_pipeline_cache_key_names_the_kernel_and_hashes_the_source():
    a, b = scale_program(), scale_program()
    c = scale_program(source=WGSL.replace("params.factor", "(params.factor + 1.0)"))
    key = a.shader(("float32",), (("out", "float32"),)).key
    assert key.startswith("Scale:") and key == b.shader(("float32",), (("out", "float32"),)).key
    assert key != c.shader(("float32",), (("out", "float32"),)).key
    assert key != a.shader(("int32",), (("out", "float32"),)).key  # the declarations are part of the source
    source = a.shader(("float32",), (("out", "float32"),)).source
    assert source.startswith(WGSL.rstrip())  # the user's lines keep their numbers
    assert "var<storage, read> x: array<f32>;" in source and "var<storage, read_write> out: array<f32>;" in source
    assert "struct Params { n: u32, factor: f32, offset: vec3<f32> }" in source


def test_a_shader_that_does_not_compile_names_the_kernel_and_the_line(registered):
    webgpu()
    registered("ScaleTypo", scale_program("ScaleTypo", WGSL.replace("params.factor", "params.factr")))
    x = pe.tensor(np.ones(5, np.float32))
    before = pe.memory().num_tensors
    with pytest.raises(pe.KernelCompileError) as raised:
        pe.run_kernel("ScaleTypo", [x], {"factor": 1.0})
    message = str(raised.value)
    assert message.startswith("kernel 'ScaleTypo': its WGSL shader 'ScaleTypo:")
    assert "factr" in message and "wgsl:5:" in message, message  # the line in the user's source
    assert raised.value.shader_key.startswith("ScaleTypo:") and "factr" in raised.value.compiler_message
    assert pe.memory().num_tensors == before  # the output it had allocated went back
    with pytest.raises(pe.KernelCompileError):  # still broken, still says so (nothing half-compiled was cached)
        pe.run_kernel("ScaleTypo", [x], {"factor": 1.0})
    pe.dispose(x)


def test_a_missing_entry_point_is_a_compile_error(registered):
    webgpu()
    registered("NoMain", scale_program("NoMain", WGSL.replace("fn main(", "fn start(")))
    x = pe.tensor(np.ones(3, np.float32))
    with pytest.raises(pe.KernelCompileError, match=r"(?s)kernel 'NoMain'.*entry point"):
        pe.run_kernel("NoMain", [x], {"factor": 1.0})
    pe.dispose(x)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: pe.Program("has space", WGSL, inputs=["x"], dispatch=scale_dispatch), "identifier"),
        (lambda: pe.Program("S", WGSL, inputs=["x", "x"], dispatch=scale_dispatch), "used twice"),
        (lambda: pe.Program("S", WGSL, inputs=["params"], dispatch=scale_dispatch), "used twice"),
        (lambda: pe.Program("S", WGSL, inputs=["x"], uniforms={"n": "u64"}, dispatch=scale_dispatch), "u64"),
        (
            lambda: pe.Program("S", WGSL, inputs=["x"], uniforms={"a": "array<vec4<u32>, 20>"}, dispatch=None),
            "function",
        ),
        (
            lambda: pe.Program(
                "S", WGSL, inputs=["x"], uniforms={"a": "array<vec4<u32>, 20>"}, dispatch=scale_dispatch
            ),
            "320 bytes",
        ),
    ],
)
def test_program_definitions_are_checked(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


@pytest.mark.parametrize(
    ("dispatch", "message"),
    [
        (lambda x, factor: {"out": (x.shape, "float32")}, "must return a pe.Dispatch"),
        (plan(outputs={"out": (3,)}), "(shape, dtype)"),
        (plan(outputs={"x": ((3,), "float32")}), "used twice"),
        (plan(outputs={"out": ((3,), "float64x")}), "unsupported dtype"),
        (plan(workgroups=(1, 1, 1, 1)), "1 to 3"),
        (plan(workgroups=-1), "1 to 3"),
        (plan(workgroups=2.0), "1 to 3"),
        (plan(offset=None), "missing uniform 'offset'"),
        (plan(n=-1), "u32 range"),
        (plan(factor="1"), "is f32"),
        (plan(offset=[0, 0, 0, 0]), "holds 3 values"),
    ],
)
def test_dispatch_plans_are_checked_before_anything_runs(registered, dispatch, message):
    webgpu()
    registered("Scale", scale_program(dispatch=dispatch))
    x = pe.tensor(np.ones(3, np.float32))
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        pe.run_kernel("Scale", [x], {"factor": 1.0})
    pe.dispose(x)


def test_run_kernel_checks_its_arguments(registered):
    webgpu()
    registered("Scale", scale_program())
    with pytest.raises(TypeError, match="input 0 must be a Tensor"):
        pe.run_kernel("Scale", [np.ones(3)], {"factor": 1.0})
    x = pe.tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="attrs must be a dict"):
        pe.run_kernel("Scale", [x], [("factor", 1.0)])
    with pytest.raises(ValueError, match=r"kernel 'Scale' takes 1 inputs \(x\), got 2"):
        pe.run_kernel("Scale", [x, x], {"factor": 1.0})
    asyncio.run(pe.set_backend("numpy"))
    with pytest.raises(pe.KernelNotFoundError, match="registered for: webgpu"):
        pe.run_kernel("Scale", [x], {"factor": 1.0})
    pe.dispose(x)


def test_an_empty_dispatch_records_nothing_and_gives_empty_outputs(registered):
    webgpu()
    registered("Scale", scale_program())
    x = pe.tensor(np.ones((0, 4), np.float32))
    dispatches = pe.stats()["dispatches"]
    y = pe.run_kernel("Scale", [x], {"factor": 1.0})
    assert y.shape == (0, 4) and y.numpy().shape == (0, 4)
    assert pe.stats()["dispatches"] == dispatches
    pe.dispose([x, y])


def test_an_output_starts_with_what_the_pools_last_user_left_as_the_docs_say(registered):
    """docs/custom_kernels.md: output buffers are not cleared, so a shader must write every element."""
    webgpu()
    first_only = WGSL.replace("out[id.x] = x[id.x] * params.factor + params.offset[id.x % 3u];", "out[0] = 1.0;")
    registered("FirstOnly", scale_program("FirstOnly", first_only))
    pe.release_pool()  # earlier tests' free buffers of this size would be handed out before `left`'s
    x = pe.tensor(np.zeros(64, np.float32))
    left = pe.fill((64,), 7.0)
    assert left.numpy()[0] == 7.0
    pe.dispose(left)  # its buffer goes back to the pool, sevens and all
    y = pe.run_kernel("FirstOnly", [x], {"factor": 1.0})
    values = y.numpy()
    assert values[0] == 1.0 and (values[1:] == 7.0).all()
    pe.dispose([x, y])
