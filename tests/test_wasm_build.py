"""The wasm backend's modules (one thread's, and the threads' on a shared memory): rebuilt from source with the
pinned Zig each is the committed file, byte for byte, and the build refuses a module that could write into the
interpreter's memory on its own."""

import pytest

from app import wasm_kernels
from app.wasm_kernels import UnsafeModuleError, check, exports, sections

HEADER = b"\0asm\1\0\0\0"
MEMORY_IMPORT = b"\x02\x0f\x01\x03env\x06memory\x02\x00\x01"  # the import section: env.memory, one page or more
SHARED_IMPORT = b"\x02\x10\x01\x03env\x06memory\x02\x03\x01\x02"  # env.memory shared, 1 to 2 pages


def section(sid, payload):
    assert len(payload) < 128
    return bytes([sid, len(payload)]) + payload


@pytest.mark.parametrize("shared", [False, True])
def test_rebuilding_the_module_gives_the_committed_bytes(tmp_path, shared):
    committed = wasm_kernels.SHARED_MODULE if shared else wasm_kernels.MODULE
    rebuilt = wasm_kernels.build(tmp_path / committed.name, shared=shared)
    assert rebuilt == committed.read_bytes(), (
        f"{committed.name} is not what kernels.c builds to: run .venv/bin/python -m app build-wasm and commit them"
    )


@pytest.mark.parametrize("shared", [False, True])
def test_the_committed_modules_import_only_the_memory_and_export_the_kernels(shared):
    data = (wasm_kernels.SHARED_MODULE if shared else wasm_kernels.MODULE).read_bytes()
    check(data, shared)
    assert set(exports(data)) >= {"gemm", "pack_b", "conv2d", "depthwise", "pool", "binary", "fused_elementwise"}
    assert 6 not in sections(data) and 11 not in sections(data), "no globals, no data"


def test_a_module_with_only_the_memory_import_passes():
    check(HEADER + MEMORY_IMPORT)
    check(HEADER + SHARED_IMPORT, shared=True)


def test_the_threads_module_must_import_a_shared_memory_and_the_other_must_not():
    """The pool's workers can only share a memory declared shared; Pyodide's own memory is not."""
    with pytest.raises(UnsafeModuleError, match="must be shared"):
        check(HEADER + MEMORY_IMPORT, shared=True)
    with pytest.raises(UnsafeModuleError, match="must not be shared"):
        check(HEADER + SHARED_IMPORT)


@pytest.mark.parametrize(
    ("extra", "refusal"),
    [
        (section(6, b"\x01\x7f\x01\x41\x00\x0b"), "has globals"),  # one mutable i32 (a shadow-stack pointer)
        (section(11, b"\x01\x00\x41\x00\x0b\x01x"), "has data segments"),  # one byte written at address 0
    ],
)
def test_a_module_with_globals_or_data_is_refused(extra, refusal):
    with pytest.raises(UnsafeModuleError, match=refusal):
        check(HEADER + MEMORY_IMPORT + extra)


def test_a_module_importing_more_than_the_memory_is_refused():
    imports = section(2, b"\x02\x03env\x06memory\x02\x00\x01\x03env\x04seed\x03\x7f\x00")  # and an i32 global
    with pytest.raises(UnsafeModuleError, match="nothing else"):
        check(HEADER + imports)
    with pytest.raises(UnsafeModuleError, match="not a WebAssembly module"):
        check(b"\0asm\2\0\0\0")


def test_a_kernel_that_needs_a_stack_frame_in_memory_fails_the_build(tmp_path):
    """Its code would use the shadow-stack pointer, which the build drops: the module no longer validates."""
    source = tmp_path / "escapes.c"
    source.write_text(
        "void keep(float *p);\n"
        '__attribute__((export_name("sum"))) float sum(int n) {\n'
        "  float v[64]; keep(v); float s = 0; for (int i = 0; i < n && i < 64; i++) s += v[i]; return s; }\n"
        "__attribute__((noinline)) void keep(float *p) { for (int i = 0; i < 64; i++) p[i] = i; }\n"
    )
    with pytest.raises(SystemExit, match="does not validate"):
        wasm_kernels.build(tmp_path / "escapes.wasm", source)
