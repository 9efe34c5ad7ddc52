"""Build the wasm backend's SIMD modules from py_engine/backends/wasm/kernels/*.c with the pinned Zig from PyPI, and
check that they are safe to run on Pyodide's own memory.

The module shares its heap with the Python interpreter, so it must bring nothing of its own into that memory: no
data segments (they would be copied over whatever lives at their addresses), no globals (a shadow-stack pointer is
one: a stack frame in memory would be written at an address nobody allocated), and no imports but the memory. The
build refuses a module that has any. The built files are committed beside their sources (the engine wheel carries
them); tests/test_wasm_build.py rebuilds them and checks that the bytes are the same, so the committed modules are
always the ones the sources and the pinned compiler make. `build` also compiles each in Node, which proves that no
code refers to a global (the module has none to refer to).

The op codes the C and the Python wrappers share come from one table, py_engine/backends/wasm/op_codes.py: the
build writes kernels/op_codes.h from it first.

The kernels are built four times, each family's C file into one module: kernels.wasm imports Pyodide's own memory;
kernels_shared.wasm (atomics, bulk memory) imports a shared memory, the one the backend's pool of workers runs the
same kernels on (threads.py); and each again with relaxed SIMD (kernels_relaxed.wasm, kernels_shared_relaxed.wasm),
where simd.h's MADD is f32x4.relaxed_madd, the one thing that differs (-ffp-contract=off: the compiler fuses no other
multiply and add). The backend runs the relaxed pair where the browser validates relaxed SIMD (native.simd).

    .venv/bin/python scripts/build_wasm_kernels.py     # after editing kernels/*.c or op_codes.py; commit the results
"""

import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

WASM = Path(__file__).resolve().parent.parent / "py_engine" / "backends" / "wasm"
KERNELS = WASM / "kernels"
OP_CODES = WASM / "op_codes.py"
HEADER = KERNELS / "op_codes.h"
MODULE = WASM / "kernels.wasm"
SHARED_MODULE = WASM / "kernels_shared.wasm"
RELAXED_MODULE = WASM / "kernels_relaxed.wasm"
SHARED_RELAXED_MODULE = WASM / "kernels_shared_relaxed.wasm"
MODULES = {  # path: (shared, relaxed)
    MODULE: (False, False),
    SHARED_MODULE: (True, False),
    RELAXED_MODULE: (False, True),
    SHARED_RELAXED_MODULE: (True, True),
}
SHARED_MAX_PAGES = 16384  # 1 GiB: a shared memory declares its maximum (static/wasm_pool.js creates it)
ZIG_VERSION = "0.17.0"  # pinned in pyproject.toml's dev extra (PyPI ziglang)
FLAGS = [
    "-target", "wasm32-freestanding",
    "-mcpu=generic+simd128",  # 128-bit SIMD; every browser with WebAssembly SIMD (Chrome 91+) runs it
    "-O3", "-nostdlib", "-s", "-Wall", "-Werror",
    "-ffp-contract=off",  # a multiply and an add stay two operations unless a kernel asks for MADD
    "-Wl,--no-entry",  # a library of kernels: each exported by export_name, nothing else (not the stack pointer)
    "-Wl,--import-memory",  # Pyodide's memory, so numpy arrays are read and written in place
    "-Wl,-z,stack-size=0",  # no shadow stack: a kernel that would need one fails check() instead
]  # fmt: skip
# the threads' variant: the same kernels on a shared memory (atomics and bulk memory are what wasm-ld needs for one)
SHARED_FEATURES, SHARED_LINK = "+atomics+bulk_memory", [
    "-Wl,--shared-memory", f"-Wl,--max-memory={SHARED_MAX_PAGES * 65536}",
]  # fmt: skip
RELAXED_FEATURES = "+relaxed_simd"  # Chrome 114+; V8 before 11.4 (Node 20) behind a flag
# a module whose one function is f32x4.relaxed_madd (py_engine/backends/wasm/native.py's probe)
RELAXED_PROBE = bytes.fromhex("0061736d0100000001080160037b7b7b017b030201000a0d010b00200020012002fd85020b")


