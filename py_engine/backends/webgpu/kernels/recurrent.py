"""Recurrent sequence kernels in WGSL: LSTM, GRU and SimpleRNN over a whole sequence, and their backward passes.

The same kernels as backends/numpy/kernels/recurrent.py (read it for the math): the input projection xw of every step
comes in precomputed, and the kernel loops over time in Python, one dispatch per step (GRU: two, since its
candidate needs the reset gate of every unit). Each dispatch runs one thread per (batch row, unit) that does
the step's whole recurrent work for that unit: the dot products of h with recurrent_kernel for every gate,
the activations and the new state, written into the sequence buffer at the step's row. The next step reads
that row back (storage writes are visible to later dispatches of a pass), so no per-step tensor is made.

Backward passes run the steps in reverse. Thread (b, j) first collects the gradient reaching h_t[j] from step
t + 1 (dz_{t+1} . recurrent_kernel[j, :], or the carried gradient when step t + 1 was masked), then writes
step t's gate gradients; a last "final" dispatch turns step 0's into the initial state's gradient. The carried
gradients live in the initial-state gradient buffer, each thread reading and writing only its own entries.

Uniforms: count (threads: batch * units), batch, time_steps, units, the step t and the phase.
Every shader binds at most 8 storage buffers (WebGPU's default maxStorageBuffersPerShaderStage).
"""

import functools

from ....kernel_registry import register_kernel
from ..shader_layout import compose_linear_shader
from ..wgsl import linear_groups
from .math import HELPERS

F32 = "float32"
FINAL = 2  # phase of the dispatch that finishes a backward pass

# Each activation, and its derivative in terms of its output y (as the numpy kernels)
ACTIVATIONS = {
    "tanh": ("tanh(clamp(x, -15.0, 15.0))", "1.0 - y * y"),
    "sigmoid": ("sigmoid_(x)", "y * (1.0 - y)"),
    "hard_sigmoid": ("clamp(0.2 * x + 0.5, 0.0, 1.0)", "select(0.0, 0.2, y > 0.0 && y < 1.0)"),
    "relu": ("max(x, 0.0)", "select(0.0, 1.0, y > 0.0)"),
    "relu6": ("clamp(x, 0.0, 6.0)", "select(0.0, 1.0, y > 0.0 && y < 6.0)"),
    "linear": ("x", "1.0"),
    "softsign": ("x / (1.0 + abs(x))", "(1.0 - abs(y)) * (1.0 - abs(y))"),
    "softplus": ("max(x, 0.0) + log(1.0 + exp(-abs(x)))", "1.0 - exp(-y)"),
    "elu": ("select(exp(min(x, 0.0)) - 1.0, x, x > 0.0)", "select(y + 1.0, 1.0, y > 0.0)"),
    "selu": (
        "1.0507009873554805 * select(1.6732632423543772 * (exp(min(x, 0.0)) - 1.0), x, x > 0.0)",
        "select(y + 1.7580993408473766, 1.0507009873554805, y > 0.0)",
    ),
}

UNIFORMS = dict.fromkeys(("batch", "time_steps", "units", "t", "phase"), "u32")
COMMON = """
fn is_real(b: u32, t: u32) -> bool { return mask[b * u.time_steps + t] != 0.0; }
"""


def _activations(activation, recurrent_activation):
    act, act_d = ACTIVATIONS[activation]
    ract, ract_d = ACTIVATIONS[recurrent_activation or "linear"]
    return f"""
fn act(x: f32) -> f32 {{ return {act}; }}
fn act_d(y: f32) -> f32 {{ return {act_d}; }}
fn ract(x: f32) -> f32 {{ return {ract}; }}
fn ract_d(y: f32) -> f32 {{ return {ract_d}; }}
"""


# The state step t starts from: the initial state at t = 0, else the sequence's row t - 1 (`width` values a row)
def _previous(name, first, seq, width):
    return f"""
fn {name}(b: u32, t: u32, k: u32) -> f32 {{
  if (t == 0u) {{ return {first}[b * {width} + k]; }}
  return {seq}[(b * u.time_steps + t - 1u) * {width} + k];
}}
"""


