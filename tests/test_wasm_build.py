"""The wasm backend's modules (one thread's, and the threads' on a shared memory, each plain and with relaxed SIMD):
rebuilt from source with the pinned Zig each is the committed file, byte for byte, the op codes the C reads are the
Python table's, only the relaxed modules have relaxed SIMD's instructions, and the build
(scripts/build_wasm_kernels.py) refuses a module that could write into the interpreter's memory on its own."""

import importlib.util
import re
from pathlib import Path

import pytest

from py_engine.backends.wasm import op_codes

REPO = Path(__file__).resolve().parent.parent


def load_build():
    spec = importlib.util.spec_from_file_location("build_wasm_kernels", REPO / "scripts" / "build_wasm_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wasm_kernels = load_build()
UnsafeModuleError, check, exports, sections = (
    wasm_kernels.UnsafeModuleError,
    wasm_kernels.check,
    wasm_kernels.exports,
    wasm_kernels.sections,
)

HEADER = b"\0asm\1\0\0\0"
MEMORY_IMPORT = b"\x02\x0f\x01\x03env\x06memory\x02\x00\x01"  # the import section: env.memory, one page or more
SHARED_IMPORT = b"\x02\x10\x01\x03env\x06memory\x02\x03\x01\x02"  # env.memory shared, 1 to 2 pages


def section(sid, payload):
    assert len(payload) < 128
    return bytes([sid, len(payload)]) + payload


MODULES = list(wasm_kernels.MODULES.items())
MODULE_NAMES = [path.name for path in wasm_kernels.MODULES]
RELAXED_MADD = b"\xfd\x85\x02"  # f32x4.relaxed_madd


@pytest.mark.parametrize(("committed", "variant"), MODULES, ids=MODULE_NAMES)
def test_rebuilding_the_module_gives_the_committed_bytes(tmp_path, committed, variant):
    shared, relaxed = variant
    rebuilt = wasm_kernels.build(tmp_path / committed.name, shared=shared, relaxed=relaxed)
    assert rebuilt == committed.read_bytes(), (
        f"{committed.name} is not what kernels/*.c build to: run .venv/bin/python scripts/build_wasm_kernels.py and "
        "commit the results"
    )


def test_the_op_code_header_is_generated_from_the_python_table():
    assert wasm_kernels.HEADER.read_text() == wasm_kernels.header(), (
        "kernels/op_codes.h is stale: run .venv/bin/python scripts/build_wasm_kernels.py and commit the results"
    )


def test_the_c_uses_the_generated_codes_and_declares_none_of_its_own():
    """The codes live in op_codes.py alone: a kernel that declared its own enum or number could drift from it."""
    generated = set(re.findall(r"^  (\w+) = ", wasm_kernels.header(), re.M)) | set(op_codes.CONSTANTS)
    used = set()
    for source in [*wasm_kernels.sources(), wasm_kernels.KERNELS / "simd.h"]:
        text = source.read_text()
        assert not re.search(r"^\s*enum\b|^#define\s+[A-Z_]+\s+\d", text, re.M), f"{source.name} declares codes itself"
        used |= set(re.findall(r"\b(?:ACT|BINARY|UNARY|FUSED)_[A-Z0-9_]+\b", text))
    assert used <= generated, f"codes the C uses that op_codes.py does not define: {sorted(used - generated)}"
    assert generated - used == set(), f"codes op_codes.py defines that no kernel reads: {sorted(generated - used)}"


def test_codes_that_share_a_c_switch_are_distinct():
    binary = [*op_codes.BINARY.values(), *op_codes.ACTIVATION_GRAD.values()]
    assert len(set(binary)) == len(binary), "binary() tells its ops and the activations' gradients apart by code"
    for table in (op_codes.ACTIVATIONS, op_codes.UNARY, op_codes.FUSED, op_codes.BINARY_I32):
        assert len(set(table.values())) == len(table)


@pytest.mark.parametrize(("committed", "variant"), MODULES, ids=MODULE_NAMES)
def test_the_committed_modules_import_only_the_memory_and_export_the_kernels(committed, variant):
    shared, _ = variant
    data = committed.read_bytes()
    check(data, shared)
    assert set(exports(data)) >= {"gemm", "pack_b", "conv2d", "depthwise", "pool", "binary", "fused_elementwise"}
    assert 6 not in sections(data) and 11 not in sections(data), "no globals, no data"


def test_the_build_and_the_backend_probe_relaxed_simd_with_the_same_module():
    from py_engine.backends.wasm import native

    assert wasm_kernels.RELAXED_PROBE == native.RELAXED_PROBE


def test_the_variants_export_the_same_kernels_and_only_the_relaxed_ones_fuse_multiply_adds():
    """The relaxed modules are the plain ones with MADD fused (the GEMM's tile, the depthwise convolutions'
    gradients): the same exports, and f32x4.relaxed_madd in the relaxed ones only."""
    names = {path: exports(path.read_bytes()) for path in wasm_kernels.MODULES}
    assert len({tuple(n) for n in names.values()}) == 1, names
    for path, (_, relaxed) in wasm_kernels.MODULES.items():
        count = path.read_bytes().count(RELAXED_MADD)
        assert (count >= 20) if relaxed else (count == 0), f"{path.name}: {count} relaxed_madd"


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
        wasm_kernels.build(tmp_path / "escapes.wasm", [source])
