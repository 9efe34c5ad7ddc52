"""BatchMatMul in WGSL, and the GEMM template that the convolutions (kernels/conv.py) reuse.

A GEMM computes, for each slab z (a batch element, or a slice of a split reduction),
    C[z][m, n] = sum over segments s, steps t of  A(m, s, t) * B(s, t, n)
where A(m, s, t) = A[slab.a + seg.x + t * word(A_T)] for t in [seg.y, seg.z) (zero outside) and
B(s, t, n) = B[slab.b + seg_b(s) + t * word(B_T) + n * word(B_N)]. A problem supplies WGSL hooks:
    slab_of(z) -> Slab               offsets of slab z and its segment range [s0, s1)
    row_info(m) -> vec4<i32>         what output row m needs, computed once per row
    row_next(prev, m) -> vec4<i32>   row_info(m) from row m - 1's; past the last row, any valid row's
                                     (the register-blocked variant steps through a thread's rows with it:
                                     integer division costs tens of cycles per lane on CPU adapters)
    seg_a(info, s) -> vec3<i32>      A's offset at t = 0 and the valid range of t, per row and segment
    seg_b(s) -> u32                  B's offset at t = 0, n = 0
A matmul has one segment of K steps; a convolution has one segment per filter tap (implicit GEMM: the
patches are gathered by index math, never copied). Transposes are strides in uniforms, never copies.

Variants (backend.on_cpu picks one; backend.variants["matmul"] records it):
- "register-blocked": 8x8 threads, each accumulating a TM x TN block in registers, no workgroup memory.
  On CPU adapters barriers cost more than shared memory saves (docs/platform_facts.md: 3.2 vs 1.7 GFLOP/s).
- "tiled": 16x16 threads stage 64x16 tiles of A and 16x64 tiles of B in workgroup memory; each thread
  accumulates 4x4 outputs. What real GPUs want.
"""

import functools

from ....kernels import register_kernel
from ..wgsl import (
    ELEMENT,
    MAX_GROUPS,
    MAX_RANK,
    PRELUDE,
    Shader,
    bindings,
    broadcast_strides,
    linear_groups,
    linear_main,
)

F32 = "float32"
REGISTER, TILED = "register-blocked", "tiled"
TM, TN = 16, 4  # register-blocked: outputs per thread (rows, columns); TN is a multiple of 4 (vec4 accumulators)
# Uniform words shared by every GEMM; a problem's own words start at PROBLEM.
M_, N_, S_, T_, A_T, B_T, B_N, X_BASE, Y_BASE, Z_BASE, CHUNK = range(11)
PROBLEM = 11
# BatchMatMul's words: A's row stride, then the output's batch shape and A's and B's strides along it.
A_M, B_RANK, B_SHAPE = PROBLEM, PROBLEM + 1, PROBLEM + 2
B_A, B_B = B_SHAPE + MAX_RANK - 2, B_SHAPE + 2 * (MAX_RANK - 2)

GEMM_PRELUDE = f"""
struct Slab {{ a: i32, b: u32, c: u32, s0: u32, s1: u32 }}
fn rows() -> u32 {{ return word({M_}u); }}
fn cols() -> u32 {{ return word({N_}u); }}
fn segments() -> u32 {{ return word({S_}u); }}
fn steps() -> u32 {{ return word({T_}u); }}
"""

SPLIT_SLAB = f"""
fn slab_of(z: u32) -> Slab {{  // slice z of a split reduction: segments [z * chunk, (z + 1) * chunk)
  let s0 = min(z * word({CHUNK}u), segments());
  return Slab(0, 0u, z * rows() * cols(), s0, min(s0 + word({CHUNK}u), segments()));
}}"""

MATMUL_HOOKS = f"""
fn slab_of(z: u32) -> Slab {{  // batch element z: its offsets in a and b follow the broadcast strides
  var rest = z;
  var a = 0u;
  var b = 0u;
  for (var d = word({B_RANK}u); d > 0u; d = d - 1u) {{
    let size = word({B_SHAPE - 1}u + d);
    let c = rest % size;
    rest = rest / size;
    a = a + c * word({B_A - 1}u + d);
    b = b + c * word({B_B - 1}u + d);
  }}
  return Slab(i32(a), b, z * rows() * cols(), 0u, 1u);
}}
fn row_info(m: u32) -> vec4<i32> {{ return vec4<i32>(i32(m * word({A_M}u)), 0, 0, 0); }}
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> {{
  return select(prev + vec4<i32>(i32(word({A_M}u)), 0, 0, 0), prev, m >= rows());
}}
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> {{ return vec3<i32>(info.x, 0, i32(steps())); }}
fn seg_b(s: u32) -> u32 {{ return 0u; }}
"""


def _a_load(dtype, row, t, bounded):
    """WGSL: A(row, s, t) for the current segment (seg{row}); zero where t is outside its valid range."""
    # `&`, not `&&`: SwiftShader (Chrome's CPU WebGPU) took minutes, or lost the device, compiling the
    # unrolled loop with short-circuit chains, each of which is a branch
    index = f"slab.a + seg{row}.x + i32({t}) * i32(word({A_T}u))"
    if not bounded:
        return f"A[u32({index})]"
    ok = f"((i32({t}) >= seg{row}.y) & (i32({t}) < seg{row}.z))"
    return f"select({ELEMENT[dtype]}(0), A[u32(select(0, {index}, {ok}))], {ok})"


