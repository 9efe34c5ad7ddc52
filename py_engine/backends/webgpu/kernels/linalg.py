"""BatchMatMul in WGSL, and the GEMM template that the convolutions (kernels/nn.py) reuse.

A GEMM computes, for each slab z (a batch element, or a slice of a split reduction),
    C[z][m, n] = sum over segments s, steps t of  A(m, s, t) * B(s, t, n)
where A(m, s, t) = A[slab.a + seg.x + t * u.a_t] for t in [seg.y, seg.z) (zero outside) and
B(s, t, n) = B[slab.b + seg_b(s) + t * u.b_t + n * u.b_n]. A problem (`Problem`) supplies WGSL hooks and the
uniforms they read (after GEMM_UNIFORMS):
    slab_of(z) -> Slab               offsets of slab z and its segment range [s0, s1)
    row_info(m) -> vec4<i32>         what output row m needs, computed once per row
    row_next(prev, m) -> vec4<i32>   row_info(m) from row m - 1's; past the last row, any valid row's
                                     (the register-blocked variant steps through a thread's rows with it:
                                     integer division costs tens of cycles per lane on CPU adapters)
    seg_a(info, s) -> vec3<i32>      A's offset at t = 0 and the valid range of t, per row and segment
    seg_b(s) -> u32                  B's offset at t = 0, n = 0
A matmul has one segment of K steps; a convolution has one segment per filter row or tap (implicit GEMM: the
patches are gathered by index math, never copied). Transposes are strides in uniforms, never copies.
An `Epilogue` (shader_layout.py) changes what is computed: the sums of column n start from epilogue_start(n) and
C[at] = epilogue(sum), reading bindings of its own after B (a fused convolution's bias and activation).

Variants (backend.on_cpu picks one; backend.variants["matmul"] records it):
- "register-blocked": each thread accumulates a block of rows x columns in registers, no workgroup memory. On CPU
  adapters barriers cost more than shared memory saves (docs/platform_facts.md: 3.2 vs 1.7 GFLOP/s). Blocks are
  14x16 (one row under FEW_ROWS rows: a Dense layer on one vector, where a taller block would compute rows for
  nothing; 7x8 where A's loads test their range, which makes taller blocks' code dear to compile): they load 30
  values per 224 multiply-adds (7x8 blocks: 15 per 56), and 14 rows divide the 14x14, 28x28, ... pixel grids of
  224x224 inputs. SwiftShader turns every load into per-lane scalar loads, so loads per multiply-add are what a
  block trades against the registers it spills (on a Xeon 14x16 ran the 1024^3 matmul 1.4x and EfficientNet-Lite0's
  forward pass 1.2x as fast as 7x8; 21x16 and 14x24 fell back below 7x8).
  The threads are numbered along C's block-rows, THREADS to a workgroup, not laid out as a 2-D tile: SwiftShader runs
  4 consecutive threads as the lanes of one SIMD group and each workgroup on one core (google/swiftshader,
  ComputeProgram::run), so a tile wider than C left lanes idle (8x8 tiles of 7x8 blocks ran 64 columns for
  EfficientNet-Lite0's 16-, 24- and 40-column layers: numbered, those take 0.65-0.8x their time), and workgroups of
  8 threads share a small C's few threads among the cores (a 7x7 layer's 48 threads are 6 workgroups, not 2 of 32
  and 16).
- "tiled": 16x16 threads stage 64x16 tiles of A and 16x64 tiles of B in workgroup memory; each thread
  accumulates 4x4 outputs. What real GPUs want.
"""

import functools
from dataclasses import dataclass

from ....kernel_registry import register_kernel
from ..shader_layout import compose_linear_shader, compose_shader
from ..wgsl import ELEMENT, MAX_GROUPS, MAX_RANK, broadcast_strides, linear_groups

