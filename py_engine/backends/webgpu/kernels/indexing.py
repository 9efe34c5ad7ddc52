"""Indexing WGSL kernels: the strided slice that x[...] runs (shape.py's strided copy), and its gradient, whose
threads each find the dy element that came from their output element, or write 0; Where, Unique, ListDiff and the
sparse and ragged ones, on the host after a readback (host_kernel.py: their output's length depends on the values)."""

import functools

from ....kernel_registry import register_kernel
from ..host_kernel import on_host
from ..shader_layout import compose_linear_shader
from ..wgsl import ELEMENT, MAX_RANK, linear_groups
from ..wgsl import strides as contiguous_strides
from .shape import strided_copy


def _strided_slice(backend, x, begin, end, strides):
    # the op normalised the ranges: range(b, e, s) lists the indices taken (e == -1 with s < 0 reaches 0)
    xs = contiguous_strides(x.shape)
    shape = tuple(len(range(b, e, s)) for b, e, s in zip(begin, end, strides))
    base = sum(b * s for b, s in zip(begin, xs))
    return strided_copy(backend, x, shape, base, [(n, s * st, n) for n, s, st in zip(shape, strides, xs)])


register_kernel("StridedSlice", "webgpu", _strided_slice)


# ---- StridedSliceGrad: each output element finds the dy element that came from it, or is 0 ------------
@functools.cache
def _strided_slice_grad_shader(dtype):
    t = ELEMENT[dtype]
    body = f"""  var rest = i;
  var src = 0u;
  var scale = 1u;
  for (var step = 0u; step < u.rank; step = step + 1u) {{
    let d = u.rank - 1u - step;
    let c = i32(rest % u_shape(d));
    rest = rest / u_shape(d);
    let stride = u_strides(d);
    let offset = select(u_begin(d) - c, c - u_begin(d), stride > 0);  // >= 0 when reached
    let a = abs(stride);
    let n = u_dy_shape(d);
    if (offset < 0 || offset % a != 0 || u32(offset / a) >= n) {{ out[i] = {t}(0); return; }}
    src = src + u32(offset / a) * scale;
    scale = scale * n;
  }}
  out[i] = dy[src];"""
    uniforms = {"rank": "u32", "shape": f"u32[{MAX_RANK}]", "begin": f"i32[{MAX_RANK}]", "strides": f"i32[{MAX_RANK}]"}
    uniforms["dy_shape"] = f"u32[{MAX_RANK}]"
    return compose_linear_shader(f"StridedSliceGrad:{dtype}", body, [("dy", dtype)], [("out", dtype)], uniforms)


def _strided_slice_grad(backend, dy, shape, begin, end, strides):
    out = backend.empty(shape, dy.dtype)
    uniforms = {"count": out.size, "rank": len(shape), "shape": shape, "begin": begin, "strides": strides}
    uniforms["dy_shape"] = dy.shape
    backend.dispatch(_strided_slice_grad_shader(dy.dtype), [dy, out], uniforms, linear_groups(out.size))
    return out


register_kernel("StridedSliceGrad", "webgpu", _strided_slice_grad)
for _name in (
    "Where",
    "Unique",
    "ListDiff",
    "SparseFillEmptyRows",
    "SparseReshape",
    "RaggedRange",
    "RaggedGather",
    "RaggedTensorToTensor",
):
    register_kernel(_name, "webgpu", on_host(_name))
