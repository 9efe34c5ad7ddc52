"""Sequence WGSL kernels, written with the public pe.Program API: MaskedSoftmax and a linear-chain CRF
(CRFLogLikelihood: the forward algorithm; CRFMarginals: backward pass and marginals for its gradient;
CRFDecode: Viterbi). Shapes and semantics are those of backends/numpy/kernels/sequence.py.

Each CRF kernel gives one workgroup of 64 threads to one sequence and walks it through time in the
shader: thread `lid` owns the tags lid, lid + 64, ..., so any number of tags works. A step reads
every tag's value of the step before, so those live in a storage buffer (the alphas, the Viterbi
lattice, the betas inside `unary`) and a storageBarrier separates the steps. The sequence's length
goes through workgroupUniformLoad, so every barrier is in uniform control flow.
"""

from ....kernel_registry import register_kernel
from ..user_program import Dispatch, Program
from ..wgsl import MAX_RANK, broadcast_strides, linear_groups, strides

WORKGROUP = 64

COMMON = """
fn f32_from_bits(bits: u32) -> f32 { return bitcast<f32>(bits); }  // not a constant: Tint rejects inf literals
fn neg_inf() -> f32 { return f32_from_bits(0xff800000u); }
fn is_nan_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
// numpy's NaN rules where a GPU's builtins leave them open (SwiftShader: exp(NaN) = inf)
fn max_nan(a: f32, b: f32) -> f32 { return select(max(a, b), f32_from_bits(0x7fc00000u), is_nan_(a) || is_nan_(b)); }
fn exp_nan(x: f32) -> f32 { return select(exp(x), x, is_nan_(x)); }
"""


# ---- MaskedSoftmax ----------------------------------------------------------------------------

MASKED_SOFTMAX = (
    COMMON
    + """
var<workgroup> scratch: array<f32, 64>;

// whether logits[e] is kept: the mask broadcasts against the logits through its strides (0 on repeated axes)
fn kept(e: u32) -> bool {
  if (params.mask_same != 0u) { return mask[e] != 0u; }
  var rest = e;
  var offset = 0u;
  for (var k = 0u; k < params.rank; k = k + 1u) {
    let d = params.rank - 1u - k;
    let size = params_shape(d);
    offset = offset + (rest % size) * params_mask_strides(d);
    rest = rest / size;
  }
  return mask[offset] != 0u;
}

// v combined over the workgroup (max, else sum), the same in every thread
fn combine(v: f32, lid: u32, is_max: bool) -> f32 {
  scratch[lid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      scratch[lid] = select(scratch[lid] + scratch[lid + s], max_nan(scratch[lid], scratch[lid + s]), is_max);
    }
    workgroupBarrier();
  }
  let result = scratch[0];
  workgroupBarrier();
  return result;
}

// one workgroup per row: the row's n logits are `inner` apart
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nw.x;
  if (row >= params.rows) { return; }
  let n = params.n;
  let base = (row / params.inner) * n * params.inner + row % params.inner;
  var m = neg_inf();
  for (var r = lid; r < n; r = r + 64u) {
    let e = base + r * params.inner;
    if (kept(e)) { m = max_nan(m, logits[e]); }
  }
  m = combine(m, lid, true);
  let empty = m == neg_inf();  // nothing kept, or only -inf kept: the row is zeros
  let shift = select(m, 0.0, empty);
  var total = 0.0;
  for (var r = lid; r < n; r = r + 64u) {
    let e = base + r * params.inner;
    if (kept(e)) { total = total + exp_nan(logits[e] - shift); }
  }
  total = combine(total, lid, false);
  for (var r = lid; r < n; r = r + 64u) {
    let e = base + r * params.inner;
    out[e] = select(0.0, exp_nan(logits[e] - shift) / total, kept(e) && !empty);
  }
}
"""
)


def _masked_softmax_plan(logits, mask, axis):
    shape = logits.shape
    n = shape[axis]
    inner = 1
    for d in shape[axis + 1 :]:
        inner *= d
    rows = logits.size // n if n else 0
    same = mask.shape == shape
    return Dispatch(
        outputs={"out": (shape, "float32")},
        workgroups=linear_groups(rows, 1),
        uniforms={
            "rows": rows,
            "n": n,
            "inner": inner,
            "rank": len(shape),
            "mask_same": int(same),
            "shape": list(shape),
            "mask_strides": strides(shape) if same else broadcast_strides(mask.shape, shape),
        },
    )


register_kernel(
    "MaskedSoftmax",
    "webgpu",
    Program(
        "MaskedSoftmax",
        MASKED_SOFTMAX,
        inputs=["logits", "mask"],
        uniforms={
            "rows": "u32",
            "n": "u32",
            "inner": "u32",
            "rank": "u32",
            "mask_same": "u32",
            "shape": f"u32[{MAX_RANK}]",
            "mask_strides": f"u32[{MAX_RANK}]",
        },
        dispatch=_masked_softmax_plan,
    ),
)