def _register_main(dtype, bounded):
    """8x8 threads; thread (x, y) owns rows y*TM.. and columns x*TN.. of its workgroup's 8TM x 8TN block."""
    vec = f"vec4<{ELEMENT[dtype]}>"
    groups = TN // 4
    lines = [
        "@compute @workgroup_size(8, 8)",
        "fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {",
        "  let M = rows(); let N = cols(); let T = steps();",
        f"  let row0 = ((wg.y + word({Y_BASE}u)) * 8u + lid.y) * {TM}u;",
        f"  let col0 = ((wg.x + word({X_BASE}u)) * 8u + lid.x) * {TN}u;",
        "  if (row0 >= M || col0 >= N) { return; }",
        f"  let slab = slab_of(wg.z + word({Z_BASE}u));",
    ]
    # rows and columns past the edge are clamped (loads stay in bounds) and never written; rows after the first
    # are stepped to from the one before
    lines += ["  let info0 = row_info(min(row0, M - 1u));"]
    lines += [f"  let info{r} = row_next(info{r - 1}, row0 + {r}u);" for r in range(1, TM)]
    lines += [f"  let b_col{j} = min(col0 + {j}u, N - 1u) * word({B_N}u);" for j in range(TN)]
    lines += [f"  var acc{r}_{g} = {vec}();" for r in range(TM) for g in range(groups)]
    lines += ["  for (var s = slab.s0; s < slab.s1; s = s + 1u) {"]
    lines += [f"    let seg{r} = seg_a(info{r}, s);" for r in range(TM)]
    lines += [
        "    var b_at = slab.b + seg_b(s);",
        "    for (var t = 0u; t < T; t = t + 1u) {",
    ]
    for g in range(groups):
        loads = ", ".join(f"B[b_at + b_col{4 * g + q}]" for q in range(4))
        lines.append(f"      let b{g} = {vec}({loads});")
    for r in range(TM):
        lines.append(f"      let a{r} = {_a_load(dtype, r, 't', bounded)};")
        lines += [f"      acc{r}_{g} = acc{r}_{g} + a{r} * b{g};" for g in range(groups)]
    lines += [f"      b_at = b_at + word({B_T}u);", "    }", "  }"]
    for r in range(TM):
        lines.append(f"  if (row0 + {r}u < M) {{")
        lines.append(f"    let at{r} = slab.c + (row0 + {r}u) * N + col0;")
        for j in range(TN):
            guard = "" if j == 0 else f"if (col0 + {j}u < N) "
            lines.append(f"    {guard}{{ C[at{r} + {j}u] = acc{r}_{j // 4}[{j % 4}]; }}")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def _tiled_main(dtype):
    """16x16 threads, a 64x64 output tile, reduction in steps of 16 through workgroup memory."""
    el = ELEMENT[dtype]
    zero = f"{el}(0)"
    return f"""
var<workgroup> tile_a: array<{el}, 1024>;  // [k][m]: 16 x 64
var<workgroup> tile_b: array<{el}, 1024>;  // [k][n]: 16 x 64
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
  let M = rows(); let N = cols(); let T = steps();
  let row_base = (wg.y + word({Y_BASE}u)) * 64u;
  let col_base = (wg.x + word({X_BASE}u)) * 64u;
  let slab = slab_of(wg.z + word({Z_BASE}u));
  let K = (slab.s1 - slab.s0) * T;  // the segments flattened: k = (s - s0) * T + t
  // each thread stages 4 elements of A (row li / 4, k (li % 4) * 4 ..) and of B (k li / 16, n (li % 16) * 4 ..)
  let a_row = li / 4u;
  let a_k = (li % 4u) * 4u;
  let info = row_info(min(row_base + a_row, M - 1u));
  let b_k = li / 16u;
  let b_col = (li % 16u) * 4u;
  var acc: array<array<{el}, 4>, 4>;
  for (var k0 = 0u; k0 < K; k0 = k0 + 16u) {{
    for (var q = 0u; q < 4u; q = q + 1u) {{
      let k = k0 + a_k + q;
      var v = {zero};
      if (k < K) {{
        let s = slab.s0 + k / T;
        let t = i32(k % T);
        let seg = seg_a(info, s);
        if (t >= seg.y && t < seg.z) {{ v = A[u32(slab.a + seg.x + t * i32(word({A_T}u)))]; }}
      }}
      tile_a[(a_k + q) * 64u + a_row] = v;
      let kb = k0 + b_k;
      var w = {zero};
      if (kb < K) {{
        let s = slab.s0 + kb / T;
        let col = min(col_base + b_col + q, N - 1u);
        w = B[slab.b + seg_b(s) + (kb % T) * word({B_T}u) + col * word({B_N}u)];
      }}
      tile_b[b_k * 64u + b_col + q] = w;
    }}
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {{
      var a: array<{el}, 4>;
      var b: array<{el}, 4>;
      for (var i = 0u; i < 4u; i = i + 1u) {{
        a[i] = tile_a[kk * 64u + lid.y + 16u * i];
        b[i] = tile_b[kk * 64u + lid.x + 16u * i];
      }}
      for (var i = 0u; i < 4u; i = i + 1u) {{
        for (var j = 0u; j < 4u; j = j + 1u) {{ acc[i][j] = acc[i][j] + a[i] * b[j]; }}
      }}
    }}
    workgroupBarrier();
  }}
  for (var i = 0u; i < 4u; i = i + 1u) {{
    let row = row_base + lid.y + 16u * i;
    for (var j = 0u; j < 4u; j = j + 1u) {{
      let col = col_base + lid.x + 16u * j;
      if (row < M && col < N) {{ C[slab.c + row * N + col] = acc[i][j]; }}
    }}
  }}
}}"""


