"""Elementwise kernels on the SIMD module: binary ops with a scalar, a repeated trailing block (a bias), a column
against a row (an outer broadcast) or one value per row (a loss's divisions), int32 Add, Sub, Mul, FloorDiv and Mod
(numpy's values), unary ops, log, clip and its gradient, the activations' gradients, Equal of same-shape float32
arrays (numpy's bool bytes), casts of int32 and bool arrays to float32 (rounded as numpy's astype), float16 weights
widened to float32 as a model loads, and ops.elementwise_rules's programs (the optimizers' update rules) in one pass.

Small arrays run the numpy kernels: below SMALL elements the checks and the call cost more than the loop saves.
While a capture records them they take the module's path too (`runs_numpy`): a replay's native step costs the call
only (1-2 us), not the wrapper's Python. Every native op computes what numpy's does, bit for bit (IEEE add,
subtract, multiply, divide, sqrt, min, max), but the sigmoid (its own e^x) and the log (within an ulp or two): they
run on the module at every size, as numpy's np.exp and divisions cost more than the call (measured in Node: 8
elements 12.4 us against 8.6, 256 elements 17.5 against 8.9), so captured or not they give the same values.
"""

import math

import numpy as np

from .... import dtypes
from ....kernel_registry import register_kernel
from ...numpy.kernels import math as numpy_math
from .. import native, threads
from ..native import F32, I32, address
from ..op_codes import ACTIVATION_GRAD, BINARY, BINARY_I32, FUSED, FUSED_CHUNK, UNARY

F16 = np.dtype("<f2")
SMALL = 4096
SIGMOID = UNARY["Sigmoid"]


def runs_numpy(n):
    """Whether an op of n elements runs numpy's kernel: empty, or below SMALL except while a capture records it."""
    return not n or (n < SMALL and native.log is None)


def _repeats(shape, out_shape, n):
    """How many elements an operand of `shape` holds as the module reads it: n, 1, or its size when it is a trailing
    block of the output repeated (a bias); None for any other broadcast."""
    size = math.prod(shape)
    if size in (n, 1):
        return size
    core = tuple(shape[next((i for i, d in enumerate(shape) if d != 1), len(shape)) :])
    return size if core == tuple(out_shape[len(out_shape) - len(core) :]) else None


def _run_binary(code, a, b):
    """The module's binary op, or None where it does not apply (the caller runs numpy's)."""
    # an output of SMALL elements or more has an operand that large (the module's broadcasts repeat a scalar or a
    # trailing block), so this test alone settles small ops, without broadcast_shapes (about 5 us)
    if a.dtype != F32 or b.dtype != F32 or (runs_numpy(a.size) and runs_numpy(b.size)):
        return None
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    n = math.prod(out_shape)
    if runs_numpy(n):
        return None
    na, nb = _repeats(a.shape, out_shape, n), _repeats(b.shape, out_shape, n)
    if na is None or nb is None or (na not in (1, n) and nb not in (1, n)):
        y = _run_outer(code, a, b, out_shape, n)
        return _run_row_values(code, a, b, out_shape, n) if y is None else y
    a, b = native.f32(a), native.f32(b)
    y = native.out(out_shape)
    # the pool where the operands of n elements are there (a repeated one, a scale or a bias, is copied in)
    pool = threads.in_place(n, *(x for x, size in ((a, na), (b, nb)) if size == n)) if n in (na, nb) else None
    if pool and threads.binary(pool, code, a, na, b, nb, y) is not None:
        return y
    native.exports.binary(code, address(a, na), na, address(b, nb), nb, address(y, n), n)
    return y


def _run_outer(code, a, b, out_shape, n):
    """The module's outer broadcast of a column (shape (..., 1)) and a row (shape (1, ..., J)), or None."""
    j = out_shape[-1] if out_shape else 0
    for col, row, col_left in ((a, b, 1), (b, a, 0)):
        if col.shape[-1:] == (1,) and col.size * j == n and row.size == j and row.shape[-1:] == (j,):
            col, row = native.f32(col), native.f32(row)
            y = native.out(out_shape)
            native.exports.binary_outer(
                code, address(col, col.size), col.size, address(row, j), j, col_left, address(y, n)
            )
            return y
    return None