F32 = "float32"
REGISTER, TILED = "register-blocked", "tiled"
# register-blocked: (rows, columns) of the block a thread computes; columns a multiple of 4 (vec4 accumulators)
WIDE, BOUNDED, ONE_ROW = (14, 16), (7, 8), (1, 4)
THREADS = 8  # register-blocked: threads per workgroup
# EfficientNet-Lite0's head (1280 -> 1000 on one pixel) took 10.6 ms in 16-row blocks, 3.0 in 1-row ones (SwiftShader)
FEW_ROWS = 4
# The uniforms of every GEMM: C's shape, segments and steps, A's and B's strides, the workgroup grid's base
# (a grid wider than 65535 goes out as several dispatches) and the segments per slab of a split reduction.
GEMM_UNIFORMS = tuple(
    (name, "u32")
    for name in ("rows", "cols", "segments", "steps", "a_t", "b_t", "b_n", "x_base", "y_base", "z_base", "chunk")
)

SLAB = "struct Slab { a: i32, b: u32, c: u32, s0: u32, s1: u32 }\n"

SPLIT_SLAB = """
fn slab_of(z: u32) -> Slab {  // slice z of a split reduction: segments [z * chunk, (z + 1) * chunk)
  let s0 = min(z * u.chunk, u.segments);
  return Slab(0, 0u, z * u.rows * u.cols, s0, min(s0 + u.chunk, u.segments));
}"""


@dataclass(frozen=True)
class Problem:
    """A GEMM problem: its name (in shader keys), its WGSL hooks, and the uniforms they read ((name, type), ...)."""

    name: str
    hooks: str
    uniforms: tuple = ()


# BatchMatMul: A's row stride, then the output's batch shape and A's and B's strides along it.
MATMUL = Problem(
    "matmul",
    """
fn slab_of(z: u32) -> Slab {  // batch element z: its offsets in a and b follow the broadcast strides
  var rest = z;
  var a = 0u;
  var b = 0u;
  for (var d = u.rank; d > 0u; d = d - 1u) {
    let size = u_batch(d - 1u);
    let c = rest % size;
    rest = rest / size;
    a = a + c * u_batch_a(d - 1u);
    b = b + c * u_batch_b(d - 1u);
  }
  return Slab(i32(a), b, z * u.rows * u.cols, 0u, 1u);
}
fn row_info(m: u32) -> vec4<i32> { return vec4<i32>(i32(m * u.a_m), 0, 0, 0); }
fn row_next(prev: vec4<i32>, m: u32) -> vec4<i32> {
  return select(prev + vec4<i32>(i32(u.a_m), 0, 0, 0), prev, m >= u.rows);
}
fn seg_a(info: vec4<i32>, s: u32) -> vec3<i32> { return vec3<i32>(info.x, 0, i32(u.steps)); }
fn seg_b(s: u32) -> u32 { return 0u; }
""",
    (("a_m", "u32"), ("rank", "u32"), *((name, f"u32[{MAX_RANK - 2}]") for name in ("batch", "batch_a", "batch_b"))),
)


def _store(index, value, epilogue):
    """WGSL storing value at C[index], through the epilogue when there is one."""
    return f"C[{index}] = {f'epilogue({value})' if epilogue else value};"


def _a_load(dtype, row, t, bounded):
    """WGSL: A(row, s, t) for the current segment (seg{row}); zero where t is outside its valid range."""
    # `&`, not `&&`: SwiftShader (Chrome's CPU WebGPU) took minutes, or lost the device, compiling the
    # unrolled loop with short-circuit chains, each of which is a branch
    index = f"slab.a + seg{row}.x + i32({t}) * i32(u.a_t)"
    if not bounded:
        return f"A[u32({index})]"
    ok = f"((i32({t}) >= seg{row}.y) & (i32({t}) < seg{row}.z))"
    return f"select({ELEMENT[dtype]}(0), A[u32(select(0, {index}, {ok}))], {ok})"


def register_block(rows, bounded):
    """(rows, columns) of the block a register-blocked thread computes for a C of `rows` rows; bounded: A's loads
    test their range (an implicit convolution's padding), code per row that made 14x16 blocks compile in 2.6x the
    time of 7x8 ones (265 vs 101 ms, SwiftShader) where EfficientNet-Lite0's first convolution ran no faster."""
    return ONE_ROW if rows < FEW_ROWS else BOUNDED if bounded else WIDE


