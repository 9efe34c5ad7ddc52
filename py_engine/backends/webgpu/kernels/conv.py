"""Convolutions in WGSL: NHWC images, HWIO filters, padding already explicit ((top, bottom), (left, right)).

Conv2D and its two gradients are implicit GEMMs on the matmul template (kernels/linalg.py), with the
same two variants (recorded as backend.variants["conv"]); patches are gathered by index math:
- Conv2D: rows = output pixels (n, oh, ow), columns = output channels, one segment per filter tap (i, j)
  of C steps (input channels): the tap's input pixel, or zeros where it falls in the padding.
- Conv2DBackpropInput: rows = input pixels, columns = input channels, segments = taps, steps = output
  channels; a tap reaches the output pixel (h + top - i*dh) / sh only where that divides exactly.
- Conv2DBackpropFilter: rows = filter entries (i, j, c), columns = output channels, segments = rows (n, oh)
  of dy, steps = ow. The reduction is long and the output small, so it is split into slices whose
  partial sums a second dispatch adds up.
Depthwise convolutions do little work per loaded value, so they run direct: one thread per output (four
adjacent channels per thread when they can), looping over the taps (and the filter gradient, split the same
way, over the pixels).
"""

import functools

from ....kernels import register_kernel
from ..wgsl import PRELUDE, Shader, bindings, linear_groups, linear_main
from .linalg import F32, PROBLEM, SPLIT_SLAB, gemm_shader, run_gemm, sum_partials, tile, variant

# The geometry every conv shader reads from word PROBLEM on.
GEOMETRY = ("h", "w", "c", "oh", "ow", "o", "kh", "kw", "sh", "sw", "dh", "dw", "top", "left", "mult")
GEO = f"""
struct Geo {{ {", ".join(f"{name}: i32" for name in GEOMETRY)} }}
fn geo() -> Geo {{ return Geo({", ".join(f"iword({PROBLEM + k}u)" for k in range(len(GEOMETRY)))}); }}
"""

# The validity tests use `&`, not `&&`: inlined once per register-blocked row, short-circuit branches
# made SwiftShader's compile take minutes (see linalg._a_load).
CONV_HOOKS = """
fn row_info(m: u32) -> vec4<i32> {  // output pixel m = (n, oh, ow): its image and top-left input position
  let g = geo();
  let r = i32(m) % (g.oh * g.ow);
  return vec4<i32>(i32(m) / (g.oh * g.ow) * g.h * g.w * g.c, r / g.ow * g.sh - g.top, r % g.ow * g.sw - g.left, 0);
}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> {  // the next output pixel by adding strides: no division
  let g = geo();
  var next = prev + vec4<i32>(0, 0, g.sw, 0);
  next = select(next, vec4<i32>(next.x, next.y + g.sh, -g.left, 0), next.z > (g.ow - 1) * g.sw - g.left);
  next = select(next, vec4<i32>(next.x + g.h * g.w * g.c, -g.top, next.z, 0), next.y > (g.oh - 1) * g.sh - g.top);
  return select(next, prev, m >= rows());
}
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {  // tap s = (i, j): the input pixel it meets, if any
  let g = geo();
  let y = info.y + i32(s) / g.kw * g.dh;
  let x = info.z + i32(s) % g.kw * g.dw;
  let inside = (y >= 0) & (y < g.h) & (x >= 0) & (x < g.w);
  return vec3<i32>(info.x + (y * g.w + x) * g.c, 0, select(0, g.c, inside));
}
fn seg_b(s: u32) -> u32 { return s * steps() * cols(); }  // filter [tap][c][o]
"""

BACKPROP_INPUT_HOOKS = """
fn row_info(m: u32) -> vec4<i32> {  // input pixel m = (n, h, w): its dy image, and its position with padding
  let g = geo();
  let r = i32(m) % (g.h * g.w);
  return vec4<i32>(i32(m) / (g.h * g.w) * g.oh * g.ow * g.o, r / g.w + g.top, r % g.w + g.left, 0);
}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> { return row_info(min(m, rows() - 1u)); }
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {  // tap (i, j) reaches output pixel ((y, x) - tap) / strides
  let g = geo();
  let y = info.y - i32(s) / g.kw * g.dh;
  let x = info.z - i32(s) % g.kw * g.dw;
  let oy = y / g.sh;
  let ox = x / g.sw;
  let hit = (y >= 0) & (x >= 0) & (oy * g.sh == y) & (ox * g.sw == x) & (oy < g.oh) & (ox < g.ow);
  return vec3<i32>(info.x + (oy * g.ow + ox) * g.o, 0, select(0, g.o, hit));
}
fn seg_b(s: u32) -> u32 { return s * cols() * steps(); }  // filter [tap][c][o]: column c, step o
"""

