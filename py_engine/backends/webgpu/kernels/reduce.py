"""Reduction WGSL kernels: Sum, Mean, Prod, Max, Min, All, Any, ArgMax, ArgMin, Softmax, Cumsum, Cumprod, TopK.

A reduction views its input as [rows..., reduced...] through shapes and strides in the uniforms (no
transpose copies). Each output row gets either a workgroup that reduces through workgroup memory
(the "workgroup" variant: threads stride over the row, then a barrier tree; what real GPUs want) or
one thread looping serially (the "per-thread" variant: CPU adapters run it faster when rows are short
and many). Rows longer than a chunk are cut into chunks whose partial results further passes reduce:
that keeps a GPU busy on a single long row and sums floats in tree order, never in one long serial sum.

Uniforms (REDUCE_UNIFORMS): rows, the reduced length n, chunks per row and their length, Mean's count, Cumsum's
exclusive and reverse, and the row and reduced views (rank, shape, strides).
"""

import functools

from ....kernel_registry import register_kernel
from ..shader_layout import compose_shader
from ..wgsl import ELEMENT, MAX_RANK, linear_groups, linear_main, strides
from .math import HELPERS

F32, I32, BOOL = "float32", "int32", "bool"
ITEMS = 16  # elements each thread of a workgroup reduces serially before the tree
SCAN_ITEMS = 8  # and scans serially in Cumsum
TOPK_MAX_SORT = 1024  # longest row the bitonic TopK sorts in workgroup memory
TOPK_MAX_SELECT_STEPS = 16384  # loop steps of a selection TopK thread beyond which rows are cut into segments

LOWEST = {F32: "f32_from_bits(0xff800000u)", I32: "bitcast<i32>(0x80000000u)"}
HIGHEST = {F32: "f32_from_bits(0x7f800000u)", I32: "2147483647"}
ZERO = {F32: "0.0", I32: "0", BOOL: "0u"}
ONE = {F32: "1.0", I32: "1"}

REDUCE_UNIFORMS = dict.fromkeys(("rows", "n", "chunks", "chunk_len", "exclusive", "reverse"), "u32")
REDUCE_UNIFORMS["mean_count"] = "f32"
for _view in ("row", "red"):  # a view of the input: its rank, shape and strides
    REDUCE_UNIFORMS |= {
        f"{_view}_rank": "u32",
        f"{_view}_shape": f"u32[{MAX_RANK}]",
        f"{_view}_strides": f"u32[{MAX_RANK}]",
    }


def _view_offset(view):
    """WGSL fn {view}_offset(index): the offset of flat `index` over the view's dims (u.{view}_shape, _strides)."""
    return f"""
fn {view}_offset(index: u32) -> u32 {{
  let n = u.{view}_rank;
  if (n == 1u) {{ return index * u_{view}_strides(0u); }}
  var rest = index;
  var off = 0u;
  for (var k = 0u; k < n; k = k + 1u) {{
    let d = n - 1u - k;
    off = off + (rest % u_{view}_shape(d)) * u_{view}_strides(d);
    rest = rest / u_{view}_shape(d);
  }}
  return off;
}}"""


VIEW = (
    _view_offset("row")
    + _view_offset("red")
    + """
fn max_nan(a: f32, b: f32) -> f32 { return select(max(a, b), nan(), is_nan(a) || is_nan(b)); }
fn min_nan(a: f32, b: f32) -> f32 { return select(min(a, b), nan(), is_nan(a) || is_nan(b)); }
"""
)


def _group_main(body, wg):
    """An entry point with one workgroup per unit of work `g` (grids wider than 65535 wrap into y)."""
    return f"""
@compute @workgroup_size({wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {{
  let g = wid.x + wid.y * nw.x;
{body}
}}"""


def _merge(dims):
    """(size, stride) dims without size-1 ones, neighbours that are contiguous merged into one."""
    out = []
    for size, stride in dims:
        if size == 1:
            continue
        if out and out[-1][1] == size * stride:
            out[-1] = (out[-1][0] * size, stride)
        else:
            out.append((size, stride))
    return out


