"""The public API in the page as in CPython (tests/test_public_api.py, tests/test_gpu_limits.py): a coroutine called
without `await` says to await it (asyncio.run has no place in the page), and a kernel past WebGPU's default workgroup
limits, which CPython refuses, is refused by the browser too."""

import pytest

WORKGROUP_PROGRAM = """
import warnings

def workgroup_program(name, size, floats):
    source = f'''
var<workgroup> scratch: array<f32, {floats}>;
@compute @workgroup_size({size})
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(local_invocation_index) i: u32) {{
  scratch[i] = 1.0;
  workgroupBarrier();
  if (id.x < params.n) {{ out[id.x] = scratch[i] + x[id.x]; }}
}}'''
    return pe.Program(name, source, inputs=["x"], uniforms={"n": "u32"},
                      dispatch=lambda x: pe.Dispatch({"out": (x.shape, "float32")}, -(-x.size // size), {"n": x.size}))

def outcome(size, floats):
    name = f"PageWorkgroup{size}x{floats}"
    pe.register_kernel(name, "webgpu", workgroup_program(name, size, floats))
    try:
        return pe.run_kernel(name, [pe.ones((300,))]).numpy()[:2].tolist()
    except pe.KernelCompileError as e:
        return "KernelCompileError: " + str(e)
    finally:
        pe.unregister_kernel(name, "webgpu")
"""


@pytest.mark.parametrize(
    ("size", "floats", "refused"),
    [(1024, 1024, True), (64, 8192, True), (256, 4096, False)],
)
def test_the_page_refuses_what_cpython_refuses(gpu_page, size, floats, refused):
    result = gpu_page.run(WORKGROUP_PROGRAM + f"\noutcome({size}, {floats})")
    if refused:
        assert isinstance(result, str) and result.startswith("KernelCompileError"), result
    else:
        assert result == [2.0, 2.0]


def test_a_coroutine_not_awaited_in_the_page_says_to_await_it(gpu_page):
    said = gpu_page.run(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pe.set_backend("numpy")
        [str(w.message) for w in caught]
        """
    )
    assert said == [
        "pe.set_backend('numpy') was never awaited, so it did nothing: run it with "
        "`await pe.set_backend('numpy')` (the playground's code may await at top level)"
    ]
    assert gpu_page.run("pe.get_backend()") == "webgpu"  # it did nothing indeed
