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
            if (name, backend) in pe.kernel_registry._KERNELS:
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


def test_without_a_synchronous_wait_the_compile_error_comes_with_the_next_readback(gpu_page):
    """Python entered synchronously cannot wait for the compiler: the bridge compiles without waiting and the
    compiler's messages come with the next readback, still as KernelCompileError."""
    report = gpu_page.run(
        """
        import py_engine.backends.webgpu.bridge_device as bridge_device

        source = "@compute @workgroup_size(1)\\nfn main() {\\n  out[0] = x[0] + missing_name;\\n}\\n"
        plan = lambda x: pe.Dispatch({"out": ((1,), "float32")}, 1)
        pe.register_kernel("SyncBroken", "webgpu", pe.Program("SyncBroken", source, inputs=["x"], dispatch=plan))
        can_run_sync, bridge_device.can_run_sync = bridge_device.can_run_sync, lambda: False
        try:
            y = pe.run_kernel("SyncBroken", [pe.ones((1,))])  # recorded: nothing has waited for the compiler yet
            try:
                await y.data()
                error = None
            except pe.KernelCompileError as e:
                error = str(e)
        finally:
            bridge_device.can_run_sync = can_run_sync
        after = (await pe.ones((2,)).data()).tolist()
        try:  # it was forgotten: this use compiles it again, waiting for the compiler this time
            pe.run_kernel("SyncBroken", [pe.ones((1,))])
            again = None
        except pe.KernelCompileError as e:
            again = str(e)
        finally:
            pe.unregister_kernel("SyncBroken", "webgpu")
        {"error": error, "after": after, "again": again}
        """
    )
    error = report["error"]
    assert error is not None and error.startswith("kernel 'SyncBroken': its WGSL shader 'SyncBroken:"), error
    assert ":3:19 error:" in error and "out[0] = x[0] + missing_name;" in error, error  # Tint quotes line 3
    assert report["after"] == [1.0, 1.0]  # the errors it caused were raised with it, none is left over
    assert report["again"] is not None and "missing_name" in report["again"], report["again"]
