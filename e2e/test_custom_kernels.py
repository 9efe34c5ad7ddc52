"""User WGSL kernels in the page: the example of docs/custom_kernels.md runs there as written (Chrome's WebGPU),
a shader Tint rejects raises pe.KernelCompileError quoting getCompilationInfo()'s line, and the engine's own
sequence kernels (written with pe.Program) pass their conformance cases."""

import json

from tests.test_custom_kernels import DOC_KERNELS, doc_code

# the doc's code in a namespace of its own; its kernels are unregistered whatever happens
RUN_DOC = """
namespace = {{"__name__": "custom_kernels_doc"}}
try:
    exec(compile({code!r}, "docs/custom_kernels.md", "exec"), namespace)
    try:
        await pe.warmup(lambda: pe.run_kernel("BrokenSoftmax", [pe.zeros((2, 3)), pe.ones((2, 3), "bool")]))
        warmup_error = None
    except pe.KernelCompileError as e:
        warmup_error = str(e)
    readback = (await pe.ones((3,)).data()).tolist()  # no error of the rejected shaders is left to raise here
finally:
    for name, backends in {kernels!r}.items():
        for backend in backends:
            if (name, backend) in pe.kernels._KERNELS:
                pe.unregister_kernel(name, backend)
{{"backend": pe.get_backend(), "compile_error": namespace.get("compile_error"), "warmup_error": warmup_error,
 "readback": readback}}
"""


def test_the_documented_example_runs_in_the_page(gpu_page):
    report = gpu_page.run(RUN_DOC.format(code=doc_code(), kernels=DOC_KERNELS))
    print("compile error in the page:", report["compile_error"])
    assert report["backend"] == "webgpu"
    error = report["compile_error"]
    assert error.startswith("kernel 'BrokenSoftmax': its WGSL shader 'BrokenSoftmax:"), error
    # Tint's message through getCompilationInfo(): line:column, then that line of the source quoted
    assert "\n17:" in error and "expp" in error, error
    assert "    17 |     if (mask[start + i] != 0u) { total = total + expp(" in error, error
    assert report["warmup_error"] is not None and "expp" in report["warmup_error"], report["warmup_error"]
    assert report["readback"] == [1.0, 1.0, 1.0]


def test_the_sequence_kernels_pass_their_conformance_cases_in_the_page(gpu_page):
    report = gpu_page.run(
        """
        from py_engine.testing.conformance import SUITES, run_suite
        await run_suite("webgpu", SUITES["sequence"])
        """,
        timeout_s=600,
    )
    assert report["failed"] == {}, json.dumps(report["failed"], indent=1)[:20000]
    assert report["passed"] > 30
