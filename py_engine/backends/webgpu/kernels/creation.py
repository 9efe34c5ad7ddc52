"""Creation WGSL kernels: fill and one_hot, one thread per output element."""

import functools

from ....kernel_registry import register_kernel
from ..shader_layout import compose_linear_shader
from ..wgsl import linear_groups
from .math import F32, I32, SCALAR_TYPE


@functools.cache
def _fill_shader(dtype):
    return compose_linear_shader(
        f"Fill:{dtype}", "  out[i] = u.value;", [], [("out", dtype)], {"value": SCALAR_TYPE[dtype]}
    )


def _fill(backend, shape, value, dtype):
    out = backend.empty(shape, dtype)
    v = float(value) if dtype == F32 else int(value)
    backend.dispatch(_fill_shader(dtype), [out], {"count": out.size, "value": v}, linear_groups(out.size))
    return out


@functools.cache
def _one_hot_shader(dtype):
    body = "  out[i] = select(u.off_value, u.on_value, in0[i / u.depth] == i32(i % u.depth));"
    t = SCALAR_TYPE[dtype]
    uniforms = {"depth": "u32", "on_value": t, "off_value": t}
    return compose_linear_shader(f"OneHot:{dtype}", body, [("in0", I32)], [("out", dtype)], uniforms)


def _one_hot(backend, indices, depth, on_value, off_value, dtype):
    out = backend.empty((*indices.shape, depth), dtype)
    cast = float if dtype == F32 else int
    uniforms = {"count": out.size, "depth": depth, "on_value": cast(on_value), "off_value": cast(off_value)}
    backend.dispatch(_one_hot_shader(dtype), [indices, out], uniforms, linear_groups(out.size))
    return out


register_kernel("Fill", "webgpu", _fill)
register_kernel("OneHot", "webgpu", _one_hot)
