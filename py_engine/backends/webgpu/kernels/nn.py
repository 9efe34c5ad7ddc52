"""Convolutions and pools in WGSL: NHWC images, HWIO filters, padding already explicit ((top, bottom), (left, right)).

Conv2D and its two gradients are implicit GEMMs on the matmul template (kernels/linalg.py), with the
same two variants (recorded as backend.variants["conv"]); patches are gathered by index math:
- Conv2D: rows = output pixels (n, oh, ow), columns = output channels, one segment per filter row i of
  kw * C steps (its taps' input channels, adjacent in NHWC when the width dilation is 1; else one segment per
  tap (i, j) of C steps): the taps' input pixels, zeros where they fall in the padding. EfficientNet's first
  convolution (3x3 over 3 channels) runs 3 segments of 9 steps rather than 9 of 3. A 1x1 convolution at stride 1
  without padding is a matmul of the pixels by the filter and runs as one (linalg.pointwise). On CPU adapters a
  convolution into PATCHES_MIN_OUT channels or more copies its patches (one row of kh x kw x C per output pixel,
  zeros in the padding) and runs as their matmul: the matmul's 14x16 blocks load no padding tests, and the copy
  costs one load and store per patch value, shared by every output channel.
- Conv2DBackpropInput: rows = input pixels, columns = input channels, segments = taps, steps = output
  channels; a tap reaches the output pixel (h + top - i*dh) / sh only where that divides exactly.
- Conv2DBackpropFilter: rows = filter entries (i, j, c), columns = output channels, segments = rows (n, oh)
  of dy, steps = ow. The reduction is long and the output small, so it is split into slices whose
  partial sums a second dispatch adds up.
Depthwise convolutions do little work per loaded value, so they run direct, each thread reusing what it loads:
with multiplier 1, channels in fours and no dilation (MobileNet/EfficientNet blocks) a thread does 4 channels of
a strip of output rows, 2 columns wide, walking down the input rows (on CPU adapters, filters up to 5x5 at stride
1), or of a run of adjacent outputs along one row (on GPUs, which want more threads, and for larger filters and
strides); otherwise one thread per output (four adjacent channels per thread when they can). The filter gradient
is split the same way as the GEMM's, over the pixels.

Pools: one thread per output element loops over its window; the gradients give each input pixel one thread
that gathers from the windows containing it (in the numpy kernel's order: the last window first), without
atomics. MaxPoolGrad first records, per window, which input element is its first maximum (row-major, padding
included as -inf, as numpy), then each input element sums dy over the windows that chose it.
"""

import functools

from ....kernel_registry import register_kernel
from ....window_output_size import window_output_hw
from ..shader_layout import compose_linear_shader
from ..wgsl import linear_groups
from .linalg import F32, SPLIT_SLAB, Problem, gemm_for, pointwise, run_gemm, sum_partials, variant
from .math import HELPERS, I32

# The geometry every conv shader reads as u.h, u.w, ... (i32: the index math mixes in negative offsets).
GEOMETRY = ("h", "w", "c", "oh", "ow", "o", "kh", "kw", "sh", "sw", "dh", "dw", "top", "left", "mult", "seg_taps")
GEOMETRY_UNIFORMS = tuple((name, "i32") for name in GEOMETRY)

# The validity tests use `&`, not `&&`: inlined once per register-blocked row, short-circuit branches
# made SwiftShader's compile take minutes (see linalg._a_load).
CONV_HOOKS = """
fn row_info(m: u32) -> vec4<i32> {  // output pixel m = (n, oh, ow): its image and top-left input position
  let r = i32(m) % (u.oh * u.ow);
  return vec4<i32>(i32(m) / (u.oh * u.ow) * u.h * u.w * u.c, r / u.ow * u.sh - u.top, r % u.ow * u.sw - u.left, 0);
}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> {  // the next output pixel by adding strides: no division
  var next = prev + vec4<i32>(0, 0, u.sw, 0);
  next = select(next, vec4<i32>(next.x, next.y + u.sh, -u.left, 0), next.z > (u.ow - 1) * u.sw - u.left);
  next = select(next, vec4<i32>(next.x + u.h * u.w * u.c, -u.top, next.z, 0), next.y > (u.oh - 1) * u.sh - u.top);
  return select(next, prev, m >= u.rows);
}
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {  // u.seg_taps adjacent taps of a filter row: the pixels inside
  let per_row = u.kw / u.seg_taps;
  let y = info.y + i32(s) / per_row * u.dh;
  let x = info.z + i32(s) % per_row * u.seg_taps * u.dw;
  let last = select(0, clamp(u.w - x, 0, u.seg_taps) * u.c, (y >= 0) & (y < u.h));
  return vec3<i32>(info.x + (y * u.w + x) * u.c, max(0, -x) * u.c, last);
}
fn seg_b(s: u32) -> u32 { return s * u.steps * u.cols; }  // filter [tap][c][o]
"""