def _view(shape, axes):
    st = strides(shape)
    rows = _merge([(shape[d], st[d]) for d in range(len(shape)) if d not in axes])
    return rows, _merge([(shape[d], st[d]) for d in axes])


def _uniforms(rows, n, chunks, chunk_len, row_dims, red_dims, mean_count=0.0, exclusive=0, reverse=0):
    values = {"rows": rows, "n": n, "chunks": chunks, "chunk_len": chunk_len, "mean_count": mean_count}
    values |= {"exclusive": exclusive, "reverse": reverse}
    for view, dims in (("row", row_dims), ("red", red_dims)):
        values[f"{view}_rank"], values[f"{view}_shape"] = len(dims), [size for size, _ in dims]
        values[f"{view}_strides"] = [stride for _, stride in dims]
    return values


def _workgroup_size(backend):
    return 64 if backend.on_cpu else 256


def _variant(backend, rows, n, long_rows_ok=True):
    """'per-thread' for short rows, or on a CPU adapter for long ones when there are enough rows to keep its
    cores busy (serial loops beat barriers there, measured 2-50x on llvmpipe); `long_rows_ok` is False where a
    long serial loop would lose float accuracy (sums). Else 'workgroup'."""
    if backend.on_cpu:
        return "per-thread" if n <= 1024 or (long_rows_ok and rows >= 16) else "workgroup"
    return "per-thread" if n <= 32 else "workgroup"  # a 256-thread workgroup on so few would mostly idle


# ---- Sum, Mean, Prod, Max, Min, All, Any, ArgMax, ArgMin ---------------------------------------

# kernel -> (the value of combine(a, b): an expression, or one per dtype; for ArgMax/ArgMin the comparison by
# which b.v beats a.v), identity per dtype
REDUCERS = {
    "Sum": ("a.v + b.v", ZERO),
    "Mean": ("a.v + b.v", ZERO),
    "Prod": ("a.v * b.v", {F32: "1.0", I32: "1"}),
    "Max": ({F32: "max_nan(a.v, b.v)", I32: "max(a.v, b.v)"}, LOWEST),
    "Min": ({F32: "min_nan(a.v, b.v)", I32: "min(a.v, b.v)"}, HIGHEST),
    "All": ("a.v & b.v", {BOOL: "1u"}),
    "Any": ("a.v | b.v", ZERO),
    "ArgMax": (">", LOWEST),
    "ArgMin": ("<", HIGHEST),
}
ARG = ("ArgMax", "ArgMin")


def _dtypes(name, dtype):
    """(accumulator dtype, output dtype) of kernel `name` on input `dtype`."""
    if name in ARG:
        return dtype, I32
    if name == "Mean":
        return F32, F32
    return dtype, dtype


def _combine(name, acc):
    expr, _ = REDUCERS[name]
    if name not in ARG:
        expr = expr[acc] if isinstance(expr, dict) else expr
        return f"fn combine(a: Acc, b: Acc) -> Acc {{ return Acc({expr}, 0); }}"
    nan = "is_nan({})" if acc == F32 else "false"
    # NaN wins as in numpy; ties go to the lower index, so any order of combining gives numpy's first index
    return f"""fn combine(a: Acc, b: Acc) -> Acc {{
  let an = {nan.format("a.v")};
  let bn = {nan.format("b.v")};
  var take = b.v {expr} a.v;
  if (an || bn) {{ take = bn && (!an || b.i < a.i); }} else if (b.v == a.v) {{ take = b.i < a.i; }}
  if (take) {{ return b; }}
  return a;
}}"""