BACKPROP_FILTER_HOOKS = """
fn row_info(m: u32) -> vec4<i32> {  // filter entry m = (i, j, c): its offset from a window's corner
  let g = geo();
  let p = i32(m);
  return vec4<i32>(p / (g.kw * g.c) * g.dh - g.top, p / g.c % g.kw * g.dw - g.left, p % g.c, 0);
}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> { return row_info(min(m, rows() - 1u)); }
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {  // dy row s = (n, oh); step t = ow meets x column t*sw + info.y
  let g = geo();
  let y = i32(s) % g.oh * g.sh + info.x;
  let lo = select(0, (g.sw - 1 - info.y) / g.sw, info.y < 0);
  let hi = min(g.ow, (g.w - info.y + g.sw - 1) / g.sw);
  let offset = ((i32(s) / g.oh * g.h + y) * g.w + info.y) * g.c + info.z;
  return vec3<i32>(offset, lo, select(0, hi, (y >= 0) & (y < g.h)));
}
fn seg_b(s: u32) -> u32 { return s * steps() * cols(); }  // dy [n, oh][ow][o]
"""

HOOKS = {
    "conv2d": CONV_HOOKS,
    "conv2d-backprop-input": BACKPROP_INPUT_HOOKS,
    "conv2d-backprop-filter": BACKPROP_FILTER_HOOKS,
}
SPLIT_TARGET_GROUPS = 64  # split a long reduction until about this many workgroups run...
SPLIT_MIN_STEPS = 1024  # ...but keep at least this many reduction steps in each slice


def _geometry(x_shape, y_shape, filter_shape, strides, pad, dilations, mult=1):
    _, h, w, c = x_shape
    _, oh, ow, o = y_shape
    return [h, w, c, oh, ow, o, *filter_shape[:2], *strides, *dilations, pad[0][0], pad[1][0], mult]