@functools.cache
def _shader(kernel, body, inputs, outputs, activation, recurrent_activation, extra=""):
    helpers = HELPERS + COMMON + _activations(activation, recurrent_activation) + extra
    main = "  let U = u.units;\n  let b = i / U;\n  let j = i % U;\n" + body
    key = f"{kernel}:{activation}:{recurrent_activation}"
    ins, outs = [(n, F32) for n in inputs], [(n, F32) for n in outputs]
    return compose_linear_shader(key, main, ins, outs, UNIFORMS, helpers)


def _run(backend, shader, arrays, shape, phases, final=False, reverse=False):
    """One dispatch per (step, phase), in time order (reversed for backward passes), then the final one."""
    batch, time, units = shape
    uniforms = {"count": batch * units, "batch": batch, "time_steps": time, "units": units}
    groups = linear_groups(batch * units)
    order = range(time - 1, -1, -1) if reverse else range(time)
    for t in order:
        for phase in phases:
            backend.dispatch(shader, arrays, {**uniforms, "t": t, "phase": phase}, groups)
    if final:
        backend.dispatch(shader, arrays, {**uniforms, "t": 0, "phase": FINAL}, groups)


# ---- LSTM: seq [batch, time, 2 * units] holds h then c; state0 [batch, 2 * units] ----------------------------

_LSTM_GATES = """
  let G = 4u * U;
  let x = (b * u.time_steps + t) * G + j;
  var zi = xw[x];
  var zf = xw[x + U];
  var zg = xw[x + 2u * U];
  var zo = xw[x + 3u * U];
  for (var k = 0u; k < U; k = k + 1u) {
    let hk = previous(b, t, k);
    let r = k * G + j;
    zi = zi + hk * rk[r];
    zf = zf + hk * rk[r + U];
    zg = zg + hk * rk[r + 2u * U];
    zo = zo + hk * rk[r + 3u * U];
  }
  let ig = ract(zi);
  let fg = ract(zf);
  let gg = act(zg);
  let og = ract(zo);
  let cp = previous(b, t, U + j);
  let c = fg * cp + ig * gg;
"""

_LSTM_FORWARD = (
    "  let t = u.t;\n"
    + _LSTM_GATES
    + """  let o = (b * u.time_steps + t) * 2u * U;
  if (is_real(b, t)) {
    seq[o + j] = og * act(c);
    seq[o + U + j] = c;
  } else {
    seq[o + j] = previous(b, t, j);
    seq[o + U + j] = cp;
  }
"""
)

_LSTM_BACKWARD = (
    """  let G = 4u * U;
  let s = b * 2u * U;
  if (u.phase == 2u) {
    if (is_real(b, 0u)) {
      var acc = 0.0;
      let row = b * u.time_steps * G;
      for (var m = 0u; m < G; m = m + 1u) { acc = acc + dz[row + m] * rk[j * G + m]; }
      ds0[s + j] = acc;
    }
    return;
  }
  let t = u.t;
  var carry_h = 0.0;
  var carry_c = 0.0;
  if (t + 1u < u.time_steps) {
    carry_c = ds0[s + U + j];
    if (is_real(b, t + 1u)) {
      let row = (b * u.time_steps + t + 1u) * G;
      for (var m = 0u; m < G; m = m + 1u) { carry_h = carry_h + dz[row + m] * rk[j * G + m]; }
    } else {
      carry_h = ds0[s + j];
    }
  }
  let d = (b * u.time_steps + t) * 2u * U;
  let dh = dseq[d + j] + carry_h;
  let dc = dseq[d + U + j] + carry_c;
  let at_z = (b * u.time_steps + t) * G + j;
  if (!is_real(b, t)) {
    dz[at_z] = 0.0;
    dz[at_z + U] = 0.0;
    dz[at_z + 2u * U] = 0.0;
    dz[at_z + 3u * U] = 0.0;
    ds0[s + j] = dh;
    ds0[s + U + j] = dc;
    return;
  }
"""
    + _LSTM_GATES.replace("  let G = 4u * U;\n", "")
    + """  let ac = act(c);
  let dc_new = dc + dh * og * act_d(ac);
  dz[at_z] = dc_new * gg * ract_d(ig);
  dz[at_z + U] = dc_new * cp * ract_d(fg);
  dz[at_z + 2u * U] = dc_new * ig * act_d(gg);
  dz[at_z + 3u * U] = dh * ac * ract_d(og);
  ds0[s + U + j] = dc_new * fg;
"""
)


