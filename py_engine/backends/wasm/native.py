"""The SIMD module (kernels.wasm, built from kernels/*.c) instantiated on Pyodide's own memory, and the checks every
call into it passes first.

Where the browser has relaxed SIMD, the module is its relaxed variant (kernels_relaxed.wasm: the same C, the GEMM's
multiply-adds fused); `simd()` says which runs.

The module reads and writes numpy arrays where they are: an array's address in the interpreter's memory is a
pointer the module can use. So nothing is copied, and nothing may be wrong: each wrapper hands the module only
addresses of C-contiguous float32 (or int32) arrays whose sizes it has checked against what the kernel will touch,
and output and scratch arrays it allocated itself. The module keeps no views of the memory, so the memory may grow
between calls (and does, as numpy allocates).
"""

import functools
from importlib import resources
from types import SimpleNamespace

import numpy as np

F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
exports = None  # the module's exports once the backend has started (one module per interpreter: one memory)
# the kernel's log while pe.capture records one (backends/wasm/capture.py): every address, allocation and zeroing
# below is reported to it, and `exports` is its logging copy of the module's exports for that kernel
log = None


class Unavailable(RuntimeError):
    """The module cannot run here (not in Pyodide, no SIMD, a private API moved); the message says why."""


# A module whose one function is f32x4.relaxed_madd: it validates where WebAssembly has relaxed SIMD
# (type (v128 v128 v128) -> v128; body: local.get 0, 1, 2, f32x4.relaxed_madd (0xfd 0x105), end)
RELAXED_PROBE = bytes.fromhex(
    "0061736d01000000" "01080160037b7b7b017b" "03020100" "0a0d010b00200020012002fd85020b"
)  # fmt: skip


@functools.cache
def simd():
    """'relaxed' where this JavaScript's WebAssembly has relaxed SIMD (RELAXED_PROBE validates), else 'simd128'."""
    try:
        import js
        from pyodide.ffi import to_js
    except ImportError:
        return "simd128"
    return "relaxed" if js.WebAssembly.validate(to_js(RELAXED_PROBE)) else "simd128"


def module_name(shared=False):
    """The module file for this browser: kernels[_shared][_relaxed].wasm (shared: the threads' pool's)."""
    return f"kernels{'_shared' if shared else ''}{'_relaxed' if simd() == 'relaxed' else ''}.wasm"


def module_bytes():
    return resources.files(__package__).joinpath(module_name()).read_bytes()


def heap_memory():
    """The WebAssembly.Memory of the Pyodide this code runs in (private API, pinned Pyodide 0.27)."""
    try:
        import pyodide_js
    except ImportError:
        raise Unavailable(
            "the wasm backend runs where Pyodide runs (the page, or Node); in CPython use 'numpy' or 'webgpu'"
        ) from None
    resolve = getattr(pyodide_js._module, "resolveGlobalSymbol", None)
    if resolve is None:
        raise Unavailable("this Pyodide does not expose its WebAssembly memory (Module.resolveGlobalSymbol)")
    memory = resolve("memory").sym
    if memory is None or not memory.buffer.byteLength:
        raise Unavailable("this Pyodide's WebAssembly memory was not found (resolveGlobalSymbol('memory'))")
    return memory


def instantiate(data):
    """The module's exports, on the memory of the Pyodide this code runs in."""
    memory = heap_memory()
    import js
    from pyodide.ffi import to_js

    try:
        compiled = js.WebAssembly.Module.new(to_js(data))
    except Exception as e:  # a browser without WebAssembly SIMD rejects the module here
        raise Unavailable(
            f"the SIMD module did not compile here ({e}); does this browser have WebAssembly SIMD?"
        ) from e
    env = js.Object.new()
    env.memory = memory
    imports = js.Object.new()
    imports.env = env
    instance = js.WebAssembly.Instance.new(compiled, imports)
    # each export looked up once: a JS attribute lookup per call would cost more than the call (about 1 us)
    return SimpleNamespace(**{name: getattr(instance.exports, name) for name in js.Object.keys(instance.exports)})


# ---- what the wrappers pass -------------------------------------------------------------------------------------


def address(array, size, dtype=F32):
    """The address of `array`'s first element, after checking that the module may read or write `size` elements of
    `dtype` there: the array has that dtype, is C-contiguous and holds at least `size` elements."""
    if array.dtype != dtype or not array.flags.c_contiguous:
        raise ValueError(f"wasm kernel: expected a C-contiguous {dtype} array, got {array.dtype} {array.strides}")
    if array.size < size:
        raise ValueError(f"wasm kernel: the array has {array.size} elements, the kernel would touch {size}")
    if not size:
        return 0
    at = array.__array_interface__["data"][0]
    if log is not None:
        log.addressed(at, array)
    return at


def f32(array):
    """`array` as a C-contiguous float32 array (the same array when it already is one)."""
    return array if array.dtype == F32 and array.flags.c_contiguous else np.ascontiguousarray(array, F32)


def _made(array, constant=False):
    if log is not None:
        log.allocated(array, constant)
    return array


def out(shape, dtype=F32):
    """A new array for a kernel's output (float32 unless a kernel moves int32 too)."""
    return _made(np.empty(shape, dtype))


def aligned(size):
    """A new float32 array of `size` elements at an address divisible by 64 (a cache line): numpy's allocations in
    Pyodide are 8-byte aligned, and the GEMM's 16-byte loads of packed panels that straddle two lines cost it 5-10%."""
    raw = np.empty(size + 16, F32)
    skip = -raw.__array_interface__["data"][0] % 64 // 4
    return _made(raw[skip : skip + size])


def ints(values):
    """An int32 array of small parameters (a convolution's shape), passed by address."""
    return _made(np.array(values, I32), constant=True)


def floats(values):
    """A float32 array of constants (a mean's divisor), passed by address."""
    return _made(np.array(values, F32), constant=True)


def table(arrays, size):
    """A uint32 array of the addresses of `arrays` (each checked for `size` float32 elements), passed by address (a
    fused program's operands): a capture's program fills its own copy with its own arrays' addresses."""
    pointers = np.array([address(a, size) for a in arrays], np.uint32)
    if log is not None:
        log.tabled(pointers)
    return pointers


def zero(array):
    """Fill `array` (one the wrapper allocated) with zeros before the module accumulates into it: a captured kernel
    zeroes it again on every replay."""
    array.fill(0)
    if log is not None:
        log.zeroed(array)