BACKPROP_INPUT_HOOKS = """
fn row_info(m: u32) -> vec4<i32> {  // input pixel m = (n, h, w): its dy image, and its position with padding
  let r = i32(m) % (u.h * u.w);
  return vec4<i32>(i32(m) / (u.h * u.w) * u.oh * u.ow * u.o, r / u.w + u.top, r % u.w + u.left, 0);
}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> { return row_info(min(m, u.rows - 1u)); }
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {  // tap (i, j) reaches output pixel ((y, x) - tap) / strides
  let y = info.y - i32(s) / u.kw * u.dh;
  let x = info.z - i32(s) % u.kw * u.dw;
  let oy = y / u.sh;
  let ox = x / u.sw;
  let hit = (y >= 0) & (x >= 0) & (oy * u.sh == y) & (ox * u.sw == x) & (oy < u.oh) & (ox < u.ow);
  return vec3<i32>(info.x + (oy * u.ow + ox) * u.o, 0, select(0, u.o, hit));
}
fn seg_b(s: u32) -> u32 { return s * u.cols * u.steps; }  // filter [tap][c][o]: column c, step o
"""

BACKPROP_FILTER_HOOKS = """
fn row_info(m: u32) -> vec4<i32> {  // filter entry m = (i, j, c): its offset from a window's corner
  let p = i32(m);
  return vec4<i32>(p / (u.kw * u.c) * u.dh - u.top, p / u.c % u.kw * u.dw - u.left, p % u.c, 0);
}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> { return row_info(min(m, u.rows - 1u)); }
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {  // dy row s = (n, oh); step t = ow meets x column t*sw + info.y
  let y = i32(s) % u.oh * u.sh + info.x;
  let lo = select(0, (u.sw - 1 - info.y) / u.sw, info.y < 0);
  let hi = min(u.ow, (u.w - info.y + u.sw - 1) / u.sw);
  let offset = ((i32(s) / u.oh * u.h + y) * u.w + info.y) * u.c + info.z;
  return vec3<i32>(offset, lo, select(0, hi, (y >= 0) & (y < u.h)));
}
fn seg_b(s: u32) -> u32 { return s * u.steps * u.cols; }  // dy [n, oh][ow][o]
"""

CONV2D = Problem("conv2d", SPLIT_SLAB + CONV_HOOKS, GEOMETRY_UNIFORMS)
BACKPROP_INPUT = Problem("conv2d-backprop-input", SPLIT_SLAB + BACKPROP_INPUT_HOOKS, GEOMETRY_UNIFORMS)
BACKPROP_FILTER = Problem("conv2d-backprop-filter", SPLIT_SLAB + BACKPROP_FILTER_HOOKS, GEOMETRY_UNIFORMS)
SPLIT_TARGET_GROUPS = 64  # split a long reduction until about this many workgroups run...
SPLIT_MIN_STEPS = 1024  # ...but keep at least this many reduction steps in each slice
# On CPU adapters a convolution into at least PATCHES_MIN_OUT channels whose patches hold at most PATCHES_LIMIT values
# runs as the matmul of its patches (SwiftShader: 0.77-0.92x the implicit GEMM's time into 32-64 channels, 1.17-2.3x
# into 8-16, where the copy is shared by too few columns)
PATCHES_MIN_OUT, PATCHES_LIMIT = 32, 1 << 22


def _geometry(x_shape, y_shape, filter_shape, strides, pad, dilations, mult=1, seg_taps=1):
    """The geometry uniforms of a convolution of x into y (for the gradients: of the forward convolution);
    seg_taps: Conv2D's taps per GEMM segment."""
    (_, h, w, c), (_, oh, ow, o), (kh, kw) = x_shape, y_shape, filter_shape[:2]
    values = {"h": h, "w": w, "c": c, "oh": oh, "ow": ow, "o": o, "kh": kh, "kw": kw, "sh": strides[0]}
    values |= {"sw": strides[1], "dh": dilations[0], "dw": dilations[1], "top": pad[0][0], "left": pad[1][0]}
    return values | {"mult": mult, "seg_taps": seg_taps}