def _splits(segments, steps, groups):
    """(slices, segments per slice) for a reduction of `segments` x `steps` whose output needs `groups` workgroups."""
    splits = max(1, min(segments, -(-SPLIT_TARGET_GROUPS // groups), segments * steps // SPLIT_MIN_STEPS))
    chunk = max(1, -(-segments // splits))
    return max(1, -(-segments // chunk)), chunk


def _gemm(backend, problem, a, b, out, shape, steps, geometry, split=False):
    """out = the implicit GEMM `problem` of a and b; steps: (S, T, A's t stride, B's t stride, B's column stride)."""
    chosen = variant(backend, "conv")
    shader = gemm_shader(problem, GEO + SPLIT_SLAB + HOOKS[problem], F32, chosen)
    (rows, cols), (tile_rows, tile_cols) = shape, tile(chosen)
    splits, chunk = (
        _splits(steps[0], steps[1], -(-rows // tile_rows) * -(-cols // tile_cols)) if split else (1, steps[0])
    )
    target = out if splits == 1 else backend.empty((splits, *out.shape), F32)
    run_gemm(backend, shader, chosen, a, b, target, shape, steps, splits, chunk, geometry)
    return out if splits == 1 else sum_partials(backend, target, splits, out)


def _conv2d(backend, x, weights, strides, pad, dilations):
    (n, h, w, c), (kh, kw, _, o) = x.shape, weights.shape
    oh = (h + sum(pad[0]) - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (w + sum(pad[1]) - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = backend.empty((n, oh, ow, o), F32)
    if out.size == 0:
        return out
    geometry = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations)
    return _gemm(backend, "conv2d", x, weights, out, (n * oh * ow, o), (kh * kw, c, 1, o, 1), geometry)


def _conv2d_backprop_input(backend, dy, weights, strides, pad, dilations, input_shape):
    (n, h, w, c), (kh, kw, _, o) = input_shape, weights.shape
    dx = backend.empty(input_shape, F32)
    if dx.size == 0:
        return dx
    geometry = _geometry(input_shape, dy.shape, weights.shape, strides, pad, dilations)
    return _gemm(backend, "conv2d-backprop-input", dy, weights, dx, (n * h * w, c), (kh * kw, o, 1, 1, o), geometry)


def _conv2d_backprop_filter(backend, x, dy, strides, pad, dilations, filter_shape):
    (kh, kw, c, o), (n, oh, ow, _) = filter_shape, dy.shape
    df = backend.empty(filter_shape, F32)
    if df.size == 0:
        return df
    geometry = _geometry(x.shape, dy.shape, filter_shape, strides, pad, dilations)
    steps = (n * oh, ow, strides[1] * c, o, 1)
    return _gemm(backend, "conv2d-backprop-filter", x, dy, df, (kh * kw * c, o), steps, geometry, split=True)


# ---- depthwise: output channel c * mult + m comes from input channel c --------------------------

DEPTHWISE = """  if (i >= word(0u)) { return; }
  let oc = i32(i) % (g.c * g.mult);
  let pixel = i32(i) / (g.c * g.mult);
  let c = oc / g.mult;
  let m = oc % g.mult;
  let y0 = pixel / g.ow % g.oh * g.sh - g.top;
  let x0 = pixel % g.ow * g.sw - g.left;
  let image = pixel / (g.ow * g.oh) * g.h;
  var acc = 0.0;
  for (var ki = 0; ki < g.kh; ki = ki + 1) {
    let y = y0 + ki * g.dh;
    if (y < 0 || y >= g.h) { continue; }
    for (var kj = 0; kj < g.kw; kj = kj + 1) {
      let x = x0 + kj * g.dw;
      if (x >= 0 && x < g.w) { acc = acc + X[((image + y) * g.w + x) * g.c + c] * F[((ki * g.kw + kj) * g.c + c) * g.mult + m]; }
    }
  }
  out[i] = acc;"""

# Channel multiplier 1 and channels in fours (MobileNet/EfficientNet blocks): a thread does 4 adjacent channels,
# so the index math and bounds tests are shared by 4 outputs: EfficientNet-Lite0's depthwise layers take 0.49 s
# instead of 0.82 s on SwiftShader.
DEPTHWISE4 = """  if (i >= word(0u)) { return; }
  let quads = g.c / 4;
  let c = i32(i) % quads * 4;
  let pixel = i32(i) / quads;
  let y0 = pixel / g.ow % g.oh * g.sh - g.top;
  let x0 = pixel % g.ow * g.sw - g.left;
  let image = pixel / (g.ow * g.oh) * g.h;
  var acc = vec4<f32>(0.0);
  for (var ki = 0; ki < g.kh; ki = ki + 1) {
    let y = y0 + ki * g.dh;
    if (y < 0 || y >= g.h) { continue; }
    for (var kj = 0; kj < g.kw; kj = kj + 1) {
      let x = x0 + kj * g.dw;
      if (x >= 0 && x < g.w) {
        let a = ((image + y) * g.w + x) * g.c + c;
        let b = (ki * g.kw + kj) * g.c + c;
        acc = acc + vec4<f32>(X[a], X[a + 1], X[a + 2], X[a + 3]) * vec4<f32>(F[b], F[b + 1], F[b + 2], F[b + 3]);
      }
    }
  }
  let o = pixel * g.c + c;
  for (var k = 0; k < 4; k = k + 1) { out[o + k] = acc[k]; }"""


def depthwise_body(channels, mult):
    """The depthwise shader body for this filter, and how many output elements each thread writes."""
    return (DEPTHWISE4, 4) if mult == 1 and channels % 4 == 0 else (DEPTHWISE, 1)


DEPTHWISE_BACKPROP_INPUT = """  if (i >= word(0u)) { return; }
  let c = i32(i) % g.c;
  let pixel = i32(i) / g.c;
  let y0 = pixel / g.w % g.h + g.top;
  let x0 = pixel % g.w + g.left;
  let image = pixel / (g.w * g.h) * g.oh;
  var acc = 0.0;
  for (var ki = 0; ki < g.kh; ki = ki + 1) {
    let y = y0 - ki * g.dh;
    let oy = y / g.sh;
    if (y < 0 || oy * g.sh != y || oy >= g.oh) { continue; }
    for (var kj = 0; kj < g.kw; kj = kj + 1) {
      let x = x0 - kj * g.dw;
      let ox = x / g.sw;
      if (x < 0 || ox * g.sw != x || ox >= g.ow) { continue; }
      let dy_at = ((image + oy) * g.ow + ox) * g.c * g.mult + c * g.mult;
      let f_at = ((ki * g.kw + kj) * g.c + c) * g.mult;
      for (var m = 0; m < g.mult; m = m + 1) { acc = acc + DY[dy_at + m] * F[f_at + m]; }
    }
  }
  out[i] = acc;"""

# slice z of the (n, oh) rows adds up x * dy for filter entry (i, j, c, m); word 1: rows per slice
DEPTHWISE_BACKPROP_FILTER = """  let size = g.kh * g.kw * g.c * g.mult;
  if (i >= word(0u)) { return; }
  let z = i32(i) / size;
  let e = i32(i) % size;
  let m = e % g.mult;
  let c = e / g.mult % g.c;
  let y_off = e / (g.mult * g.c * g.kw) * g.dh - g.top;
  let x_off = e / (g.mult * g.c) % g.kw * g.dw - g.left;
  let lo = select(0, (g.sw - 1 - x_off) / g.sw, x_off < 0);
  let hi = min(g.ow, (g.w - x_off + g.sw - 1) / g.sw);
  let first = z * iword(1u);
  var acc = 0.0;
  for (var s = first; s < min(first + iword(1u), iword(2u)); s = s + 1) {
    let y = s % g.oh * g.sh + y_off;
    if (y < 0 || y >= g.h) { continue; }
    let x_row = (s / g.oh * g.h + y) * g.w + x_off;
    for (var t = lo; t < hi; t = t + 1) {
      acc = acc + X[(x_row + t * g.sw) * g.c + c] * DY[(s * g.ow + t) * g.c * g.mult + c * g.mult + m];
    }
  }
  out[i] = acc;"""


@functools.cache
def _direct_shader(name, body, inputs):
    main = linear_main("  let g = geo();\n" + body)
    return Shader(name, PRELUDE + GEO + bindings([(n, F32) for n in inputs], [("out", F32)]) + main, 2, 1)


def _direct(backend, name, body, inputs, out, words):
    """One thread per element of `out`; `words` are uniform words 1.., then the geometry (from PROBLEM on)."""
    shader = _direct_shader(name, body, tuple(inputs))
    backend.dispatch(shader, [*inputs.values(), out], [out.size, *words], linear_groups(out.size))
    return out


def _depthwise(backend, x, weights, strides, pad, dilations):
    (n, h, w, c), (kh, kw, _, mult) = x.shape, weights.shape
    oh = (h + sum(pad[0]) - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (w + sum(pad[1]) - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = backend.empty((n, oh, ow, c * mult), F32)
    if out.size == 0:
        return out
    body, lanes = depthwise_body(c, mult)
    shader = _direct_shader(f"DepthwiseConv2d:x{lanes}", body, ("X", "F"))
    geometry = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations, mult)
    threads = out.size // lanes
    backend.dispatch(shader, [x, weights, out], [threads] + [0] * (PROBLEM - 1) + geometry, linear_groups(threads))
    return out


def _depthwise_backprop_input(backend, dy, weights, strides, pad, dilations, input_shape):
    dx = backend.empty(input_shape, F32)
    if dx.size == 0:
        return dx
    geometry = _geometry(input_shape, dy.shape, weights.shape, strides, pad, dilations, weights.shape[3])
    words = [0] * (PROBLEM - 1) + geometry
    return _direct(
        backend, "DepthwiseConv2dBackpropInput", DEPTHWISE_BACKPROP_INPUT, {"DY": dy, "F": weights}, dx, words
    )


def _depthwise_backprop_filter(backend, x, dy, strides, pad, dilations, filter_shape):
    df = backend.empty(filter_shape, F32)
    if df.size == 0:
        return df
    n, oh, ow, _ = dy.shape
    splits, chunk = _splits(n * oh, ow, -(-df.size // 64))
    target = df if splits == 1 else backend.empty((splits, *filter_shape), F32)
    geometry = _geometry(x.shape, dy.shape, filter_shape, strides, pad, dilations, filter_shape[3])
    words = [chunk, n * oh] + [0] * (PROBLEM - 3) + geometry
    _direct(backend, "DepthwiseConv2dBackpropFilter", DEPTHWISE_BACKPROP_FILTER, {"X": x, "DY": dy}, target, words)
    return df if splits == 1 else sum_partials(backend, target, splits, df)


register_kernel("Conv2D", "webgpu", _conv2d)
register_kernel("Conv2DBackpropInput", "webgpu", _conv2d_backprop_input)
register_kernel("Conv2DBackpropFilter", "webgpu", _conv2d_backprop_filter)
register_kernel("DepthwiseConv2dNative", "webgpu", _depthwise)
register_kernel("DepthwiseConv2dNativeBackpropInput", "webgpu", _depthwise_backprop_input)
register_kernel("DepthwiseConv2dNativeBackpropFilter", "webgpu", _depthwise_backprop_filter)