# ---- the CRF ----------------------------------------------------------------------------------

CRF_COMMON = (
    COMMON
    + """
var<workgroup> length_shared: u32;

// the sequence's length, the same value in every thread of the workgroup (for uniform barriers)
fn sequence_length(b: u32, lid: u32) -> u32 {
  if (lid == 0u) { length_shared = u32(lengths[b]); }
  return workgroupUniformLoad(&length_shared);
}
"""
)

# the head of every CRF kernel's main: workgroup b takes sequence b, of `count` steps of k tags from `base` on
CRF_MAIN = """
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = wid.x + wid.y * nw.x;
  if (b >= params.batch) { return; }
  let steps = params.steps;
  let k = params.num_tags;
  let count = sequence_length(b, lid);
  let base = b * steps * k;"""

LOG_PARTITION = """
// the log partition: logsumexp over the k alphas of the last step, from `last`
fn log_partition(last: u32, k: u32) -> f32 {
  var m = neg_inf();
  for (var i = 0u; i < k; i = i + 1u) { m = max_nan(m, alphas[last + i]); }
  var total = 0.0;
  for (var i = 0u; i < k; i = i + 1u) { total = total + exp_nan(alphas[last + i] - m); }
  return m + log(total);
}
"""

CRF_FORWARD = (
    CRF_COMMON
    + LOG_PARTITION
    + """
// log(sum over i of exp(alphas[prev + i] + transitions[i, j])), -inf (not NaN) when every term is -inf
fn step_logsumexp(prev: u32, j: u32, k: u32) -> f32 {
  var m = neg_inf();
  for (var i = 0u; i < k; i = i + 1u) { m = max_nan(m, alphas[prev + i] + transitions[i * k + j]); }
  if (m == neg_inf()) { return m; }
  var total = 0.0;
  for (var i = 0u; i < k; i = i + 1u) { total = total + exp_nan(alphas[prev + i] + transitions[i * k + j] - m); }
  return m + log(total);
}
"""
    + CRF_MAIN
    + """
  for (var i = count * k + lid; i < steps * k; i = i + 64u) { alphas[base + i] = 0.0; }
  if (count > 0u) {
    for (var j = lid; j < k; j = j + 64u) { alphas[base + j] = emissions[base + j]; }
  }
  storageBarrier();
  for (var t = 1u; t < count; t = t + 1u) {
    for (var j = lid; j < k; j = j + 64u) {
      alphas[base + t * k + j] = step_logsumexp(base + (t - 1u) * k, j, k) + emissions[base + t * k + j];
    }
    storageBarrier();
  }
  if (lid != 0u) { return; }
  if (count == 0u) {
    loglik[b] = 0.0;
    return;
  }
  // the gold path's score
  var gold = 0.0;
  var previous = 0u;
  for (var t = 0u; t < count; t = t + 1u) {
    let tag = u32(tags[b * steps + t]);
    gold = gold + emissions[base + t * k + tag];
    if (t > 0u) { gold = gold + transitions[previous * k + tag]; }
    previous = tag;
  }
  // minus the log partition
  let last = base + (count - 1u) * k;
  loglik[b] = gold - log_partition(last, k);
}
"""
)

# unary holds the betas (log-probabilities of the rest of the sequence) until each step's marginals replace them
CRF_MARGINALS = (
    CRF_COMMON
    + LOG_PARTITION
    + """
// log(sum over j of exp(transitions[i, j] + emissions[b, t + 1, j] + beta[t + 1, j])), betas at `next`
fn beta_logsumexp(i: u32, next: u32, k: u32) -> f32 {
  var m = neg_inf();
  for (var j = 0u; j < k; j = j + 1u) { m = max_nan(m, transitions[i * k + j] + emissions[next + j] + unary[next + j]); }
  if (m == neg_inf()) { return m; }
  var total = 0.0;
  for (var j = 0u; j < k; j = j + 1u) {
    total = total + exp_nan(transitions[i * k + j] + emissions[next + j] + unary[next + j] - m);
  }
  return m + log(total);
}
"""
    + CRF_MAIN
    + """
  let pair_base = b * k * k;
  for (var j = lid; j < k; j = j + 64u) {
    for (var i = 0u; i < k; i = i + 1u) { pairwise[pair_base + i * k + j] = 0.0; }
  }
  for (var i = count * k + lid; i < steps * k; i = i + 64u) { unary[base + i] = 0.0; }
  if (count == 0u) { return; }
  let last = base + (count - 1u) * k;
  let log_z = log_partition(last, k);
  for (var j = lid; j < k; j = j + 64u) { unary[last + j] = 0.0; }  // beta at the last step
  storageBarrier();
  for (var t = count - 1u; t > 0u; t = t - 1u) {  // the transition from step t - 1 to step t
    let here = base + t * k;
    let before = here - k;
    for (var j = lid; j < k; j = j + 64u) {
      let ahead = emissions[here + j] + unary[here + j] - log_z;
      for (var i = 0u; i < k; i = i + 1u) {
        let p = exp_nan(alphas[before + i] + transitions[i * k + j] + ahead);
        pairwise[pair_base + i * k + j] = pairwise[pair_base + i * k + j] + p;
      }
    }
    for (var i = lid; i < k; i = i + 64u) { unary[before + i] = beta_logsumexp(i, here, k); }
    storageBarrier();  // every thread has read the betas of step t: they can become marginals
    for (var j = lid; j < k; j = j + 64u) { unary[here + j] = exp_nan(alphas[here + j] + unary[here + j] - log_z); }
  }
  for (var j = lid; j < k; j = j + 64u) { unary[base + j] = exp_nan(alphas[base + j] + unary[base + j] - log_z); }
}
"""
)