def _register_main(dtype, bounded, epilogue, block):
    """THREADS threads to a workgroup, numbered along C's block-rows: with p = ceil(N / width) threads to a block-row,
    thread t owns `block` = (height, width) outputs from row t / p * height and column t % p * width."""
    vec = f"vec4<{ELEMENT[dtype]}>"
    height, width = block
    groups = width // 4
    lines = [
        f"@compute @workgroup_size({THREADS})",
        "fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {",
        "  let M = u.rows; let N = u.cols; let T = u.steps;",
        f"  let per_row = (N + {width - 1}u) / {width}u;",
        f"  let thread = (wg.x + u.x_base) * {THREADS}u + lid.x;",
        f"  let row0 = thread / per_row * {height}u;",
        f"  let col0 = thread % per_row * {width}u;",
        "  if (row0 >= M) { return; }",
        "  let slab = slab_of(wg.z + u.z_base);",
    ]
    # rows and columns past the edge are clamped (loads stay in bounds) and never written; rows after the first
    # are stepped to from the one before
    lines += ["  let info0 = row_info(min(row0, M - 1u));"]
    lines += [f"  let info{r} = row_next(info{r - 1}, row0 + {r}u);" for r in range(1, height)]
    lines += [f"  let b_col{j} = min(col0 + {j}u, N - 1u) * u.b_n;" for j in range(width)]
    if epilogue:  # each column's sums start from its epilogue_start, read once per thread
        for g in range(groups):
            starts = ", ".join(f"epilogue_start(min(col0 + {4 * g + q}u, N - 1u))" for q in range(4))
            lines.append(f"  let start{g} = {vec}({starts});")
    lines += [
        f"  var acc{r}_{g} = {f'start{g}' if epilogue else f'{vec}()'};" for r in range(height) for g in range(groups)
    ]
    lines += ["  for (var s = slab.s0; s < slab.s1; s = s + 1u) {"]
    lines += [f"    let seg{r} = seg_a(info{r}, s);" for r in range(height)]
    lines += [
        "    var b_at = slab.b + seg_b(s);",
        "    for (var t = 0u; t < T; t = t + 1u) {",
    ]
    for g in range(groups):
        loads = ", ".join(f"B[b_at + b_col{4 * g + q}]" for q in range(4))
        lines.append(f"      let b{g} = {vec}({loads});")
    for r in range(height):
        lines.append(f"      let a{r} = {_a_load(dtype, r, 't', bounded)};")
        lines += [f"      acc{r}_{g} = acc{r}_{g} + a{r} * b{g};" for g in range(groups)]
    lines += ["      b_at = b_at + u.b_t;", "    }", "  }"]
    # the store walks the rows in a loop, so the epilogue (a fused activation) is compiled once per column, not once
    # per output: unrolled at 64 stores, SwiftShader took 0.3-0.7 s to compile the fused conv GEMM, looped 0.15 s.
    # Each turn stores row 0 and moves the rows up one: indexing an array of the rows by the loop counter instead
    # puts them in memory, read back by per-lane gathers (the 1x1 convolutions over 16-24 channels ran ~10% slower)
    lines += [
        f"  let cols_left = min({width}u, N - col0);",
        "  var at = slab.c + row0 * N + col0;",
        f"  for (var r = 0u; r < min({height}u, M - row0); r = r + 1u) {{",
    ]
    for j in range(width):
        store = _store(f"at + {j}u", f"acc0_{j // 4}[{j % 4}]", epilogue)
        lines.append(f"    {store}" if j == 0 else f"    if ({j}u < cols_left) {{ {store} }}")
    lines += [f"    acc{r}_{g} = acc{r + 1}_{g};" for r in range(height - 1) for g in range(groups)]
    lines += ["    at = at + N;", "  }"]
    lines.append("}")
    return "\n".join(lines)