@functools.cache
def _reduce_shader(name, dtype, wg, from_partials, final):
    """wg = 0: one thread per row. Else one workgroup of wg threads per (row, chunk); `from_partials` reads
    the accumulators of an earlier pass instead of x, and a pass that is not `final` writes accumulators."""
    acc, out_dtype = _dtypes(name, dtype)
    arg = name in ARG
    identity = REDUCERS[name][1][acc]
    if from_partials:
        ins = [("pv", acc)] + [("pi", I32)] * arg
        load = f"Acc(pv[o], {'pi[o]' if arg else '0'})"
    else:
        ins, load = [("x", dtype)], "Acc(x[o], i32(r))"
    finish = {"Mean": "select(acc.v / u.mean_count, nan(), u.mean_count == 0.0)", "ArgMax": "acc.i", "ArgMin": "acc.i"}
    if final:
        outs, store = [("out", out_dtype)], f"out[row] = {finish.get(name, 'acc.v')};"
    else:
        outs = [("qv", acc)] + [("qi", I32)] * arg
        store = "qv[row * u.chunks + chunk] = acc.v;" + (" qi[row * u.chunks + chunk] = acc.i;" if arg else "")
    helpers = f"""{HELPERS}{VIEW}
struct Acc {{ v: {ELEMENT[acc]}, i: i32 }}
{_combine(name, acc)}
fn load(base: u32, r: u32) -> Acc {{ let o = base + red_offset(r); return {load}; }}
"""
    if wg == 0:
        body = f"""  if (i >= u.rows) {{ return; }}
  let row = i;
  let base = row_offset(row);
  var acc = Acc({identity}, 2147483647);
  for (var r = 0u; r < u.n; r = r + 1u) {{ acc = combine(acc, load(base, r)); }}
  {store}"""
        code = linear_main(body)
    else:
        body = f"""  if (g >= u.rows * u.chunks) {{ return; }}
  let row = g / u.chunks;
  let chunk = g % u.chunks;
  let base = row_offset(row);
  let end = min((chunk + 1u) * u.chunk_len, u.n);
  var acc = Acc({identity}, 2147483647);
  for (var r = chunk * u.chunk_len + t; r < end; r = r + {wg}u) {{ acc = combine(acc, load(base, r)); }}
  scratch[t] = acc;
  workgroupBarrier();
  for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{
    if (t < s) {{ scratch[t] = combine(scratch[t], scratch[t + s]); }}
    workgroupBarrier();
  }}
  if (t == 0u) {{
    acc = scratch[0];
    {store}
  }}"""
        code = f"var<workgroup> scratch: array<Acc, {wg}>;\n" + _group_main(body, wg)
    key = f"{name}:{dtype}:{f'wg{wg}' if wg else 'serial'}:{'partials' if from_partials else 'x'}:{final}"
    return compose_shader(key, code, ins, outs, REDUCE_UNIFORMS, helpers)