CRF_DECODE = (
    CRF_COMMON
    + CRF_MAIN
    + """
  for (var i = count * k + lid; i < steps * k; i = i + 64u) {
    lattice[base + i] = 0.0;
    backpointers[base + i] = 0;
  }
  for (var t = count + lid; t < steps; t = t + 64u) { path[b * steps + t] = 0; }
  if (count == 0u) {
    if (lid == 0u) { scores[b] = 0.0; }
    return;
  }
  for (var j = lid; j < k; j = j + 64u) {
    lattice[base + j] = emissions[base + j];
    backpointers[base + j] = 0;
  }
  storageBarrier();
  for (var t = 1u; t < count; t = t + 1u) {
    let here = base + t * k;
    let before = here - k;
    for (var j = lid; j < k; j = j + 64u) {
      var best = lattice[before] + transitions[j];
      var best_from = 0u;
      for (var i = 1u; i < k; i = i + 1u) {
        let v = lattice[before + i] + transitions[i * k + j];
        if (v > best) { best = v; best_from = i; }  // ties: the lower tag
      }
      lattice[here + j] = best + emissions[here + j];
      backpointers[here + j] = i32(best_from);
    }
    storageBarrier();
  }
  if (lid != 0u) { return; }
  let last = base + (count - 1u) * k;
  var tag = 0u;
  for (var i = 1u; i < k; i = i + 1u) {
    if (lattice[last + i] > lattice[last + tag]) { tag = i; }
  }
  scores[b] = lattice[last + tag];
  for (var t = count - 1u; t > 0u; t = t - 1u) {
    path[b * steps + t] = i32(tag);
    tag = u32(backpointers[base + t * k + tag]);
  }
  path[b * steps] = i32(tag);
}
"""
)

CRF_UNIFORMS = {"batch": "u32", "steps": "u32", "num_tags": "u32"}


def _crf_uniforms(emissions):
    batch, steps, tags = emissions.shape
    return {"batch": batch, "steps": steps, "num_tags": tags}


def _forward_plan(emissions, tags, transitions, lengths):
    batch = emissions.shape[0]
    return Dispatch(
        outputs={"loglik": ((batch,), "float32"), "alphas": (emissions.shape, "float32")},
        workgroups=linear_groups(batch, 1),
        uniforms=_crf_uniforms(emissions),
    )


def _marginals_plan(emissions, transitions, lengths, alphas):
    batch, _, tags = emissions.shape
    return Dispatch(
        outputs={"unary": (emissions.shape, "float32"), "pairwise": ((batch, tags, tags), "float32")},
        workgroups=linear_groups(batch, 1),
        uniforms=_crf_uniforms(emissions),
    )


def _decode_plan(emissions, transitions, lengths):
    batch, steps, _ = emissions.shape
    return Dispatch(
        outputs={
            "path": ((batch, steps), "int32"),
            "scores": ((batch,), "float32"),
            "backpointers": (emissions.shape, "int32"),
            "lattice": (emissions.shape, "float32"),
        },
        workgroups=linear_groups(batch, 1),
        uniforms=_crf_uniforms(emissions),
    )


for _name, _source, _inputs, _plan in [
    ("CRFLogLikelihood", CRF_FORWARD, ["emissions", "tags", "transitions", "lengths"], _forward_plan),
    ("CRFMarginals", CRF_MARGINALS, ["emissions", "transitions", "lengths", "alphas"], _marginals_plan),
    ("CRFDecode", CRF_DECODE, ["emissions", "transitions", "lengths"], _decode_plan),
]:
    register_kernel(_name, "webgpu", Program(_name, _source, inputs=_inputs, uniforms=CRF_UNIFORMS, dispatch=_plan))