def _lstm_sequence(backend, xw, state0, rk, mask, activation, recurrent_activation):
    batch, time = xw.shape[:2]
    units = rk.shape[0]
    seq = backend.empty((batch, time, 2 * units), F32)
    extra = _previous("previous", "s0", "seq", "2u * u.units")
    shader = _shader(
        "LSTMSequence", _LSTM_FORWARD, ("xw", "s0", "rk", "mask"), ("seq",), activation, recurrent_activation, extra
    )
    _run(backend, shader, [xw, state0, rk, mask, seq], (batch, time, units), (0,))
    return seq


def _lstm_sequence_grad(backend, xw, state0, rk, mask, seq, dseq, activation, recurrent_activation):
    batch, time = xw.shape[:2]
    units = rk.shape[0]
    dz = backend.empty(xw.shape, F32)
    ds0 = backend.empty(state0.shape, F32)
    extra = _previous("previous", "s0", "seq", "2u * u.units")
    inputs = ("xw", "s0", "rk", "mask", "seq", "dseq")
    shader = _shader("LSTMSequenceGrad", _LSTM_BACKWARD, inputs, ("dz", "ds0"), activation, recurrent_activation, extra)
    _run(backend, shader, [xw, state0, rk, mask, seq, dseq, dz, ds0], (batch, time, units), (0,), True, True)
    return dz, ds0


# ---- GRU (reset_after=False): gates [batch, time, 3 * units] hold z, r, hh after their activations ------------

_GRU_FORWARD = """  let t = u.t;
  let G = 3u * U;
  let row = (b * u.time_steps + t) * G;
  if (u.phase == 0u) {
    var az = xw[row + j];
    var ar = xw[row + U + j];
    for (var k = 0u; k < U; k = k + 1u) {
      let hk = previous(b, t, k);
      az = az + hk * rk[k * G + j];
      ar = ar + hk * rk[k * G + U + j];
    }
    gates[row + j] = ract(az);
    gates[row + U + j] = ract(ar);
    return;
  }
  var ah = xw[row + 2u * U + j];
  for (var k = 0u; k < U; k = k + 1u) {
    ah = ah + gates[row + U + k] * previous(b, t, k) * rk[k * G + 2u * U + j];
  }
  let hh = act(ah);
  gates[row + 2u * U + j] = hh;
  let z = gates[row + j];
  let hp = previous(b, t, j);
  hseq[(b * u.time_steps + t) * U + j] = select(hp, z * hp + (1.0 - z) * hh, is_real(b, t));
"""

_GRU_BACKWARD = """  let G = 3u * U;
  let s = b * U + j;
  if (u.phase == 2u) {
    if (is_real(b, 0u)) {
      var acc = dh0[s];
      let row = b * u.time_steps * G;
      for (var m = 0u; m < 2u * U; m = m + 1u) { acc = acc + da[row + m] * rk[j * G + m]; }
      dh0[s] = acc;
    }
    return;
  }
  let t = u.t;
  let row = (b * u.time_steps + t) * G;
  if (u.phase == 1u) {
    if (!is_real(b, t)) {
      da[row + U + j] = 0.0;
      return;
    }
    var dq = 0.0;
    for (var m = 0u; m < U; m = m + 1u) { dq = dq + da[row + 2u * U + m] * rk[j * G + 2u * U + m]; }
    let r = gates[row + U + j];
    da[row + U + j] = dq * previous(b, t, j) * ract_d(r);
    dh0[s] = dh0[s] + dq * r;
    return;
  }
  var carry = 0.0;
  if (t + 1u < u.time_steps) {
    carry = dh0[s];
    if (is_real(b, t + 1u)) {
      let next = row + G * 1u;
      for (var m = 0u; m < 2u * U; m = m + 1u) { carry = carry + da[next + m] * rk[j * G + m]; }
    }
  }
  let dh = dhseq[(b * u.time_steps + t) * U + j] + carry;
  if (!is_real(b, t)) {
    da[row + j] = 0.0;
    da[row + 2u * U + j] = 0.0;
    dh0[s] = dh;
    return;
  }
  let z = gates[row + j];
  let hh = gates[row + 2u * U + j];
  da[row + j] = dh * (previous(b, t, j) - hh) * ract_d(z);
  da[row + 2u * U + j] = dh * (1.0 - z) * act_d(hh);
  dh0[s] = dh * z;
"""