def _run_row_values(code, a, b, out_shape, n):
    """The module's op of a matrix (n values) and one value per row (shape (..., 1): a probability divided by its
    row's sum, a loss's steps), or None."""
    j = out_shape[-1] if out_shape else 0
    for col, x, col_left in ((a, b, 1), (b, a, 0)):
        if x.size == n and col.shape[-1:] == (1,) and col.shape[:-1] == out_shape[len(out_shape) - col.ndim : -1]:
            col, x = native.f32(col), native.f32(x)
            y = native.out(out_shape)
            rows = n // j
            native.exports.binary_row_values(code, address(x, n), rows, j, address(col, rows), col_left, address(y, n))
            return y
    return None


def _run_binary_i32(code, a, b):
    """The module's int32 op of same-shape operands or one against a scalar, or None (the caller runs numpy's)."""
    if b.dtype != I32 or (runs_numpy(a.size) and runs_numpy(b.size)):
        return None
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    n = math.prod(out_shape)
    if runs_numpy(n) or a.size not in (1, n) or b.size not in (1, n):
        return None
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    y = native.out(out_shape, I32)
    native.exports.binary_i32(
        code, address(a, a.size, I32), a.size, address(b, b.size, I32), b.size, address(y, n, I32), n
    )
    return y


def _binary(name):
    code, code_i32, fallback = BINARY.get(name), BINARY_I32.get(name), numpy_math.BINARY[name]

    def kernel(a, b):
        if a.dtype == I32:
            y = None if code_i32 is None else _run_binary_i32(code_i32, a, b)
        else:
            y = None if code is None else _run_binary(code, a, b)
        return fallback(a, b) if y is None else y

    return kernel


def _unary(name):
    code, fallback = UNARY[name], numpy_math.UNARY[name]

    def kernel(x):
        if x.dtype != F32 or (not x.size if code == SIGMOID else runs_numpy(x.size)):
            return fallback(x)
        x = native.f32(x)
        y = native.out(x.shape)
        pool = threads.in_place(x.size, x)
        if pool and threads.unary(pool, code, x, y) is not None:
            return y
        native.exports.unary(code, address(x, x.size), address(y, y.size), x.size)
        return y

    return kernel


def _log(x):
    """ln x on the module at every size (its own, within an ulp or two of numpy's, as the sigmoid), so a captured
    step's values are those of the same step run op by op."""
    if x.dtype != F32 or not x.size:
        return numpy_math.UNARY["Log"](x)
    x = native.f32(x)
    y = native.out(x.shape)
    native.exports.log_values(address(x, x.size), address(y, y.size), x.size)
    return y


def _clip(x, lo, hi):
    """numpy's clip of a float32 array on the module (a loss's probabilities; at SMALL elements or while recorded)."""
    if x.dtype != F32 or runs_numpy(x.size):
        return numpy_math.clip_by_value(x, lo, hi)
    x = native.f32(x)
    y = native.out(x.shape)
    native.exports.clip(address(x, x.size), lo, hi, address(y, y.size), x.size)
    return y


def _clip_grad(dy, x, lo, hi):
    if runs_numpy(x.size):
        return numpy_math.clip_by_value_grad(dy, x, lo, hi)
    dy, x = native.f32(dy), native.f32(x)
    y = native.out(x.shape)
    native.exports.clip_grad(address(dy, dy.size), address(x, x.size), lo, hi, address(y, y.size), x.size)
    return y


def _activation_grad(dy, y, activation):
    code = ACTIVATION_GRAD.get(activation)
    out = _run_binary(code, dy, y) if code is not None and dy.shape == y.shape else None
    return numpy_math.ACTIVATION_GRAD[activation](dy, y) if out is None else out