def _tiled_main(dtype, epilogue):
    """16x16 threads, a 64x64 output tile, reduction in steps of 16 through workgroup memory."""
    el = ELEMENT[dtype]
    store = _store("slab.c + row * N + col", "acc[i][j]", epilogue)
    zero = f"{el}(0)"
    start = "epilogue_start(min(col_base + lid.x + 16u * j, N - 1u))" if epilogue else zero
    return f"""
var<workgroup> tile_a: array<{el}, 1024>;  // [k][m]: 16 x 64
var<workgroup> tile_b: array<{el}, 1024>;  // [k][n]: 16 x 64
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
  let M = u.rows; let N = u.cols; let T = u.steps;
  let row_base = (wg.y + u.y_base) * 64u;
  let col_base = (wg.x + u.x_base) * 64u;
  let slab = slab_of(wg.z + u.z_base);
  let K = (slab.s1 - slab.s0) * T;  // the segments flattened: k = (s - s0) * T + t
  // each thread stages 4 elements of A (row li / 4, k (li % 4) * 4 ..) and of B (k li / 16, n (li % 16) * 4 ..)
  let a_row = li / 4u;
  let a_k = (li % 4u) * 4u;
  let info = row_info(min(row_base + a_row, M - 1u));
  let b_k = li / 16u;
  let b_col = (li % 16u) * 4u;
  var acc: array<array<{el}, 4>, 4>;
  for (var j = 0u; j < 4u; j = j + 1u) {{
    let s = {start};
    for (var i = 0u; i < 4u; i = i + 1u) {{ acc[i][j] = s; }}
  }}
  for (var k0 = 0u; k0 < K; k0 = k0 + 16u) {{
    for (var q = 0u; q < 4u; q = q + 1u) {{
      let k = k0 + a_k + q;
      var v = {zero};
      if (k < K) {{
        let s = slab.s0 + k / T;
        let t = i32(k % T);
        let seg = seg_a(info, s);
        if (t >= seg.y && t < seg.z) {{ v = A[u32(slab.a + seg.x + t * i32(u.a_t))]; }}
      }}
      tile_a[(a_k + q) * 64u + a_row] = v;
      let kb = k0 + b_k;
      var w = {zero};
      if (kb < K) {{
        let s = slab.s0 + kb / T;
        let col = min(col_base + b_col + q, N - 1u);
        w = B[slab.b + seg_b(s) + (kb % T) * u.b_t + col * u.b_n];
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
      if (row < M && col < N) {{ {store} }}
    }}
  }}
}}"""


def variant(backend, family):
    """The GEMM variant for this adapter, recorded under `family` in backend.variants."""
    chosen = REGISTER if backend.on_cpu else TILED
    backend.variants[family] = chosen
    return chosen


@functools.cache
def gemm_shader(problem, dtype, variant, bounded=True, epilogue=None, block=WIDE):
    """The GEMM for `problem` in `variant`: inputs A, B (then the epilogue's), output C; block: the (rows, columns)
    of a register-blocked thread (gemm_for picks it).

    bounded=False: seg_a's t range always covers [0, T), so the register-blocked loop skips the test.
    """
    key = f"Gemm:{problem.name}:{dtype}:{variant}"
    if variant == REGISTER:
        main = _register_main(dtype, bounded, epilogue, block)
        key += f":block{block[0]}x{block[1]}"
    else:
        main = _tiled_main(dtype, epilogue)
    key += f":{epilogue.name}" if epilogue else ""
    key += "" if bounded else ":unbounded"
    inputs = [("A", dtype), ("B", dtype), *(epilogue.inputs if epilogue else ())]
    helpers = SLAB + problem.hooks + (epilogue.wgsl if epilogue else "")
    uniforms = dict(GEMM_UNIFORMS + problem.uniforms + (epilogue.uniforms if epilogue else ()))
    return compose_shader(key, main, inputs, [("C", dtype)], uniforms, helpers)