def run_reduce(backend, name, x, axes, out_shape):
    acc, out_dtype = _dtypes(name, x.dtype)
    out = backend.empty(out_shape, out_dtype)
    row_dims, red_dims = _view(x.shape, axes)
    rows, n = out.size, x.size // out.size if x.size else 0
    mean_count = float(n) if name == "Mean" else 0.0
    float_sum = name in ("Sum", "Mean") and x.dtype == F32
    variant = backend.variants["reduce"] = _variant(backend, rows, n, not float_sum)
    if variant == "per-thread":
        uniforms = _uniforms(rows, n, 1, n, row_dims, red_dims, mean_count)
        backend.dispatch(_reduce_shader(name, x.dtype, 0, False, True), [x, out], uniforms, linear_groups(rows))
        return out
    wg = _workgroup_size(backend)
    sources, from_partials = [x], False
    while True:
        chunks = -(-n // (wg * ITEMS)) if n > wg * ITEMS else 1
        if chunks == 1:
            targets = [out]
        else:
            targets = [backend.empty((rows, chunks), dt) for dt in ((acc, I32) if name in ARG else (acc,))]
        shader = _reduce_shader(name, x.dtype, wg, from_partials, chunks == 1)
        uniforms = _uniforms(rows, n, chunks, -(-n // chunks), row_dims, red_dims, mean_count)
        backend.dispatch(shader, sources + targets, uniforms, linear_groups(rows * chunks, 1))
        if from_partials:
            for p in sources:
                backend.free(p)
        if chunks == 1:
            return out
        sources, from_partials = targets, True
        row_dims, red_dims, n = _merge([(rows, chunks)]), [(chunks, 1)], chunks


def _reduction(name):
    def kernel(backend, x, axis, keepdims):
        shape = tuple(1 if d in axis else s for d, s in enumerate(x.shape) if keepdims or d not in axis)
        return run_reduce(backend, name, x, axis, shape)

    return kernel


def _arg_reduction(name):
    def kernel(backend, x, axis):
        if axis is None:
            return run_reduce(backend, name, x, tuple(range(len(x.shape))), ())
        return run_reduce(backend, name, x, (axis,), x.shape[:axis] + x.shape[axis + 1 :])

    return kernel


for _name in REDUCERS:
    register_kernel(_name, "webgpu", (_arg_reduction if _name in ARG else _reduction)(_name))


# ---- Softmax --------------------------------------------------------------------------------


@functools.cache
def _softmax_shader(wg):
    """exp(x - max) / sum along the reduced dim, max and sum over the row: per thread (wg = 0) or a workgroup."""
    if wg == 0:
        loops, tree, main = "r = 0u", "", linear_main
        head = "  if (i >= u.rows) { return; }\n  let g = i;"
    else:
        loops, main = "r = t", functools.partial(_group_main, wg=wg)
        head = "  if (g >= u.rows) { return; }"
        tree = f"""var<workgroup> scratch: array<f32, {wg}>;
// every thread's v combined across the workgroup (max or sum), the same result in every thread
fn tree(v: f32, t: u32, is_max: bool) -> f32 {{
  scratch[t] = v;
  workgroupBarrier();
  for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{
    if (t < s) {{ scratch[t] = select(scratch[t] + scratch[t + s], max_nan(scratch[t], scratch[t + s]), is_max); }}
    workgroupBarrier();
  }}
  let result = scratch[0];
  workgroupBarrier();
  return result;
}}
"""
    step = f"r = r + {wg or 1}u"
    body = f"""{head}
  let base = row_offset(g);
  var m = {LOWEST[F32]};
  for (var {loops}; r < u.n; {step}) {{ m = max_nan(m, x[base + red_offset(r)]); }}
  {"m = tree(m, t, true);" if wg else ""}
  var total = 0.0;
  for (var {loops}; r < u.n; {step}) {{ total = total + exp_safe(x[base + red_offset(r)] - m); }}
  {"total = tree(total, t, false);" if wg else ""}
  for (var {loops}; r < u.n; {step}) {{
    let o = base + red_offset(r);
    out[o] = exp_safe(x[o] - m) / total;
  }}"""
    key = f"Softmax:{f'wg{wg}' if wg else 'serial'}"
    return compose_shader(key, tree + main(body), [("x", F32)], [("out", F32)], REDUCE_UNIFORMS, HELPERS + VIEW)


def _whole_rows(backend, x, axis, shader_for, exclusive=0, reverse=0):
    """Run a kernel that needs each row along `axis` whole (softmax, cumsum): shader_for(0) gives one thread
    a row, shader_for(wg) one workgroup of wg threads, as _variant chooses for this shape."""
    out = backend.empty(x.shape, x.dtype)
    row_dims, red_dims = _view(x.shape, (axis,))
    n = x.shape[axis]
    rows = x.size // n if n else 0
    variant = backend.variants["reduce"] = _variant(backend, rows, n)
    uniforms = _uniforms(rows, n, 1, n, row_dims, red_dims, exclusive=exclusive, reverse=reverse)
    if variant == "per-thread":
        backend.dispatch(shader_for(0), [x, out], uniforms, linear_groups(rows))
    else:
        backend.dispatch(shader_for(_workgroup_size(backend)), [x, out], uniforms, linear_groups(rows, 1))
    return out


def _softmax(backend, x, axis):
    return _whole_rows(backend, x, axis, _softmax_shader)


register_kernel("Softmax", "webgpu", _softmax)


# ---- Cumsum, Cumprod --------------------------------------------------------------------------


@functools.cache
def _scan_shader(kind, dtype, wg):
    """Running sums (kind "Cumsum") or products ("Cumprod") along the reduced dim (word 6: exclusive, word 7:
    reverse): one thread per row (wg = 0), or a workgroup per row scanning chunks in workgroup memory and carrying
    each chunk's total to the next."""
    elem, zero = ELEMENT[dtype], (ZERO if kind == "Cumsum" else ONE)[dtype]
    op = "+" if kind == "Cumsum" else "*"
    io = [("x", dtype)], [("out", dtype)]
    if wg == 0:
        body = f"""  if (i >= u.rows) {{ return; }}
  let base = row_offset(i);
  let n = u.n;
  var acc = {zero};
  for (var j = 0u; j < n; j = j + 1u) {{
    let o = base + red_offset(select(j, n - 1u - j, u.reverse != 0u));
    let v = x[o];
    if (u.exclusive != 0u) {{ out[o] = acc; acc = acc {op} v; }} else {{ acc = acc {op} v; out[o] = acc; }}
  }}"""
        return compose_shader(f"{kind}:{dtype}:serial", linear_main(body), *io, REDUCE_UNIFORMS, HELPERS + VIEW)
    # each thread scans SCAN_ITEMS consecutive elements itself, the workgroup scans the threads' totals
    body = f"""  if (g >= u.rows) {{ return; }}
  let base = row_offset(g);
  let n = u.n;
  let reverse = u.reverse != 0u;
  var carry = {zero};
  var vals: array<{elem}, {SCAN_ITEMS}>;
  for (var start = 0u; start < n; start = start + {wg * SCAN_ITEMS}u) {{
    let first = start + t * {SCAN_ITEMS}u;
    var total = {zero};
    for (var k = 0u; k < {SCAN_ITEMS}u; k = k + 1u) {{
      let j = first + k;
      vals[k] = {zero};
      if (j < n) {{ vals[k] = x[base + red_offset(select(j, n - 1u - j, reverse))]; }}
      total = total {op} vals[k];
    }}
    scan[t] = total;
    workgroupBarrier();
    for (var s = 1u; s < {wg}u; s = s << 1u) {{  // Hillis-Steele: after the step with s, scan[t] sums 2s totals
      var add = {zero};
      if (t >= s) {{ add = scan[t - s]; }}
      workgroupBarrier();
      scan[t] = scan[t] {op} add;
      workgroupBarrier();
    }}
    var run = carry;
    if (t > 0u) {{ run = run {op} scan[t - 1u]; }}
    for (var k = 0u; k < {SCAN_ITEMS}u; k = k + 1u) {{
      let j = first + k;
      if (j < n) {{
        let o = base + red_offset(select(j, n - 1u - j, reverse));
        if (u.exclusive != 0u) {{ out[o] = run; run = run {op} vals[k]; }} else {{ run = run {op} vals[k]; out[o] = run; }}
      }}
    }}
    carry = carry {op} scan[{wg - 1}u];
    workgroupBarrier();
  }}"""
    code = f"var<workgroup> scan: array<{elem}, {wg}>;\n" + _group_main(body, wg)
    return compose_shader(f"{kind}:{dtype}:wg{wg}", code, *io, REDUCE_UNIFORMS, HELPERS + VIEW)


def _scan(kind):
    def kernel(backend, x, axis, exclusive, reverse):
        return _whole_rows(backend, x, axis, lambda wg: _scan_shader(kind, x.dtype, wg), int(exclusive), int(reverse))

    return kernel


register_kernel("Cumsum", "webgpu", _scan("Cumsum"))
register_kernel("Cumprod", "webgpu", _scan("Cumprod"))


# ---- TopK -----------------------------------------------------------------------------------


def _before(dtype):
    nan = "is_nan({})" if dtype == F32 else "false"
    return f"""
// whether (av, ai) comes before (bv, bi) in top_k's order: indices >= n (padding) last, NaN after numbers
// (as numpy's argsort of -x), larger first, then the lower index
fn before(av: {ELEMENT[dtype]}, ai: i32, bv: {ELEMENT[dtype]}, bi: i32) -> bool {{
  let n = i32(u.n);
  if ((ai >= n) != (bi >= n)) {{ return bi >= n; }}
  let an = {nan.format("av")};
  let bn = {nan.format("bv")};
  if (an != bn) {{ return bn; }}
  if (!an && av != bv) {{ return av > bv; }}
  return ai < bi;
}}
"""


@functools.cache
def _top_k_shader(dtype, wg, mode):
    """One workgroup per row (words 0 = rows, 1 = n, 2 = k, 3 = n padded to a power of two). mode "sort": a
    bitonic sort of the row in workgroup memory, then the first k; else k passes each picking the best element that
    comes after the previous pick: of the row ("select"), of one segment of it ("segments", words 4 = segments per
    row, 5 = their length), or of the segments' picks with their indices ("candidates")."""
    elem, zero = ELEMENT[dtype], ZERO[dtype]
    if mode == "sort":
        memory = (
            f"var<workgroup> keys: array<{elem}, {TOPK_MAX_SORT}>;\nvar<workgroup> ids: array<i32, {TOPK_MAX_SORT}>;\n"
        )
        body = f"""  if (g >= u.rows) {{ return; }}
  let n = u.n;
  let padded = u.padded;
  for (var i = t; i < padded; i = i + {wg}u) {{
    var v = {zero};
    if (i < n) {{ v = x[g * n + i]; }}
    keys[i] = v;
    ids[i] = i32(i);
  }}
  workgroupBarrier();
  for (var size = 2u; size <= padded; size = size << 1u) {{
    for (var j = size >> 1u; j > 0u; j = j >> 1u) {{
      for (var p = t; p < padded / 2u; p = p + {wg}u) {{
        let a = (p / j) * 2u * j + p % j;
        let b = a + j;
        if (before(keys[b], ids[b], keys[a], ids[a]) == ((a & size) == 0u)) {{
          let kv = keys[a]; keys[a] = keys[b]; keys[b] = kv;
          let ki = ids[a]; ids[a] = ids[b]; ids[b] = ki;
        }}
      }}
      workgroupBarrier();
    }}
  }}
  for (var i = t; i < u.k; i = i + {wg}u) {{
    values[g * u.k + i] = keys[i];
    indices[g * u.k + i] = ids[i];
  }}"""
    else:
        # where this workgroup's elements are, how many, and each one's index in its row (`sort` is the stage:
        # "select" a whole row; "segments" each a segment of a row; "candidates" the segments' picks, with ids)
        where = {
            "select": ("g * n", "n", "i32(i)"),
            "segments": (
                "(g / u.segs) * n + (g % u.segs) * u.seg",
                "min(u.seg, n - (g % u.segs) * u.seg)",
                "i32((g % u.segs) * u.seg + i)",
            ),
            "candidates": ("g * u.segs * u.k", "u.segs * u.k", "ids[src + i]"),
        }
        src, count, ident = where[mode]
        memory = f"var<workgroup> best_v: array<{elem}, {wg}>;\nvar<workgroup> best_i: array<i32, {wg}>;\n"
        body = f"""  if (g >= u.rows) {{ return; }}
  let n = u.n;
  let src = {src};
  let count = {count};
  var prev_v = {zero};
  var prev_i = -1;
  for (var pick = 0u; pick < u.k; pick = pick + 1u) {{
    var bv = {zero};
    var bi = i32(n);  // padding: every element beats it
    for (var i = t; i < count; i = i + {wg}u) {{
      let v = x[src + i];
      let id = {ident};
      if ((prev_i < 0 || before(prev_v, prev_i, v, id)) && before(v, id, bv, bi)) {{ bv = v; bi = id; }}
    }}
    best_v[t] = bv;
    best_i[t] = bi;
    workgroupBarrier();
    for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{
      if (t < s && before(best_v[t + s], best_i[t + s], best_v[t], best_i[t])) {{
        best_v[t] = best_v[t + s];
        best_i[t] = best_i[t + s];
      }}
      workgroupBarrier();
    }}
    prev_v = best_v[0];
    prev_i = best_i[0];
    if (t == 0u) {{
      values[g * u.k + pick] = prev_v;
      indices[g * u.k + pick] = prev_i;
    }}
    workgroupBarrier();
  }}"""
    key = f"TopK:{dtype}:wg{wg}:{mode}"
    outs = [("values", dtype), ("indices", I32)]
    ins = [("x", dtype), ("ids", I32)] if mode == "candidates" else [("x", dtype)]
    uniforms = dict.fromkeys(("rows", "n", "k", "padded", "segs", "seg"), "u32")
    return compose_shader(key, memory + _group_main(body, wg), ins, outs, uniforms, HELPERS + _before(dtype))


def _top_k(backend, x, k):
    n = x.shape[-1]
    values, indices = backend.empty(x.shape[:-1] + (k,), x.dtype), backend.empty(x.shape[:-1] + (k,), I32)
    rows, wg = values.size // k if k else 0, _workgroup_size(backend)
    padded = 1 << max(n - 1, 1).bit_length()
    levels = padded.bit_length() - 1
    # barrier steps (and each thread's serial work between them) of the two ways
    sort_cost = levels * (levels + 1) // 2 * -(-padded // (2 * wg))
    select_cost = k * (-(-n // wg) + wg.bit_length())
    sort = padded <= TOPK_MAX_SORT and sort_cost < select_cost
    uniforms = {"rows": rows, "n": n, "k": k, "padded": padded, "segs": 1, "seg": n}
    if not sort and select_cost > TOPK_MAX_SELECT_STEPS and k:
        return _top_k_segmented(backend, x, k, rows, wg, uniforms, values, indices)
    backend.variants["top_k"] = "bitonic" if sort else "selection"
    shader = _top_k_shader(x.dtype, wg, "sort" if sort else "select")
    backend.dispatch(shader, [x, values, indices], uniforms, linear_groups(rows, 1))
    return values, indices


def _top_k_segmented(backend, x, k, rows, wg, uniforms, values, indices):
    """TopK of long rows in two dispatches: the top k of each segment (short enough that a thread's loop stays
    under TOPK_MAX_SELECT_STEPS; llvmpipe's GL returned zeros past ~65536 steps), then the top k of those picks."""
    n = uniforms["n"]
    seg = max(k, TOPK_MAX_SELECT_STEPS // max(k, 1) * wg)
    segs = -(-n // seg)
    picks_v, picks_i = backend.empty((rows * segs * k,), x.dtype), backend.empty((rows * segs * k,), I32)
    segmented = {**uniforms, "rows": rows * segs, "segs": segs, "seg": seg}
    backend.dispatch(
        _top_k_shader(x.dtype, wg, "segments"), [x, picks_v, picks_i], segmented, linear_groups(rows * segs, 1)
    )
    merged = {**uniforms, "segs": segs}
    backend.dispatch(
        _top_k_shader(x.dtype, wg, "candidates"),
        [picks_v, picks_i, values, indices],
        merged,
        linear_groups(rows, 1),
    )
    backend.free(picks_v)
    backend.free(picks_i)
    backend.variants["top_k"] = "segmented selection"
    return values, indices


register_kernel("TopK", "webgpu", _top_k)