def flags(shared=False, relaxed=False):
    """zig cc's flags for one of the four modules."""
    cpu = "-mcpu=generic+simd128" + (RELAXED_FEATURES if relaxed else "") + (SHARED_FEATURES if shared else "")
    return [*(cpu if f.startswith("-mcpu=") else f for f in FLAGS), *(SHARED_LINK if shared else [])]


# WebAssembly binary format: section ids, and the import kind of a memory
_IMPORT, _GLOBAL, _EXPORT, _START, _DATA, _DATA_COUNT = 2, 6, 7, 8, 11, 12
_MEMORY_KIND = 2
_SHARED = 2  # memory limits flag: shared


class UnsafeModuleError(ValueError):
    """The module would write into the interpreter's memory on its own, or imports more than the memory."""


def _uleb(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _name(data, at):
    size, at = _uleb(data, at)
    return data[at : at + size].decode(), at + size


def sections(data: bytes) -> dict:
    """{section id: payload bytes} of a WebAssembly module (custom sections, id 0, are left out)."""
    if data[:8] != b"\0asm\1\0\0\0":
        raise UnsafeModuleError("not a WebAssembly module (version 1)")
    found, at = {}, 8
    while at < len(data):
        sid = data[at]
        size, at = _uleb(data, at + 1)
        if sid:
            found[sid] = data[at : at + size]
        at += size
    return found


def exports(data: bytes) -> list[str]:
    """The names the module exports."""
    payload = sections(data).get(_EXPORT, b"")
    names, at = [], 0
    if payload:
        count, at = _uleb(payload, 0)
        for _ in range(count):
            name, at = _name(payload, at)
            _, at = _uleb(payload, at + 1)  # kind byte, then index
            names.append(name)
    return names


def without_unused_stack_pointer(data: bytes) -> bytes:
    """The module without its global section. wasm-ld always defines a `__stack_pointer` global, even when no code
    uses it (stack-size=0, and no kernel needs a frame in memory). Dropping the section keeps a module that uses it
    from validating at all, so a kernel that would need a shadow stack fails the build (validate) instead of
    writing at an address nobody allocated."""
    out, at = bytearray(data[:8]), 8
    while at < len(data):
        sid = data[at]
        size, start = _uleb(data, at + 1)
        if sid != _GLOBAL:
            out += data[at : start + size]
        at = start + size
    return bytes(out)


def validate(data: bytes, relaxed: bool = False) -> None:
    """Compile the module in Node (as a browser will); SystemExit with V8's message if it is not valid (or, for a
    relaxed module, if this Node's V8 does not know relaxed SIMD)."""
    import shutil

    node = shutil.which("node")
    if node is None:
        raise SystemExit("building the wasm kernels needs Node.js to validate the module")
    # relaxed SIMD is behind a flag in Node 20's V8 (a V8 that has shipped it ignores the flag)
    script = (
        "require('v8').setFlagsFromString('--experimental-wasm-relaxed-simd');"
        "new WebAssembly.Module(require('fs').readFileSync(0))"
    )
    done = subprocess.run([node, "-e", script], input=data, capture_output=True)
    if done.returncode and relaxed and subprocess.run([node, "-e", script], input=RELAXED_PROBE).returncode:
        version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
        raise SystemExit(
            f"Node {version} cannot validate the relaxed-SIMD modules (its V8 predates relaxed SIMD's final opcodes): "
            f"building them takes Node 20 or later\n{done.stderr.decode()}"
        )
    if done.returncode:
        raise SystemExit(
            f"the built module does not validate (a kernel uses the shadow stack?):\n{done.stderr.decode()}"
        )


def check(data: bytes, shared: bool = False) -> None:
    """Raise UnsafeModuleError unless the module's only import is env.memory (a shared one when `shared`) and it has no
    globals, data or start."""
    found = sections(data)
    for sid, what in ((_GLOBAL, "globals"), (_DATA, "data segments"), (_DATA_COUNT, "data segments")):
        if found.get(sid, b"\0")[0] != 0:
            raise UnsafeModuleError(f"the module has {what}: it would write into the interpreter's memory on its own")
    if _START in found:
        raise UnsafeModuleError("the module has a start function; it must do nothing until a kernel is called")
    payload = found.get(_IMPORT, b"\0")
    count, at = _uleb(payload, 0)
    imports, memory_flags = [], 0
    for _ in range(count):
        module, at = _name(payload, at)
        field, at = _name(payload, at)
        kind = payload[at]
        imports.append((module, field, kind))
        if kind == _MEMORY_KIND:  # limits: flags, min, [max]
            flags, at = _uleb(payload, at + 1)
            memory_flags = flags
            _, at = _uleb(payload, at)
            if flags & 1:
                _, at = _uleb(payload, at)
        else:
            break  # anything else is refused below
    if imports != [("env", "memory", _MEMORY_KIND)]:
        raise UnsafeModuleError(f"the module must import env.memory and nothing else; it imports {imports}")
    if bool(memory_flags & _SHARED) != shared:
        raise UnsafeModuleError(f"the module's memory must {'' if shared else 'not '}be shared")


def header() -> str:
    """kernels/op_codes.h: op_codes.py's tables as C enums, its constants as #defines."""
    spec = importlib.util.spec_from_file_location("op_codes", OP_CODES)  # the table alone, not the whole engine
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    lines = [
        "// Generated by scripts/build_wasm_kernels.py from py_engine/backends/wasm/op_codes.py: do not edit.",
        "",
        "#pragma once",
    ]
    for prefix, codes, suffix in table.ENUMS:
        lines += ["", "enum {"]
        lines += [f"  {prefix}_{_c_name(name)}{suffix} = {code}," for name, code in codes.items()]
        lines.append("};")
    lines.append("")
    lines += [f"#define {name} {value}" for name, value in table.CONSTANTS.items()]
    return "\n".join(lines) + "\n"


def _c_name(name):
    """RealDiv -> REAL_DIV, relu6 -> RELU6."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def sources() -> list[Path]:
    """The kernels' C files, one per family."""
    return sorted(KERNELS.glob("*.c"))


def build_all() -> dict[Path, int]:
    """The header written from op_codes.py, then the four modules rebuilt from the kernels' C: {path: size in bytes}."""
    HEADER.write_text(header())
    return {path: len(build(path, shared=shared, relaxed=relaxed)) for path, (shared, relaxed) in MODULES.items()}


def build(out: Path = MODULE, files: list[Path] | None = None, shared: bool = False, relaxed: bool = False) -> bytes:
    """Compile `files` (the kernels' C files) into one module at `out` with the pinned Zig (for a shared memory when
    `shared`, with relaxed SIMD when `relaxed`), check it, and return its bytes."""
    files = sources() if files is None else files
    try:
        import ziglang  # noqa: F401 - only to say what is missing
    except ImportError:
        raise SystemExit(
            f"building the wasm kernels needs PyPI ziglang=={ZIG_VERSION}: pip install -e '.[dev]'"
        ) from None
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "kernels.wasm"
        command = [
            sys.executable,
            "-m",
            "ziglang",
            "cc",
            *flags(shared, relaxed),
            "-o",
            str(target),
            *map(str, files),
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=files[0].parent)
        if done.returncode:
            raise SystemExit(f"zig cc failed:\n{done.stderr}")
        data = without_unused_stack_pointer(target.read_bytes())
    check(data, shared)
    validate(data, relaxed)
    Path(out).write_bytes(data)
    return data


if __name__ == "__main__":
    for path, size in build_all().items():
        print(f"{path}: {size} bytes")
