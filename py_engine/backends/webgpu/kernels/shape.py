"""Shape WGSL kernels: transpose, slice, reverse, tile (one strided-copy shader, which indexing.py's strided
slice runs too), pad, concat, gather, unsorted segment sum and broadcast_to. Every dtype runs (bool lives as u32).

Transpose, Slice, StridedSlice, Reverse and Tile are all out[i] = x[base + sum_d (c_d % period_d) * stride_d]
over the output coordinates c_d: the kernel works out base, strides and periods (Tile's wrap) on the CPU, drops
size-1 axes and merges axes that stay contiguous in x, so e.g. a row slice is a rank-1 copy.

Gather and GatherNd write 0 where an index is out of range (numpy raises; TensorFlow on GPUs also writes 0).
"""

import functools
import itertools
import math

from ....kernel_registry import register_kernel
from ..shader_layout import compose_linear_shader
from ..wgsl import ELEMENT, MAX_RANK, linear_groups
from ..wgsl import strides as contiguous_strides
from .math import run_elementwise

F32, I32, BOOL = "float32", "int32", "bool"
CONCAT_INPUTS = 7  # inputs per Concat dispatch: with the output, 8 storage buffers (WebGPU's default limit)

# ---- strided copy: Transpose, Slice, Reverse, Tile (and indexing.py's StridedSlice) ----------------------------------
COPY_UNIFORMS = {"rank": "u32", "base": "i32", "shape": f"u32[{MAX_RANK}]", "strides": f"i32[{MAX_RANK}]"}


@functools.cache
def _copy_shader(dtype, wrap):
    coord = "c % u_periods(d)" if wrap else "c"
    body = f"""  var rest = i;
  var src = u.base;
  for (var step = 0u; step < u.rank; step = step + 1u) {{
    let d = u.rank - 1u - step;
    let c = rest % u_shape(d);
    rest = rest / u_shape(d);
    src = src + i32({coord}) * u_strides(d);
  }}
  out[i] = x[u32(src)];"""
    uniforms = COPY_UNIFORMS | ({"periods": f"u32[{MAX_RANK}]"} if wrap else {})
    return compose_linear_shader(
        f"StridedCopy:{dtype}:{'wrap' if wrap else 'plain'}", body, [("x", dtype)], [("out", dtype)], uniforms
    )


def _collapse(axes):
    """(size, stride, period) per output axis with size-1 axes dropped and neighbours merged where x's elements
    stay evenly spaced across both (the inner axis must not wrap)."""
    out = []
    for size, stride, period in axes:
        if size == 1:
            continue
        if out and period == size and out[-1][1] == stride * size:
            outer = out.pop()
            out.append((outer[0] * size, stride, outer[2] * size))
        else:
            out.append((size, stride, period))
    return out


def strided_copy(backend, x, shape, base, axes):
    """out (shape) from x at base + sum of coordinate * stride; axes: (size, stride, period) per output axis."""
    out = backend.empty(shape, x.dtype)
    axes = _collapse(axes)
    wrap = any(period != size for size, _, period in axes)
    sizes, strides, periods = zip(*axes) if axes else ((), (), ())
    uniforms = {"count": out.size, "rank": len(axes), "base": base, "shape": sizes, "strides": strides}
    if wrap:
        uniforms["periods"] = periods
    backend.dispatch(_copy_shader(x.dtype, wrap), [x, out], uniforms, linear_groups(out.size))
    return out


def _transpose(backend, x, perm):
    xs = contiguous_strides(x.shape)
    shape = tuple(x.shape[a] for a in perm)
    return strided_copy(backend, x, shape, 0, [(x.shape[a], xs[a], x.shape[a]) for a in perm])


def _slice(backend, x, begin, size):
    xs = contiguous_strides(x.shape)
    base = sum(b * s for b, s in zip(begin, xs))
    return strided_copy(backend, x, size, base, [(n, s, n) for n, s in zip(size, xs)])


def _reverse(backend, x, axis):
    xs = contiguous_strides(x.shape)
    base = sum((x.shape[a] - 1) * xs[a] for a in axis)
    axes = [(n, -s if a in axis else s, n) for a, (n, s) in enumerate(zip(x.shape, xs))]
    return strided_copy(backend, x, x.shape, base, axes)


def _tile(backend, x, reps):
    xs = contiguous_strides(x.shape)
    shape = tuple(n * r for n, r in zip(x.shape, reps))
    return strided_copy(backend, x, shape, 0, [(n * r, s, n) for n, r, s in zip(x.shape, reps, xs)])