def gemm_for(problem, dtype, variant, shape, bounded=True, epilogue=None):
    """(shader, groups) of the GEMM `problem` for a C of `shape` (rows, columns); groups: the (x, y) workgroups that
    cover C (one slab)."""
    rows, cols = shape
    if variant != REGISTER:
        return gemm_shader(problem, dtype, variant, bounded, epilogue), (-(-cols // 64), -(-rows // 64))
    block = register_block(rows, bounded)
    threads = -(-rows // block[0]) * -(-cols // block[1])
    return gemm_shader(problem, dtype, variant, bounded, epilogue, block), (-(-threads // THREADS), 1)


def run_gemm(backend, shader, groups, a, b, c, shape, steps, slabs, chunk=1, problem=None, extra=()):
    """Dispatch `shader` over C's (rows, columns) = `shape` for `slabs` slabs in the (x, y) workgroups `groups`
    (gemm_for()); `extra`: the epilogue's inputs.

    steps: (S, T, A's t stride, B's t stride, B's column stride); problem: {name: value} of the problem's uniforms.
    Workgroup grids wider than 65535 in a dimension go out as several dispatches with base offsets.
    """
    rows, cols = shape
    counts = (*groups, slabs)
    segments, step_count, a_t, b_t, b_n = steps
    uniforms = {"rows": rows, "cols": cols, "segments": segments, "steps": step_count, "a_t": a_t, "b_t": b_t}
    uniforms |= {"b_n": b_n, "chunk": chunk, **(problem or {})}
    for x in range(0, counts[0], MAX_GROUPS):
        for y in range(0, counts[1], MAX_GROUPS):
            for z in range(0, counts[2], MAX_GROUPS):
                groups = [min(n - base, MAX_GROUPS) for n, base in zip(counts, (x, y, z))]
                backend.dispatch(shader, [a, b, *extra, c], {**uniforms, "x_base": x, "y_base": y, "z_base": z}, groups)


@functools.cache
def _sum_shader():
    body = """  var acc = 0.0;
  for (var k = 0u; k < u.splits; k = k + 1u) { acc = acc + partials[k * u.count + i]; }
  out[i] = acc;"""
    return compose_linear_shader("SumPartials", body, [("partials", F32)], [("out", F32)], {"splits": "u32"})


def sum_partials(backend, partials, splits, out):
    """out = the sum of `splits` consecutive slices of `partials` (each out.size long); frees `partials`."""
    backend.dispatch(_sum_shader(), [partials, out], {"count": out.size, "splits": splits}, linear_groups(out.size))
    backend.free(partials)
    return out


def pointwise(backend, a, b, out, family, epilogue=None, extra=(), values=None):
    """out[m, n] = a[m, k] @ b[k, n], both row-major, on the matmul problem: a 1x1 convolution at stride 1 without
    padding is one, and the matmul's hooks neither bound A's loads nor divide (CPU adapters divide per lane).
    Stored through `epilogue` (reading the inputs `extra` and the uniforms `values`) if given; the variant is
    recorded under `family`."""
    (m, k), n = a.shape, b.shape[-1]
    shader, groups = gemm_for(MATMUL, F32, variant(backend, family), (m, n), bounded=False, epilogue=epilogue)
    problem = {"a_m": k, "rank": 0, "batch": (), "batch_a": (), "batch_b": (), **(values or {})}
    run_gemm(backend, shader, groups, a, b, out, (m, n), (1, k, 1, n, 1), 1, problem=problem, extra=extra)
    return out


def _batch_matmul(backend, a, b, transpose_a, transpose_b):
    m, k = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    n = b.shape[-2] if transpose_b else b.shape[-1]
    rank = max(len(a.shape), len(b.shape)) - 2
    batch_a, batch_b = (1,) * (rank + 2 - len(a.shape)) + a.shape[:-2], (1,) * (rank + 2 - len(b.shape)) + b.shape[:-2]
    batch = tuple(max(x, y) if min(x, y) else 0 for x, y in zip(batch_a, batch_b))
    out = backend.empty((*batch, m, n), a.dtype)
    chosen = variant(backend, "matmul")
    shader, groups = gemm_for(MATMUL, a.dtype, chosen, (m, n), bounded=False)
    a_t, a_m = (m, 1) if transpose_a else (1, k)
    b_t, b_n = (1, k) if transpose_b else (n, 1)
    problem = {"a_m": a_m, "rank": rank, "batch": batch}
    problem["batch_a"] = [s * m * k for s in broadcast_strides(batch_a, batch)]
    problem["batch_b"] = [s * k * n for s in broadcast_strides(batch_b, batch)]
    slabs = out.size // (m * n) if out.size else 0
    run_gemm(backend, shader, groups, a, b, out, (m, n), (1, k, a_t, b_t, b_n), slabs, problem=problem)
    return out


register_kernel("BatchMatMul", "webgpu", _batch_matmul)