def _gru_sequence(backend, xw, h0, rk, mask, activation, recurrent_activation):
    batch, time = xw.shape[:2]
    units = rk.shape[0]
    hseq = backend.empty((batch, time, units), F32)
    gates = backend.empty(xw.shape, F32)
    extra = _previous("previous", "h0", "hseq", "u.units")
    inputs, outputs = ("xw", "h0", "rk", "mask"), ("hseq", "gates")
    shader = _shader("GRUSequence", _GRU_FORWARD, inputs, outputs, activation, recurrent_activation, extra)
    _run(backend, shader, [xw, h0, rk, mask, hseq, gates], (batch, time, units), (0, 1))
    return hseq, gates


def _gru_sequence_grad(backend, h0, rk, mask, hseq, gates, dhseq, activation, recurrent_activation):
    batch, time, units = hseq.shape
    da = backend.empty(gates.shape, F32)
    dh0 = backend.empty(h0.shape, F32)
    extra = _previous("previous", "h0", "hseq", "u.units")
    inputs = ("h0", "rk", "mask", "hseq", "gates", "dhseq")
    shader = _shader("GRUSequenceGrad", _GRU_BACKWARD, inputs, ("da", "dh0"), activation, recurrent_activation, extra)
    _run(backend, shader, [h0, rk, mask, hseq, gates, dhseq, da, dh0], (batch, time, units), (0, 1), True, True)
    return da, dh0


# ---- SimpleRNN ------------------------------------------------------------------------------------------------

_SIMPLE_FORWARD = """  let t = u.t;
  var a = xw[(b * u.time_steps + t) * U + j];
  for (var k = 0u; k < U; k = k + 1u) { a = a + previous(b, t, k) * rk[k * U + j]; }
  hseq[(b * u.time_steps + t) * U + j] = select(previous(b, t, j), act(a), is_real(b, t));
"""

_SIMPLE_BACKWARD = """  let s = b * U + j;
  if (u.phase == 2u) {
    if (is_real(b, 0u)) {
      var acc = 0.0;
      let row = b * u.time_steps * U;
      for (var m = 0u; m < U; m = m + 1u) { acc = acc + da[row + m] * rk[j * U + m]; }
      dh0[s] = acc;
    }
    return;
  }
  let t = u.t;
  var carry = 0.0;
  if (t + 1u < u.time_steps) {
    if (is_real(b, t + 1u)) {
      let next = (b * u.time_steps + t + 1u) * U;
      for (var m = 0u; m < U; m = m + 1u) { carry = carry + da[next + m] * rk[j * U + m]; }
    } else {
      carry = dh0[s];
    }
  }
  let at = (b * u.time_steps + t) * U + j;
  let dh = dhseq[at] + carry;
  if (is_real(b, t)) {
    da[at] = dh * act_d(hseq[at]);
  } else {
    da[at] = 0.0;
    dh0[s] = dh;
  }
"""


def _simple_rnn_sequence(backend, xw, h0, rk, mask, activation):
    hseq = backend.empty(xw.shape, F32)
    extra = _previous("previous", "h0", "hseq", "u.units")
    shader = _shader(
        "SimpleRNNSequence", _SIMPLE_FORWARD, ("xw", "h0", "rk", "mask"), ("hseq",), activation, None, extra
    )
    _run(backend, shader, [xw, h0, rk, mask, hseq], xw.shape, (0,))
    return hseq


def _simple_rnn_sequence_grad(backend, rk, mask, hseq, dhseq, activation):
    da = backend.empty(hseq.shape, F32)
    dh0 = backend.empty((hseq.shape[0], hseq.shape[2]), F32)
    inputs = ("rk", "mask", "hseq", "dhseq")
    shader = _shader("SimpleRNNSequenceGrad", _SIMPLE_BACKWARD, inputs, ("da", "dh0"), activation, None)
    _run(backend, shader, [rk, mask, hseq, dhseq, da, dh0], hseq.shape, (0,), True, True)
    return da, dh0


register_kernel("LSTMSequence", "webgpu", _lstm_sequence)
register_kernel("LSTMSequenceGrad", "webgpu", _lstm_sequence_grad)
register_kernel("GRUSequence", "webgpu", _gru_sequence)
register_kernel("GRUSequenceGrad", "webgpu", _gru_sequence_grad)
register_kernel("SimpleRNNSequence", "webgpu", _simple_rnn_sequence)
register_kernel("SimpleRNNSequenceGrad", "webgpu", _simple_rnn_sequence_grad)