register_kernel("Transpose", "webgpu", _transpose)
register_kernel("Slice", "webgpu", _slice)
register_kernel("Reverse", "webgpu", _reverse)
register_kernel("Tile", "webgpu", _tile)

# ---- Pad ------------------------------------------------------------------------------------------
VALUE_TYPE = {F32: "f32", I32: "i32", BOOL: "u32"}


@functools.cache
def _pad_shader(dtype):
    body = """  var rest = i;
  var src = 0u;
  var scale = 1u;
  for (var step = 0u; step < u.rank; step = step + 1u) {
    let d = u.rank - 1u - step;
    let n = u_in_shape(d);
    let k = i32(rest % u_out_shape(d)) - i32(u_before(d));
    rest = rest / u_out_shape(d);
    if (k < 0 || k >= i32(n)) { out[i] = u.value; return; }
    src = src + u32(k) * scale;
    scale = scale * n;
  }
  out[i] = x[src];"""
    uniforms = {"rank": "u32", "value": VALUE_TYPE[dtype]}
    uniforms |= dict.fromkeys(("out_shape", "in_shape", "before"), f"u32[{MAX_RANK}]")
    return compose_linear_shader(f"Pad:{dtype}", body, [("x", dtype)], [("out", dtype)], uniforms)


def _pad(backend, x, paddings, constant_value):
    shape = tuple(n + a + b for n, (a, b) in zip(x.shape, paddings))
    out = backend.empty(shape, x.dtype)
    axes = []  # (out size, x size, before); an unpadded axis folds into the axis before it
    for (a, b), n in zip(paddings, x.shape):
        if n + a + b == 1:
            continue
        if axes and a == b == 0:
            o, m, before = axes.pop()
            axes.append((o * n, m * n, before * n))
        else:
            axes.append((n + a + b, n, a))
    value = float(constant_value) if x.dtype == F32 else int(constant_value)
    out_shape, in_shape, before = zip(*axes) if axes else ((), (), ())
    uniforms = {"count": out.size, "rank": len(axes), "value": value, "out_shape": out_shape, "in_shape": in_shape}
    uniforms["before"] = before
    backend.dispatch(_pad_shader(x.dtype), [x, out], uniforms, linear_groups(out.size))
    return out


register_kernel("Pad", "webgpu", _pad)


# ---- Concat: up to CONCAT_INPUTS inputs per dispatch, each writing its block of the output --------------
# x viewed as (outer, axis, inner); a dispatch writes the chunk of the output axis from `offset` on, `ends` and
# `lens` are each input's end within the chunk and its length
CONCAT_UNIFORMS = {
    **dict.fromkeys(("inner", "chunk_len", "out_len", "offset"), "u32"),
    **dict.fromkeys(("ends", "lens"), f"u32[{CONCAT_INPUTS}]"),
}


@functools.cache
def _concat_shader(dtype, n):
    picks = []
    for k in range(n):
        start = f"u_ends({k - 1}u)" if k else "0u"
        load = f"v = in{k}[(o * u_lens({k}u) + a - {start}) * inner + r];"
        picks.append(f"{{ {load} }}" if k == n - 1 else f"if (a < u_ends({k}u)) {{ {load} }}")
    body = f"""  let inner = u.inner;
  let r = i % inner;
  let a = (i / inner) % u.chunk_len;
  let o = i / inner / u.chunk_len;
  var v: {ELEMENT[dtype]};
  {" else ".join(picks)}
  out[(o * u.out_len + u.offset + a) * inner + r] = v;"""
    ins = [(f"in{k}", dtype) for k in range(n)]
    return compose_linear_shader(f"Concat:{dtype}:{n}", body, ins, [("out", dtype)], CONCAT_UNIFORMS)