_programs = {}  # elementwise_rules.TracedRule -> (its steps' codes, its outputs), or None when a step has no native op


def _compiled(program):
    if program not in _programs:
        steps = []
        for name, args in program.steps:
            if name not in FUSED:
                _programs[program] = None
                return None
            steps += [FUSED[name], args[0], args[-1]]
        _programs[program] = (steps, list(program.outputs))
    return _programs[program]


def _fused(*arrays, program):
    tensors = arrays[: program.tensors]
    compiled = _compiled(program)
    shape = tensors[0].shape
    if compiled is None or runs_numpy(tensors[0].size) or any(t.dtype != F32 or t.shape != shape for t in tensors):
        return numpy_math.fused_elementwise(*arrays, program=program)
    steps, outputs = (native.ints(codes) for codes in compiled)  # each call's own: a captured step's constants
    n = tensors[0].size
    tensors = [native.f32(t) for t in tensors]
    scalars = native.f32(arrays[program.tensors]) if program.scalars else native.out(1)
    results = [native.out(shape) for _ in program.outputs]
    values = program.tensors + program.scalars + len(program.steps)
    rows = math.prod(shape[:-2])  # an image's rows (a 4-d activation): the parts the threads share
    pool = threads.in_place(n, *tensors) if rows > 1 else None
    if pool:
        split = threads.fused(
            pool,
            steps,
            len(program.steps),
            tensors,
            scalars,
            program.scalars,
            outputs,
            results,
            values * FUSED_CHUNK,
            rows,
        )
        if split is not None:
            return split
    pointers = native.table(tensors + results, n)
    scratch = native.out(values * FUSED_CHUNK)
    native.exports.fused_elementwise(
        address(steps, steps.size, native.I32), len(program.steps), address(pointers, pointers.size, pointers.dtype),
        program.tensors, address(scalars, program.scalars), program.scalars, address(outputs, outputs.size, native.I32),
        len(outputs), address(scratch, scratch.size), n,
    )  # fmt: skip
    return tuple(results)


def _equal(a, b):
    if a.dtype != F32 or b.dtype != F32 or a.shape != b.shape or runs_numpy(a.size):
        return numpy_math.BINARY["Equal"](a, b)
    a, b = native.f32(a), native.f32(b)
    out = native.out(a.shape, np.dtype(np.bool_))
    native.exports.equal(address(a, a.size), address(b, b.size), address(out, out.size, out.dtype), a.size)
    return out


def _cast(x, dtype):
    from_bytes = x.dtype in (np.bool_, np.uint8)
    if dtype != "float32" or not (from_bytes or x.dtype == I32) or not x.flags.c_contiguous or runs_numpy(x.size):
        return numpy_math.cast(x, dtype)
    out = native.out(x.shape)
    native.exports.to_f32(address(x, x.size, x.dtype), int(from_bytes), address(out, x.size), x.size)
    return out


def widen_float16(x):
    """A float16 array's values as float32, the bits numpy's astype gives (every half is a float32): one SIMD pass on
    the module where it runs (numpy in Pyodide converts one value at a time), else numpy's astype."""
    if native.exports is None or not x.flags.c_contiguous:
        return x.astype(F32)
    out = np.empty(x.shape, F32)
    native.exports.f16_to_f32(address(x, x.size, F16), address(out, x.size), x.size)
    return out


dtypes.widen_float16 = widen_float16  # a graph model's float16 weights, loaded on any backend

for _name in {**BINARY, **BINARY_I32}:
    register_kernel(_name, "wasm", _binary(_name))
for _name in UNARY:
    register_kernel(_name, "wasm", _unary(_name))
register_kernel("ActivationGrad", "wasm", _activation_grad)
register_kernel("Log", "wasm", _log)
register_kernel("ClipByValue", "wasm", _clip)
register_kernel("ClipByValueGrad", "wasm", _clip_grad)
register_kernel("Equal", "wasm", _equal)
register_kernel("Cast", "wasm", _cast)
register_kernel("FusedElementwise", "wasm", _fused)