def variant(backend, family):
    """The GEMM variant for this adapter, recorded under `family` in backend.variants."""
    chosen = REGISTER if backend.on_cpu else TILED
    backend.variants[family] = chosen
    return chosen


@functools.cache
def gemm_shader(problem, hooks, dtype, variant, bounded=True):
    """The GEMM for `problem` (its name; `hooks` its WGSL) in `variant`; inputs A, B, output C.

    bounded=False: seg_a's t range always covers [0, T), so the register-blocked loop skips the test.
    """
    main = _register_main(dtype, bounded) if variant == REGISTER else _tiled_main(dtype)
    source = PRELUDE + bindings([("A", dtype), ("B", dtype)], [("C", dtype)]) + GEMM_PRELUDE + hooks + main
    return Shader(f"Gemm:{problem}:{dtype}:{variant}", source, 2, 1)


def tile(variant):
    """(rows, columns) of C that one workgroup computes."""
    return (8 * TM, 8 * TN) if variant == REGISTER else (64, 64)


def run_gemm(backend, shader, variant, a, b, c, shape, steps, slabs, chunk=1, words=()):
    """Dispatch `shader` over C's (rows, columns) = `shape` for `slabs` slabs.

    steps: (S, T, A's t stride, B's t stride, B's column stride); words: the problem's own uniforms.
    Workgroup grids wider than 65535 in a dimension go out as several dispatches with base offsets.
    """
    (rows, cols), (tile_rows, tile_cols) = shape, tile(variant)
    counts = (-(-cols // tile_cols), -(-rows // tile_rows), slabs)
    for x in range(0, counts[0], MAX_GROUPS):
        for y in range(0, counts[1], MAX_GROUPS):
            for z in range(0, counts[2], MAX_GROUPS):
                uniforms = [rows, cols, *steps, x, y, z, chunk, *words]
                groups = [min(n - base, MAX_GROUPS) for n, base in zip(counts, (x, y, z))]
                backend.dispatch(shader, [a, b, c], uniforms, groups)


@functools.cache
def _sum_shader():
    body = """  if (i >= word(0u)) { return; }
  var acc = 0.0;
  for (var k = 0u; k < word(1u); k = k + 1u) { acc = acc + partials[k * word(0u) + i]; }
  out[i] = acc;"""
    return Shader("SumPartials", PRELUDE + bindings([("partials", F32)], [("out", F32)]) + linear_main(body), 1, 1)


def sum_partials(backend, partials, splits, out):
    """out = the sum of `splits` consecutive slices of `partials` (each out.size long); frees `partials`."""
    backend.dispatch(_sum_shader(), [partials, out], [out.size, splits], linear_groups(out.size))
    backend.free(partials)
    return out


def _batch_matmul(backend, a, b, transpose_a, transpose_b):
    m, k = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    n = b.shape[-2] if transpose_b else b.shape[-1]
    rank = max(len(a.shape), len(b.shape)) - 2
    batch_a, batch_b = (1,) * (rank + 2 - len(a.shape)) + a.shape[:-2], (1,) * (rank + 2 - len(b.shape)) + b.shape[:-2]
    batch = tuple(max(x, y) if min(x, y) else 0 for x, y in zip(batch_a, batch_b))
    out = backend.empty((*batch, m, n), a.dtype)
    if out.size == 0:
        return out
    chosen = variant(backend, "matmul")
    shader = gemm_shader("matmul", MATMUL_HOOKS, a.dtype, chosen, bounded=False)
    a_t, a_m = (m, 1) if transpose_a else (1, k)
    b_t, b_n = (1, k) if transpose_b else (n, 1)
    words = [a_m, rank, *batch, *[0] * (MAX_RANK - 2 - rank)]
    words += [s * m * k for s in broadcast_strides(batch_a, batch)] + [0] * (MAX_RANK - 2 - rank)
    words += [s * k * n for s in broadcast_strides(batch_b, batch)]
    slabs = out.size // (m * n)
    run_gemm(backend, shader, chosen, a, b, out, (m, n), (1, k, a_t, b_t, b_n), slabs, words=words)
    return out


register_kernel("BatchMatMul", "webgpu", _batch_matmul)