def _concat(backend, *xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = backend.empty(shape, xs[0].dtype)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    offsets, at = [], 0
    for x in xs:
        offsets.append(at)
        at += x.shape[axis]
    parts = [(x, off) for x, off in zip(xs, offsets) if x.size]  # empty inputs add nothing
    for c in range(0, len(parts), CONCAT_INPUTS):
        chunk = parts[c : c + CONCAT_INPUTS]
        lens = [x.shape[axis] for x, _ in chunk]
        ends = list(itertools.accumulate(lens))
        count = outer * ends[-1] * inner
        uniforms = {"count": count, "inner": inner, "chunk_len": ends[-1], "out_len": shape[axis]}
        uniforms |= {"offset": chunk[0][1], "ends": ends, "lens": lens}
        shader = _concat_shader(out.dtype, len(chunk))
        backend.dispatch(shader, [x for x, _ in chunk] + [out], uniforms, linear_groups(count))
    return out


register_kernel("Concat", "webgpu", _concat)

# ---- Gather: x as (batch, p, n, q), indices as (batch, m), out as (batch, p, m, q) ----------------------


@functools.cache
def _gather_shader(dtype):
    body = f"""  let p = u.p; let m = u.m; let q = u.q; let n = u.n;
  let col = i % q;
  let j = (i / q) % m;
  let row = i / q / m;  // batch * p + the position in p
  let index = indices[(row / p) * m + j];
  if (index < 0 || u32(index) >= n) {{ out[i] = {ELEMENT[dtype]}(0); return; }}
  out[i] = x[(row * n + u32(index)) * q + col];"""
    uniforms = dict.fromkeys("pmqn", "u32")
    return compose_linear_shader(f"Gather:{dtype}", body, [("x", dtype), ("indices", I32)], [("out", dtype)], uniforms)


def _gather(backend, x, indices, axis, batch_dims):
    shape = x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis + 1 :]
    out = backend.empty(shape, x.dtype)
    p = math.prod(x.shape[batch_dims:axis])
    m, q = math.prod(indices.shape[batch_dims:]), math.prod(x.shape[axis + 1 :])
    uniforms = {"count": out.size, "p": p, "m": m, "q": q, "n": x.shape[axis]}
    backend.dispatch(_gather_shader(x.dtype), [x, indices, out], uniforms, linear_groups(out.size))
    return out


register_kernel("Gather", "webgpu", _gather)

# ---- GatherNd: x as (rows of its first k axes, q), indices as (m, k), out as (m, q) -----------------------------


@functools.cache
def _gather_nd_shader(dtype):
    body = f"""  let q = u.q;
  let row = i / q;
  var src = 0u;
  for (var d = 0u; d < u.k; d = d + 1u) {{
    let index = indices[row * u.k + d];
    if (index < 0 || u32(index) >= u_dims(d)) {{ out[i] = {ELEMENT[dtype]}(0); return; }}
    src = src * u_dims(d) + u32(index);
  }}
  out[i] = x[src * q + i % q];"""
    uniforms = {"q": "u32", "k": "u32", "dims": f"u32[{MAX_RANK}]"}
    ins = [("x", dtype), ("indices", I32)]
    return compose_linear_shader(f"GatherNd:{dtype}", body, ins, [("out", dtype)], uniforms)


def _gather_nd(backend, x, indices):
    k = indices.shape[-1]
    out = backend.empty(indices.shape[:-1] + x.shape[k:], x.dtype)
    uniforms = {"count": out.size, "q": math.prod(x.shape[k:]), "k": k, "dims": x.shape[:k]}
    backend.dispatch(_gather_nd_shader(x.dtype), [x, indices, out], uniforms, linear_groups(out.size))
    return out


register_kernel("GatherNd", "webgpu", _gather_nd)

# ---- UnsortedSegmentSum: one thread per output element adds, in row order, the rows with its id ----------
# No float atomics in WGSL; the cost is (segments * row size) threads times the number of rows.


@functools.cache
def _segment_sum_shader(dtype):
    body = f"""  let size = u.row_size;
  let segment = i32(i / size);
  let col = i % size;
  var total = {ELEMENT[dtype]}(0);
  for (var k = 0u; k < u.rows; k = k + 1u) {{
    if (ids[k] == segment) {{ total = total + data[k * size + col]; }}
  }}
  out[i] = total;"""
    ins, uniforms = [("data", dtype), ("ids", I32)], {"row_size": "u32", "rows": "u32"}
    return compose_linear_shader(f"UnsortedSegmentSum:{dtype}", body, ins, [("out", dtype)], uniforms)


def _unsorted_segment_sum(backend, data, segment_ids, num_segments):
    rest = data.shape[len(segment_ids.shape) :]
    out = backend.empty((num_segments, *rest), data.dtype)
    uniforms = {"count": out.size, "row_size": math.prod(rest), "rows": segment_ids.size}
    backend.dispatch(_segment_sum_shader(data.dtype), [data, segment_ids, out], uniforms, linear_groups(out.size))
    return out


register_kernel("UnsortedSegmentSum", "webgpu", _unsorted_segment_sum)


# ---- BroadcastTo: the elementwise copy, which reads a host scalar as a uniform ---------------------------
def _broadcast_to(backend, x, shape):
    return run_elementwise(backend, "BroadcastTo", "x", [x], tuple(shape), x.dtype)


register_kernel("BroadcastTo", "webgpu", _broadcast_to)

# the kernels that read a host scalar as a uniform (see math.py)
TAKES_HOST_SCALARS = frozenset({_broadcast_to})