def _splits(segments, steps, groups):
    """(slices, segments per slice) for a reduction of `segments` x `steps` whose output needs `groups` workgroups."""
    splits = max(1, min(segments, -(-SPLIT_TARGET_GROUPS // max(groups, 1)), segments * steps // SPLIT_MIN_STEPS))
    chunk = max(1, -(-segments // splits))
    return max(1, -(-segments // chunk)), chunk


def _gemm(backend, problem, a, b, out, shape, steps, geometry, split=False, epilogue=None, extra=(), values=None):
    """out = the implicit GEMM `problem` of a and b; steps: (S, T, A's t stride, B's t stride, B's column stride);
    values: the epilogue's uniforms."""
    chosen = variant(backend, "conv")
    shader, groups = gemm_for(problem, F32, chosen, shape, epilogue=epilogue)
    splits, chunk = _splits(steps[0], steps[1], groups[0] * groups[1]) if split else (1, steps[0])
    target = out if splits == 1 else backend.empty((splits, *out.shape), F32)
    run_gemm(backend, shader, groups, a, b, target, shape, steps, splits, chunk, geometry | (values or {}), extra)
    return out if splits == 1 else sum_partials(backend, target, splits, out)


def conv2d(backend, x, weights, strides, pad, dilations, epilogue=None, extra=(), values=None):
    """Conv2D, its output stored through `epilogue` (reading the inputs `extra` and the uniforms `values`) if
    given."""
    (n, h, w, c), (kh, kw, _, o) = x.shape, weights.shape
    oh, ow = window_output_hw((h, w), (kh, kw), strides, pad, dilations)
    out = backend.empty((n, oh, ow, o), F32)
    if kh == kw == 1 and tuple(strides) == (1, 1) and not any(pad[0] + pad[1]):
        pixels, filter_ = x.view((n * oh * ow, c)), weights.view((c, o))
        return pointwise(backend, pixels, filter_, out, "conv", epilogue, extra, values)
    if backend.on_cpu and o >= PATCHES_MIN_OUT and n * oh * ow * kh * kw * c <= PATCHES_LIMIT:
        return _conv2d_by_patches(backend, x, weights, out, strides, pad, dilations, epilogue, extra, values)
    seg_taps = kw if dilations[1] == 1 else 1  # a filter row's taps read adjacent pixels: one segment
    geometry = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations, seg_taps=seg_taps)
    steps = (kh * kw // seg_taps, seg_taps * c, 1, o, 1)
    shape = (n * oh * ow, o)
    return _gemm(
        backend, CONV2D, x, weights, out, shape, steps, geometry, epilogue=epilogue, extra=extra, values=values
    )


@functools.cache
def _patches_shader():
    """One thread per output pixel copies its kh x kw x C window (zeros in the padding) into its row of patches."""
    body = """  let m = i32(i);
  let r = m % (u.oh * u.ow);
  let image = m / (u.oh * u.ow) * u.h;
  let y0 = r / u.ow * u.sh - u.top;
  let x0 = r % u.ow * u.sw - u.left;
  var at = i * u32(u.kh * u.kw * u.c);
  for (var ki = 0; ki < u.kh; ki = ki + 1) {
    let y = y0 + ki * u.dh;
    for (var kj = 0; kj < u.kw; kj = kj + 1) {
      let x = x0 + kj * u.dw;
      let inside = (y >= 0) & (y < u.h) & (x >= 0) & (x < u.w);
      let source = select(0, ((image + y) * u.w + x) * u.c, inside);
      for (var k = 0; k < u.c; k = k + 1) {
        patches[at] = select(0.0, X[source + k], inside);
        at = at + 1u;
      }
    }
  }"""
    return compose_linear_shader("Patches", body, [("X", F32)], [("patches", F32)], dict(GEOMETRY_UNIFORMS))


def _conv2d_by_patches(backend, x, weights, out, strides, pad, dilations, epilogue, extra, values):
    """Conv2D as a matmul of its patches (one row of kh x kw x C per output pixel) by the filter."""
    (n, oh, ow, o), (kh, kw, c, _) = out.shape, weights.shape
    pixels = n * oh * ow
    patches = backend.empty((pixels, kh * kw * c), F32)
    geometry = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations)
    backend.dispatch(_patches_shader(), [x, patches], {"count": pixels, **geometry}, linear_groups(pixels))
    pointwise(backend, patches, weights.view((kh * kw * c, o)), out.view((pixels, o)), "conv", epilogue, extra, values)
    backend.free(patches)
    return out


def _conv2d_backprop_input(backend, dy, weights, strides, pad, dilations, input_shape):
    (n, h, w, c), (kh, kw, _, o) = input_shape, weights.shape
    dx = backend.empty(input_shape, F32)
    geometry = _geometry(input_shape, dy.shape, weights.shape, strides, pad, dilations)
    return _gemm(backend, BACKPROP_INPUT, dy, weights, dx, (n * h * w, c), (kh * kw, o, 1, 1, o), geometry)


def _conv2d_backprop_filter(backend, x, dy, strides, pad, dilations, filter_shape):
    (kh, kw, c, o), (n, oh, ow, _) = filter_shape, dy.shape
    df = backend.empty(filter_shape, F32)
    geometry = _geometry(x.shape, dy.shape, filter_shape, strides, pad, dilations)
    steps = (n * oh, ow, strides[1] * c, o, 1)
    return _gemm(backend, BACKPROP_FILTER, x, dy, df, (kh * kw * c, o), steps, geometry, split=True)


# ---- depthwise: output channel c * mult + m comes from input channel c --------------------------

DEPTHWISE = """  let oc = i32(i) % (u.c * u.mult);
  let pixel = i32(i) / (u.c * u.mult);
  let c = oc / u.mult;
  let m = oc % u.mult;
  let y0 = pixel / u.ow % u.oh * u.sh - u.top;
  let x0 = pixel % u.ow * u.sw - u.left;
  let image = pixel / (u.ow * u.oh) * u.h;
  var acc = epilogue_start(u32(oc));
  for (var ki = 0; ki < u.kh; ki = ki + 1) {
    let y = y0 + ki * u.dh;
    if (y < 0 || y >= u.h) { continue; }
    for (var kj = 0; kj < u.kw; kj = kj + 1) {
      let x = x0 + kj * u.dw;
      if (x >= 0 && x < u.w) { acc = acc + X[((image + y) * u.w + x) * u.c + c] * F[((ki * u.kw + kj) * u.c + c) * u.mult + m]; }
    }
  }
"""

# Channel multiplier 1 and channels in fours, dilated: a thread does 4 adjacent channels, so the index math and
# bounds tests are shared by 4 outputs.
DEPTHWISE4 = """  let quads = u.c / 4;
  let c = i32(i) % quads * 4;
  let pixel = i32(i) / quads;
  let y0 = pixel / u.ow % u.oh * u.sh - u.top;
  let x0 = pixel % u.ow * u.sw - u.left;
  let image = pixel / (u.ow * u.oh) * u.h;
  var acc = vec4<f32>(epilogue_start(u32(c)), epilogue_start(u32(c + 1)),
                      epilogue_start(u32(c + 2)), epilogue_start(u32(c + 3)));
  for (var ki = 0; ki < u.kh; ki = ki + 1) {
    let y = y0 + ki * u.dh;
    if (y < 0 || y >= u.h) { continue; }
    for (var kj = 0; kj < u.kw; kj = kj + 1) {
      let x = x0 + kj * u.dw;
      if (x >= 0 && x < u.w) {
        let a = ((image + y) * u.w + x) * u.c + c;
        let b = (ki * u.kw + kj) * u.c + c;
        acc = acc + vec4<f32>(X[a], X[a + 1], X[a + 2], X[a + 3]) * vec4<f32>(F[b], F[b + 1], F[b + 2], F[b + 3]);
      }
    }
  }
  let o = pixel * u.c + c;
"""

# Multiplier 1, channels in fours, no dilation, on GPUs (and on CPU adapters the filters and strides the strips below
# do not take): a thread computes `pixels` adjacent outputs of one row for 4 channels. Along a filter row the
# outputs' inputs overlap, so the thread loads each input column once per filter row and each of the row's weights
# once: where one output per thread loads an input and a weight per tap, SwiftShader turns every storage load into a
# per-lane gather, so loads are what depthwise layers pay for (docs/platform_facts.md). At stride 1 the filter width
# is part of the shader and the row is unrolled (columns and weights in registers: 0.8x the time of the rolling
# window below, EfficientNet's 3- and 5-wide filters a pipeline each); at other strides a rolling window of
# (pixels - 1) * stride + 1 columns moves one column per tap through a loop over the width, the stride part of the
# shader (it places the outputs in the window). 8 outputs at stride 1, 4 at stride 2 keep the columns in registers to
# 12 or fewer.
ROW_HELPERS = """
fn dw_column(row: i32, x: i32, row_inside: bool, c: i32) -> vec4<f32> {  // 4 channels at column x, 0 outside
  let inside = row_inside & (x >= 0) & (x < u.w);
  let a = (row + select(0, x, inside)) * u.c + c;
  return select(vec4<f32>(0.0), vec4<f32>(X[a], X[a + 1], X[a + 2], X[a + 3]), inside);
}
fn dw_weights(at: i32) -> vec4<f32> { return vec4<f32>(F[at], F[at + 1], F[at + 2], F[at + 3]); }
"""
UNROLLED_WIDTHS = 7  # stride-1 filters up to this wide are unrolled
# How a row or strip thread starts: its 4 channels (c ..), its run of outputs, the sums' start (the epilogue's).
QUAD_START = [
    "  let quads = u.c / 4;",
    "  let c = i32(i) % quads * 4;",
    "  let run = i32(i) / quads;",
    "  let start = vec4<f32>(" + ", ".join(f"epilogue_start(u32(c + {k}))" for k in range(4)) + ");",
]


def _row_outputs(stride):
    """How many adjacent outputs a thread of the row shader computes at this width stride."""
    return max(1, 8 // stride)


def _unrolled_row(pixels, kw):
    """WGSL: the filter row ki at stride 1, its kw taps unrolled."""
    lines = [f"    let w{j} = dw_column(at, x0 + {j}, inside, c);" for j in range(pixels + kw - 1)]
    lines += [f"    let f{j} = dw_weights((ki * {kw} + {j}) * u.c + c);" for j in range(kw)]
    for p in range(pixels):
        lines.append(f"    acc{p} = acc{p} + " + " + ".join(f"w{p + j} * f{j}" for j in range(kw)) + ";")
    return lines


def _rolling_row(pixels, stride):
    """WGSL: the filter row ki, a loop over its u.kw taps moving a window of columns one column per tap."""
    width = (pixels - 1) * stride + 1
    return [
        *(f"    var w{j} = dw_column(at, x0 + {j}, inside, c);" for j in range(width)),
        "    for (var kj = 0; kj < u.kw; kj = kj + 1) {  // the window holds columns x0 + kj ..",
        "      let f = dw_weights((ki * u.kw + kj) * u.c + c);",
        *(f"      acc{p} = acc{p} + w{p * stride} * f;" for p in range(pixels)),
        *(f"      w{j} = w{j + 1};" for j in range(width - 1)),
        f"      w{width - 1} = dw_column(at, x0 + {width} + kj, inside, c);",
        "    }",
    ]


def _depthwise_rows(stride, kw, epilogue):
    """The row shader's body and its outputs per thread; kw: the filter width if unrolled (stride 1), else None."""
    pixels = _row_outputs(stride)
    lines = [
        *QUAD_START,
        "  let row = run / u.runs;  // (image, output row)",
        f"  let ox = run % u.runs * {pixels};",
        "  let image = row / u.oh * u.h;",
        f"  let x0 = ox * {stride} - u.left;",
        *(f"  var acc{p} = start;" for p in range(pixels)),
        "  for (var ki = 0; ki < u.kh; ki = ki + 1) {",
        "    let y = row % u.oh * u.sh - u.top + ki;",
        "    let inside = (y >= 0) & (y < u.h);",
        "    let at = (image + select(0, y, inside)) * u.w;",
        *(_unrolled_row(pixels, kw) if kw else _rolling_row(pixels, stride)),
        "  }",
    ]
    for p in range(pixels):  # unrolled: a loop over the accumulators would index them dynamically (memory)
        lines.append(f"  if (ox + {p} < u.ow) {{")
        lines.append(f"    let o{p} = ((row * u.ow) + ox + {p}) * u.c + c;")
        lines += [f"    out[o{p} + {k}] = {_stored(f'acc{p}[{k}]', epilogue)};" for k in range(4)]
        lines.append("  }")
    return "\n".join(lines), pixels


# Strips (multiplier 1, channels in fours, no dilation, stride 1): a filter row's weights are reused along the row
# and, in a strip, every input row's columns are reused by all the output rows they reach, where a row run loads each
# input row again for each of them. EfficientNet-Lite0's stride-1 depthwise layers took 0.44x their time as row runs
# (46 -> 20 ms of its forward pass, SwiftShader on a 2-core Xeon); 2 columns beat 4 (0.97x) and 8 (more registers
# spilled). The filter is part of the shader, its body unrolled over the taps: 2 pipelines for EfficientNet, of
# 75 and 155 ms. Strips at stride 2 saved another 5 ms a forward pass but compiled in 290 ms where the stride-2 row
# shader takes 80 (docs/platform_facts.md). About 1024 threads are what 2-16 CPU cores want; a GPU keeps the row runs
# (a thread per run: tens of thousands).
STRIP_OUTPUTS = 2  # adjacent output columns per strip thread
STRIP_TAPS = 25  # filters up to this many taps (5x5) at stride 1 run as strips
STRIP_THREADS = 1024  # split the rows into strips until about this many threads run
STRIP_MIN_ROWS = 8  # ...but keep strips at least this tall (the kh - 1 rows above a strip are loaded again)


def _depthwise_strips(kh, kw, epilogue):
    """The strip shader's body (stride 1): a thread computes STRIP_OUTPUTS adjacent columns of u.strip_rows output
    rows for 4 channels, walking down the input rows. Each input row's columns are loaded once and added into the kh
    output rows they reach (kh accumulator rows, rolled up one per input row), the filter held in registers."""
    pixels, width = STRIP_OUTPUTS, STRIP_OUTPUTS + kw - 1
    lines = [
        *QUAD_START,
        "  let strip = run / u.runs;  // (image, strip)",
        f"  let ox = run % u.runs * {pixels};",
        "  let image = strip / u.strips;",
        "  let oy0 = strip % u.strips * u.strip_rows;",
        "  let rows = min(u.strip_rows, u.oh - oy0);",
        "  let x0 = ox - u.left;",
        *(f"  let f{ki}_{kj} = dw_weights(({ki} * {kw} + {kj}) * u.c + c);" for ki in range(kh) for kj in range(kw)),
        *(f"  var acc{k}_{p} = start;" for k in range(kh) for p in range(pixels)),
        f"  for (var r = 0; r < rows + {kh - 1}; r = r + 1) {{  // acc(k): output row oy0 + r - {kh - 1} + k",
        "    let y = oy0 + r - u.top;",
        "    let inside = (y >= 0) & (y < u.h);",
        "    let at = (image * u.h + select(0, y, inside)) * u.w;",
        *(f"    let w{x} = dw_column(at, x0 + {x}, inside, c);" for x in range(width)),
    ]
    for k in range(kh):  # input row oy0 + r - top reaches acc(k) through filter row kh - 1 - k
        for p in range(pixels):
            taps = " + ".join(f"w{p + kj} * f{kh - 1 - k}_{kj}" for kj in range(kw))
            lines.append(f"    acc{k}_{p} = acc{k}_{p} + {taps};")
    lines.append(f"    if (r >= {kh - 1}) {{  // acc(0) is complete")
    lines.append(f"      let o = ((image * u.oh + oy0 + r - {kh - 1}) * u.ow + ox) * u.c + c;")
    for p in range(pixels):
        lines.append(f"      if (ox + {p} < u.ow) {{")
        lines += [f"        out[o + {p} * u.c + {k}] = {_stored(f'acc0_{p}[{k}]', epilogue)};" for k in range(4)]
        lines.append("      }")
    lines.append("    }")
    lines += [f"    acc{k}_{p} = acc{k + 1}_{p};" for k in range(kh - 1) for p in range(pixels)]
    lines += [f"    acc{kh - 1}_{p} = start;" for p in range(pixels)]
    lines.append("  }")
    return "\n".join(lines)


def _stored(value, epilogue):
    return f"epilogue({value})" if epilogue else value


NO_EPILOGUE = "fn epilogue_start(channel: u32) -> f32 { return 0.0; }\n"  # plain sums start from zero


@functools.cache
def depthwise_shader(channels, mult, height, width, strides, dilations, epilogue=None, on_cpu=True):
    """(the depthwise shader for this filter (`height` x `width` taps) and geometry, storing through `epilogue` if
    any; the output elements each thread writes; its layout: "strips", "rows" or None (a thread per `lanes`
    elements)). Strips are for CPU adapters: a GPU wants far more threads than a strip's ~1024."""
    helpers, extra_uniforms, layout = "", (), None
    quads = mult == 1 and channels % 4 == 0  # a thread can take 4 adjacent channels
    reuses = quads and dilations == (1, 1)  # ... and the inputs its adjacent outputs share
    if reuses and on_cpu and height * width <= STRIP_TAPS and strides == (1, 1):
        body, name, lanes = _depthwise_strips(height, width, epilogue), f"strips{STRIP_OUTPUTS}:{height}x{width}", 4
        helpers, layout = ROW_HELPERS, "strips"
        extra_uniforms = (("runs", "i32"), ("strips", "i32"), ("strip_rows", "i32"))
    elif reuses:
        kw = width if strides[1] == 1 and width <= UNROLLED_WIDTHS else None
        body, pixels = _depthwise_rows(strides[1], kw, epilogue)
        name, lanes = f"rows{pixels}:" + (f"kw{kw}" if kw else f"sw{strides[1]}"), 4 * pixels
        helpers, extra_uniforms, layout = ROW_HELPERS, (("runs", "i32"),), "rows"
    elif quads:
        body, name, lanes = DEPTHWISE4, "x4", 4
        body += f"  for (var k = 0; k < 4; k = k + 1) {{ out[o + k] = {_stored('acc[k]', epilogue)}; }}"
    else:
        body, name, lanes = DEPTHWISE, "x1", 1
        body += f"  out[i] = {_stored('acc', epilogue)};"
    key = f"DepthwiseConv2d:{name}" + (f":{epilogue.name}" if epilogue else "")
    inputs = [("X", F32), ("F", F32), *(epilogue.inputs if epilogue else ())]
    helpers += epilogue.wgsl if epilogue else NO_EPILOGUE
    uniforms = dict(GEOMETRY_UNIFORMS + extra_uniforms + (epilogue.uniforms if epilogue else ()))
    return compose_linear_shader(key, body, inputs, [("out", F32)], uniforms, helpers), lanes, layout


DEPTHWISE_BACKPROP_INPUT = """  let c = i32(i) % u.c;
  let pixel = i32(i) / u.c;
  let y0 = pixel / u.w % u.h + u.top;
  let x0 = pixel % u.w + u.left;
  let image = pixel / (u.w * u.h) * u.oh;
  var acc = 0.0;
  for (var ki = 0; ki < u.kh; ki = ki + 1) {
    let y = y0 - ki * u.dh;
    let oy = y / u.sh;
    if (y < 0 || oy * u.sh != y || oy >= u.oh) { continue; }
    for (var kj = 0; kj < u.kw; kj = kj + 1) {
      let x = x0 - kj * u.dw;
      let ox = x / u.sw;
      if (x < 0 || ox * u.sw != x || ox >= u.ow) { continue; }
      let dy_at = ((image + oy) * u.ow + ox) * u.c * u.mult + c * u.mult;
      let f_at = ((ki * u.kw + kj) * u.c + c) * u.mult;
      for (var m = 0; m < u.mult; m = m + 1) { acc = acc + DY[dy_at + m] * F[f_at + m]; }
    }
  }
  out[i] = acc;"""

# slice z of the (n, oh) rows (u.dy_rows of them, u.slice_rows a slice) adds up x * dy for filter entry (i, j, c, m)
DEPTHWISE_BACKPROP_FILTER = """  let size = u.kh * u.kw * u.c * u.mult;
  let z = i32(i) / size;
  let e = i32(i) % size;
  let m = e % u.mult;
  let c = e / u.mult % u.c;
  let y_off = e / (u.mult * u.c * u.kw) * u.dh - u.top;
  let x_off = e / (u.mult * u.c) % u.kw * u.dw - u.left;
  let lo = select(0, (u.sw - 1 - x_off) / u.sw, x_off < 0);
  let hi = min(u.ow, (u.w - x_off + u.sw - 1) / u.sw);
  let first = z * u.slice_rows;
  var acc = 0.0;
  for (var s = first; s < min(first + u.slice_rows, u.dy_rows); s = s + 1) {
    let y = s % u.oh * u.sh + y_off;
    if (y < 0 || y >= u.h) { continue; }
    let x_row = (s / u.oh * u.h + y) * u.w + x_off;
    for (var t = lo; t < hi; t = t + 1) {
      acc = acc + X[(x_row + t * u.sw) * u.c + c] * DY[(s * u.ow + t) * u.c * u.mult + c * u.mult + m];
    }
  }
  out[i] = acc;"""


@functools.cache
def _direct_shader(name, body, inputs, extra_uniforms=()):
    uniforms = dict(GEOMETRY_UNIFORMS + extra_uniforms)
    return compose_linear_shader(name, body, [(n, F32) for n in inputs], [("out", F32)], uniforms)


def depthwise(backend, x, weights, strides, pad, dilations, epilogue=None, extra=(), values=None):
    """DepthwiseConv2dNative, its output stored through `epilogue` (reading the inputs `extra` and the uniforms
    `values`) if given."""
    (n, h, w, c), (kh, kw, _, mult) = x.shape, weights.shape
    oh, ow = window_output_hw((h, w), (kh, kw), strides, pad, dilations)
    out = backend.empty((n, oh, ow, c * mult), F32)
    filter_ = (c, mult, kh, kw)
    shader, lanes, layout = depthwise_shader(*filter_, tuple(strides), tuple(dilations), epilogue, backend.on_cpu)
    uniforms = _geometry(x.shape, out.shape, weights.shape, strides, pad, dilations, mult)
    if layout == "strips":  # a thread per STRIP_OUTPUTS columns of a strip of rows, per 4 channels
        runs = -(-ow // STRIP_OUTPUTS)
        per_strip = n * runs * (c // 4)
        strips = max(1, min(-(-STRIP_THREADS // max(per_strip, 1)), oh // STRIP_MIN_ROWS))
        strip_rows = max(1, -(-oh // strips))
        strips = -(-oh // strip_rows)
        uniforms |= {"runs": runs, "strips": strips, "strip_rows": strip_rows}
        threads = per_strip * strips
    elif layout == "rows":  # a thread per run of outputs along a row, per 4 channels
        runs = -(-ow // (lanes // 4))
        uniforms["runs"] = runs
        threads = n * oh * runs * (c // 4)
    else:
        threads = out.size // lanes
    uniforms |= {"count": threads, **(values or {})}
    backend.dispatch(shader, [x, weights, *extra, out], uniforms, linear_groups(threads))
    return out


def _depthwise_backprop_input(backend, dy, weights, strides, pad, dilations, input_shape):
    dx = backend.empty(input_shape, F32)
    shader = _direct_shader("DepthwiseConv2dBackpropInput", DEPTHWISE_BACKPROP_INPUT, ("DY", "F"))
    geometry = _geometry(input_shape, dy.shape, weights.shape, strides, pad, dilations, weights.shape[3])
    backend.dispatch(shader, [dy, weights, dx], {"count": dx.size, **geometry}, linear_groups(dx.size))
    return dx


def _depthwise_backprop_filter(backend, x, dy, strides, pad, dilations, filter_shape):
    df = backend.empty(filter_shape, F32)
    n, oh, ow, _ = dy.shape
    splits, chunk = _splits(n * oh, ow, -(-df.size // 64))
    target = df if splits == 1 else backend.empty((splits, *filter_shape), F32)
    extra = (("slice_rows", "i32"), ("dy_rows", "i32"))
    shader = _direct_shader("DepthwiseConv2dBackpropFilter", DEPTHWISE_BACKPROP_FILTER, ("X", "DY"), extra)
    uniforms = {"count": target.size, "slice_rows": chunk, "dy_rows": n * oh}
    uniforms |= _geometry(x.shape, dy.shape, filter_shape, strides, pad, dilations, filter_shape[3])
    backend.dispatch(shader, [x, dy, target], uniforms, linear_groups(target.size))
    return df if splits == 1 else sum_partials(backend, target, splits, df)


register_kernel("Conv2D", "webgpu", conv2d)
register_kernel("Conv2DBackpropInput", "webgpu", _conv2d_backprop_input)
register_kernel("Conv2DBackpropFilter", "webgpu", _conv2d_backprop_filter)
register_kernel("DepthwiseConv2dNative", "webgpu", depthwise)
register_kernel("DepthwiseConv2dNativeBackpropInput", "webgpu", _depthwise_backprop_input)
register_kernel("DepthwiseConv2dNativeBackpropFilter", "webgpu", _depthwise_backprop_filter)


# ---- pooling ----------------------------------------------------------------------------------------
POOL = """
fn window_start(o: u32, stride: u32, pad: u32) -> i32 { return i32(o * stride) - i32(pad); }
// real (unpadded) pixels of the window starting at `start` along an axis of size n
fn real_count(start: i32, k: u32, n: u32) -> i32 { return min(start + i32(k), i32(n)) - max(start, 0); }
"""
# one thread per output element (n, oy, ox, c)
OUTPUT_COORDS = """  let H = u.h; let W = u.w; let C = u.c; let OH = u.oh; let OW = u.ow;
  let c = i % C;
  let ox = (i / C) % OW;
  let oy = (i / C / OW) % OH;
  let n = i / C / OW / OH;
  let y0 = window_start(oy, u.sh, u.top);
  let x0 = window_start(ox, u.sw, u.left);"""
# one thread per input element (n, y, x, c); it visits the windows containing it, last first
INPUT_WINDOWS = """  let H = u.h; let W = u.w; let C = u.c; let OH = u.oh; let OW = u.ow;
  let kh = i32(u.kh); let kw = i32(u.kw); let sh = i32(u.sh); let sw = i32(u.sw);
  let c = i % C;
  let x = i32((i / C) % W) + i32(u.left);  // in padded coordinates
  let y = i32((i / C / W) % H) + i32(u.top);
  let n = i / C / W / H;
  var total = 0.0;
  for (var oy = min(y / sh, i32(OH) - 1); oy >= 0 && oy * sh + kh > y; oy = oy - 1) {
    for (var ox = min(x / sw, i32(OW) - 1); ox >= 0 && ox * sw + kw > x; ox = ox - 1) {
      let o = ((n * OH + u32(oy)) * OW + u32(ox)) * C + c;
      WINDOW
    }
  }
  out[i] = total;"""


POOL_UNIFORMS = dict.fromkeys(("h", "w", "c", "oh", "ow", "kh", "kw", "sh", "sw", "top", "left"), "u32")


def _pool_uniforms(count, input_shape, out_hw, ksize, strides, pad):
    (_, h, w, c), (oh, ow), (kh, kw), (sh, sw) = input_shape, out_hw, ksize, strides
    values = (h, w, c, oh, ow, kh, kw, sh, sw, pad[0][0], pad[1][0])  # in POOL_UNIFORMS' order
    return {"count": count, **dict(zip(POOL_UNIFORMS, values))}


def _pool_shader(key, body, inputs, output=("out", F32), helpers=POOL):
    return compose_linear_shader(key, body, inputs, [output], POOL_UNIFORMS, helpers)


@functools.cache
def _max_pool_shader():
    body = (
        OUTPUT_COORDS
        + """
  var best = f32_from_bits(0xff800000u);  // -inf: padding never wins
  for (var a = max(y0, 0); a < min(y0 + i32(u.kh), i32(H)); a = a + 1) {
    for (var b = max(x0, 0); b < min(x0 + i32(u.kw), i32(W)); b = b + 1) {
      let v = x[((n * H + u32(a)) * W + u32(b)) * C + c];
      if (is_nan(v)) { out[i] = v; return; }
      best = max(best, v);
    }
  }
  out[i] = best;"""
    )
    return _pool_shader("MaxPool", body, [("x", F32)], helpers=HELPERS + POOL)


@functools.cache
def _max_pool_choice_shader():
    """Per window, the flat index into x of its first maximum (or -1 when that is padding or y is NaN)."""
    body = (
        OUTPUT_COORDS
        + """
  let wanted = y[i];
  var choice = -1;
  if (!is_nan(wanted)) {
    for (var a = y0; a < y0 + i32(u.kh) && choice == -1; a = a + 1) {
      for (var b = x0; b < x0 + i32(u.kw); b = b + 1) {
        let inside = a >= 0 && a < i32(H) && b >= 0 && b < i32(W);
        let at = ((n * H + u32(a)) * W + u32(b)) * C + c;
        var v = f32_from_bits(0xff800000u);
        if (inside) { v = x[at]; }
        if (v == wanted) { choice = select(-2, i32(at), inside); break; }
      }
    }
  }
  out[i] = choice;"""
    )
    return _pool_shader("MaxPoolGrad:choice", body, [("x", F32), ("y", F32)], ("out", I32), HELPERS + POOL)


@functools.cache
def _pool_grad_shader(kind):
    window = {
        "max": "if (choice[o] == i32(i)) { total = total + dy[o]; }",
        "avg": """let rows = real_count(oy * sh - i32(u.top), u.kh, H);
      let cols = real_count(ox * sw - i32(u.left), u.kw, W);
      total = total + dy[o] / f32(rows * cols);""",
    }[kind]
    ins = [("dy", F32), ("choice", I32)] if kind == "max" else [("dy", F32)]
    body = INPUT_WINDOWS.replace("WINDOW", window)
    return _pool_shader(f"PoolGrad:{kind}", body, ins)


def _pool(shader):
    """MaxPool's or AvgPool's kernel: one thread per output, its window read by `shader()`."""

    def pool(backend, x, ksize, strides, pad):
        out_hw = window_output_hw(x.shape[1:3], ksize, strides, pad)
        out = backend.empty((x.shape[0], *out_hw, x.shape[3]), F32)
        uniforms = _pool_uniforms(out.size, x.shape, out_hw, ksize, strides, pad)
        backend.dispatch(shader(), [x, out], uniforms, linear_groups(out.size))
        return out

    return pool


def _max_pool_grad(backend, dy, x, y, ksize, strides, pad):
    dx = backend.empty(x.shape, F32)
    choice = backend.empty(dy.shape, I32)
    uniforms = _pool_uniforms(dy.size, x.shape, dy.shape[1:3], ksize, strides, pad)
    backend.dispatch(_max_pool_choice_shader(), [x, y, choice], uniforms, linear_groups(dy.size))
    uniforms = _pool_uniforms(dx.size, x.shape, dy.shape[1:3], ksize, strides, pad)
    backend.dispatch(_pool_grad_shader("max"), [dy, choice, dx], uniforms, linear_groups(dx.size))
    backend.free(choice)  # the pool holds it back until the recorded work is submitted
    return dx


@functools.cache
def _avg_pool_shader():
    body = (
        OUTPUT_COORDS
        + """
  var total = 0.0;
  for (var a = max(y0, 0); a < min(y0 + i32(u.kh), i32(H)); a = a + 1) {
    for (var b = max(x0, 0); b < min(x0 + i32(u.kw), i32(W)); b = b + 1) {
      total = total + x[((n * H + u32(a)) * W + u32(b)) * C + c];
    }
  }
  out[i] = total / f32(real_count(y0, u.kh, H) * real_count(x0, u.kw, W));"""
    )
    return _pool_shader("AvgPool", body, [("x", F32)])


def _avg_pool_grad(backend, dy, ksize, strides, pad, input_shape):
    dx = backend.empty(input_shape, F32)
    uniforms = _pool_uniforms(dx.size, input_shape, dy.shape[1:3], ksize, strides, pad)
    backend.dispatch(_pool_grad_shader("avg"), [dy, dx], uniforms, linear_groups(dx.size))
    return dx


register_kernel("MaxPool", "webgpu", _pool(_max_pool_shader))
register_kernel("MaxPoolGrad", "webgpu", _max_pool_grad)
register_kernel("AvgPool", "webgpu", _pool(_avg_pool_shader))
register_kernel("AvgPoolGrad", "webgpu", _avg_pool_grad)
