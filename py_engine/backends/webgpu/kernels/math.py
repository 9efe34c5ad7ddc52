"""Elementwise WGSL kernels: unary, binary and select with NumPy broadcasting, cast, clip, and the fused rules of
ops.elementwise_rules (one shader per traced rule); run_elementwise, which shape.py's broadcast_to uses too.

Uniforms: the element count, the rank, the output shape and each input's strides against it (0 on broadcast
axes), then the op's scalars by name (`u.alpha`). When every input has the output's shape the shader indexes
directly, skipping the index arithmetic (and the shape uniforms). An input that is a host scalar (the backend's
HostScalar: `x * 2.0`'s 2.0) is a uniform too, `u.value<k>`, not a binding.
"""

import functools

from ....kernel_registry import get_kernel, register_kernel
from ....selu_constants import SELU_SCALE, SELU_SCALE_ALPHA
from ...numpy.kernels.math import ERF_ALPHA, ERF_BETA
from ..shader_layout import compose_linear_shader
from ..wgsl import ELEMENT, MAX_RANK, broadcast_strides, linear_groups

F32, I32, BOOL = "float32", "int32", "bool"
SCALAR_TYPE = {F32: "f32", I32: "i32", BOOL: "u32"}

HELPERS = """
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nan() -> f32 { return f32_from_bits(0x7fc00000u); }
fn log1p_(x: f32) -> f32 {
  let v = 1.0 + x;
  if (v == 1.0 || is_nan(x)) { return x; }
  if (v <= 0.0 || is_inf(v)) { return log_safe(v); }
  return log(v) * x / (v - 1.0);
}
fn sigmoid_(x: f32) -> f32 { let e = exp_safe(-abs(x)); return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0); }
// the numpy kernel's erf: the same rational function on [-4, 4], evaluated in the same order
fn erf_(v: f32) -> f32 {
  let x = clamp(v, -4.0, 4.0);
  let x2 = x * x;
  var p = ALPHA0;
  P_STEPS
  var q = BETA0;
  Q_STEPS
  return x * p / q;
}
// numpy's (C99's) pow on every special value: pow(1, NaN) = 1, pow(-1, inf) = 1, pow(-0, -3) = -inf, ...
fn pow_f(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (is_nan(a) || is_nan(b)) { return nan(); }
  if (is_inf(b)) {
    if (abs(a) == 1.0) { return 1.0; }
    return select(0.0, f32_from_bits(0x7f800000u), (abs(a) > 1.0) == (b > 0.0));
  }
  let odd = abs(b) % 2.0 == 1.0;
  if (a == 0.0 || is_inf(a)) {  // 0 or inf, with a's sign when b is an odd integer
    let r = select(0.0, f32_from_bits(0x7f800000u), (a == 0.0) == (b < 0.0));
    return select(r, -r, odd && (bitcast<u32>(a) & 0x80000000u) != 0u);
  }
  if (a > 0.0) { return exp2(b * log2(a)); }
  if (floor(b) != b) { return nan(); }
  let r = exp2(b * log2(-a));
  return select(r, -r, odd);
}
fn pow_i(a: i32, b: i32) -> i32 {
  if (b < 0) { return select(select(0, select(-1, 1, b % 2 == 0), a == -1), 1, a == 1); }
  var result = 1; var base = a; var e = b;
  loop { if (e == 0) { break; } if ((e & 1) == 1) { result = result * base; } base = base * base; e = e >> 1u; }
  return result;
}
fn div_trunc_i(a: i32, b: i32) -> i32 {
  // on unsigned magnitudes: shading languages leave signed / and % of negatives loosely defined
  let q = i32(u32(abs(a)) / u32(abs(b)));
  return select(q, -q, (a < 0) != (b < 0));
}
fn floor_div_i(a: i32, b: i32) -> i32 {
  if (b == 0) { return 0; }
  let q = div_trunc_i(a, b);
  let r = a - q * b;
  return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));
}
fn mod_i(a: i32, b: i32) -> i32 {
  if (b == 0) { return 0; }
  let r = a - div_trunc_i(a, b) * b;
  return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}
fn expm1_(x: f32) -> f32 {  // Kahan's: (u - 1) * x / log(u) cancels the rounding of u = exp(x)
  let u = exp_safe(x);
  if (u == 1.0 || is_nan(x)) { return x; }
  let um = u - 1.0;
  if (um == -1.0 || is_inf(u)) { return um; }
  return um * (x / log(u));
}
// asin and acos through atan2 (the builtins were 2e-4 off on llvmpipe); NaN outside [-1, 1]
fn asin_(x: f32) -> f32 {
  if (is_nan(x) || abs(x) > 1.0) { return nan(); }
  if (x == 0.0) { return x; }  // SwiftShader's atan2(-0, 1) is pi
  return atan2(x, sqrt((1.0 - x) * (1.0 + x)));
}
fn acos_(x: f32) -> f32 {
  if (is_nan(x) || abs(x) > 1.0) { return nan(); }
  return atan2(sqrt((1.0 - x) * (1.0 + x)), x);
}
fn asinh_(x: f32) -> f32 {
  let a = abs(x);
  var r = log(a) + 0.6931472;  // past 1e18, a * a would overflow: log(2a)
  if (a <= 1e18) { r = log1p_(a + a * a / (1.0 + sqrt(1.0 + a * a))); }
  return select(select(r, -r, x < 0.0), x, is_nan(x));
}
fn acosh_(x: f32) -> f32 {
  if (is_nan(x) || x < 1.0) { return nan(); }
  if (x > 1e18) { return log(x) + 0.6931472; }
  let t = x - 1.0;
  return log1p_(t + sqrt(2.0 * t + t * t));
}
fn atanh_(x: f32) -> f32 {
  if (is_nan(x) || abs(x) > 1.0) { return nan(); }
  let a = abs(x);  // on |x|: log1p of a positive number loses nothing near x = -1
  let r = 0.5 * log1p_(2.0 * a / (1.0 - a));
  return select(r, -r, x < 0.0);
}
// numpy's arctan2 on every special value: signed zeros pick 0 or pi, infinities the multiples of pi / 4
fn atan2_(a: f32, b: f32) -> f32 {
  if (is_nan(a) || is_nan(b)) { return nan(); }
  let negative_b = (bitcast<u32>(b) & 0x80000000u) != 0u;
  var r = atan2(abs(a), b);
  if (is_inf(a) && is_inf(b)) { r = select(0.7853981633974483, 2.356194490192345, negative_b); }
  else if (is_inf(a)) { r = 1.5707963267948966; }
  else if (is_inf(b) || a == 0.0) { r = select(0.0, 3.141592653589793, negative_b); }
  else if (b == 0.0) { r = 1.5707963267948966; }
  return select(r, -r, (bitcast<u32>(a) & 0x80000000u) != 0u);
}
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn signed_zero(negative: bool) -> f32 { return bitcast<f32>(select(0u, 0x80000000u, negative)); }
fn fmod_(a: f32, b: f32) -> f32 {
  if (is_inf(b) && !is_inf(a) && !is_nan(a)) { return a; }
  return a - b * trunc(a / b);
}
// (floor(a / b), a mod b) with numpy's divmod rules, including signed zeros, infinities and NaN
fn divmod_(a: f32, b: f32) -> vec2<f32> {
  if (is_nan(a) || is_nan(b)) { return vec2<f32>(nan(), nan()); }
  var m = fmod_(a, b);
  if (b == 0.0) { return vec2<f32>(a / b, m); }
  var d = (a - m) / b;
  if (is_nan(d)) { return vec2<f32>(d, nan()); }  // inf // x: floor(NaN) is not NaN everywhere
  if (m != 0.0) {
    if ((b < 0.0) != (m < 0.0)) { m = m + b; d = d - 1.0; }
  } else {
    m = signed_zero(b < 0.0);
  }
  var f = signed_zero((bitcast<u32>(a / b) & 0x80000000u) != 0u);  // copysign(0, a / b)
  if (d != 0.0) { f = floor(d); if (d - f > 0.5) { f = f + 1.0; } }
  return vec2<f32>(f, m);
}
"""

HELPERS = (
    HELPERS.replace("ALPHA0", f"{ERF_ALPHA[0]!r}")
    .replace("P_STEPS", " ".join(f"p = p * x2 + {a!r};" for a in ERF_ALPHA[1:]))
    .replace("BETA0", f"{ERF_BETA[0]!r}")
    .replace("Q_STEPS", " ".join(f"q = q * x2 + {b!r};" for b in ERF_BETA[1:]))
)

# Expressions in x (unary) or a, b (binary); T is the element type. NaN propagates as in numpy.
UNARY = {
    "Neg": "-x",
    "Abs": "abs(x)",
    "Exp": "exp_safe(x)",
    "Log": "log_safe(x)",
    "Log1p": "log1p_(x)",
    "Sqrt": "sqrt(x)",
    "Rsqrt": "inverseSqrt(x)",
    "Square": "x * x",
    "Reciprocal": "1.0 / x",
    "Relu": "select(max(x, T(0)), x, IS_NAN(x))",
    "Relu6": "select(clamp(x, T(0), T(6)), x, IS_NAN(x))",
    "Elu": "select(exp_safe(x) - 1.0, x, x > 0.0)",
    "Sigmoid": "sigmoid_(x)",
    "Tanh": "select(tanh(clamp(x, -15.0, 15.0)), x, IS_NAN(x))",
    "Softplus": "select(max(x, 0.0) + log1p_(exp(-abs(x))), x, IS_NAN(x))",
    "Erf": "select(erf_(x), x, IS_NAN(x))",
    "Sin": "sin(x)",
    "Cos": "cos(x)",
    "Tan": "select(select(tan(x), nan(), is_inf(x)), x, IS_NAN(x))",
    "Asin": "asin_(x)",
    "Acos": "acos_(x)",
    "Atan": "select(select(atan(x), sign(x) * 1.5707964, is_inf(x)), x, IS_NAN(x))",
    "Sinh": "select(sinh(x), x, IS_NAN(x))",
    "Cosh": "select(cosh(x), x, IS_NAN(x))",
    "Asinh": "asinh_(x)",
    "Acosh": "acosh_(x)",
    "Atanh": "atanh_(x)",
    "Expm1": "expm1_(x)",
    "Selu": f"select({SELU_SCALE_ALPHA!r} * expm1_(x), {SELU_SCALE!r} * x, x > 0.0)",
    "Floor": "floor(x)",
    "Ceil": "ceil(x)",
    "Round": "round(x)",  # WGSL rounds half to even, as TensorFlow and numpy
    "Sign": "select(sign(x), x, IS_NAN(x))",
    "LogicalNot": "select(1u, 0u, x != 0u)",
}
BINARY = {
    "Add": "a + b",
    "Sub": "a - b",
    "Mul": "a * b",
    "RealDiv": "a / b",
    "FloorDiv": {F32: "divmod_(a, b).x", I32: "floor_div_i(a, b)"},
    "Mod": {F32: "divmod_(a, b).y", I32: "mod_i(a, b)"},
    "Pow": {F32: "pow_f(a, b)", I32: "pow_i(a, b)"},
    "Maximum": {F32: "select(max(a, b), nan(), is_nan(a) || is_nan(b))", I32: "max(a, b)"},
    "Minimum": {F32: "select(min(a, b), nan(), is_nan(a) || is_nan(b))", I32: "min(a, b)"},
    "SquaredDifference": "(a - b) * (a - b)",
    "Prelu": "select(a, a * b, a < T(0))",
    "Atan2": "atan2_(a, b)",
    "DivNoNan": "select(a / b, 0.0, b == 0.0)",
    "BitwiseAnd": "a & b",
}
COMPARE = {
    "Equal": "==",
    "NotEqual": "!=",
    "Less": "<",
    "LessEqual": "<=",
    "Greater": ">",
    "GreaterEqual": ">=",
}
LOGICAL = {"LogicalAnd": "select(0u, 1u, a != 0u && b != 0u)", "LogicalOr": "select(0u, 1u, a != 0u || b != 0u)"}


def _offsets(inputs):
    """WGSL computing the element offset o<k> of each input k in `inputs` from the flat output index i."""
    decls = "\n".join(f"  var o{k} = 0u;" for k in inputs)
    adds = "\n".join(f"    o{k} = o{k} + c * u_strides{k}(d);" for k in inputs)
    return f"""{decls}
  var rest = i;
  for (var step = 0u; step < u.rank; step = step + 1u) {{
    let d = u.rank - 1u - step;
    let size = u_shape(d);
    let c = rest % size;
    rest = rest / size;
{adds}
  }}"""


@functools.cache
def elementwise_shader(name, expr, names, in_dtypes, out_dtype, direct, scalars=(), held=()):
    """One output element per thread: out[i] = expr, the inputs bound to `names` at their broadcast offsets;
    scalars: (name, WGSL type) of the uniforms expr reads as u.name; held: the inputs read from u.value<k>."""
    bound = [k for k in range(len(in_dtypes)) if k not in held]
    ins = [(f"in{k}", in_dtypes[k]) for k in bound]
    loads = "\n".join(
        f"  let {n} = u.value{k};" if k in held else f"  let {n} = in{k}[{'i' if direct else f'o{k}'}];"
        for k, n in enumerate(names)
    )
    body = f"""{"" if direct else _offsets(bound)}
{loads}
  out[i] = {expr};"""
    uniforms = {} if direct else {"rank": "u32", "shape": f"u32[{MAX_RANK}]"}
    uniforms |= {f"strides{k}": f"u32[{MAX_RANK}]" for k in bound if not direct}
    uniforms |= {f"value{k}": SCALAR_TYPE[in_dtypes[k]] for k in held}
    uniforms |= dict(scalars)
    # the scalars' types are in the key: one expr with an f32 or an i32 uniform is two different shaders
    typed = "".join(f":{n}={t}" for n, t in scalars) + "".join(f":value{k}" for k in held)
    key = f"{name}:{expr}:{','.join(in_dtypes)}->{out_dtype}:{'direct' if direct else 'strided'}{typed}"
    return compose_linear_shader(key, body, ins, [("out", out_dtype)], uniforms, HELPERS)


_NAMES = {1: ("x",), 2: ("a", "b"), 3: ("cond", "a", "b")}


def run_elementwise(backend, name, expr, inputs, out_shape, out_dtype, scalars=None):
    """out[i] = expr over the inputs broadcast to out_shape; scalars: {name: value} uniforms (their WGSL type
    follows the Python value: float -> f32, int -> i32)."""
    out = backend.empty(out_shape, out_dtype)
    scalars = scalars or {}
    held = tuple(k for k, x in enumerate(inputs) if x.value is not None)
    bound = [x for x in inputs if x.value is None] if held else inputs
    direct = all(x.shape == out_shape for x in bound)
    types = tuple((k, "f32" if isinstance(v, float) else "i32") for k, v in scalars.items())
    shader = elementwise_shader(
        name, expr, _NAMES[len(inputs)], tuple(x.dtype for x in inputs), out_dtype, direct, types, held
    )
    uniforms = {"count": out.size, **scalars}
    for k in held:
        uniforms[f"value{k}"] = inputs[k].value
    if not direct:
        uniforms |= {"rank": len(out_shape), "shape": out_shape}
        uniforms |= {
            f"strides{k}": broadcast_strides(x.shape, out_shape) for k, x in enumerate(inputs) if x.value is None
        }
    backend.dispatch(shader, [*bound, out], uniforms, linear_groups(out.size))
    return out


def _typed(expr, dtype):
    t = ELEMENT[dtype]
    return expr.replace("T(", f"{t}(").replace("IS_NAN(x)", "is_nan(x)" if dtype == F32 else "false")


def _broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _unary_kernel(name, expr):
    def kernel(backend, x):
        out_dtype = BOOL if name == "LogicalNot" else x.dtype
        return run_elementwise(backend, name, _typed(expr, x.dtype), [x], x.shape, out_dtype)

    return kernel


def _binary_kernel(name, expr):
    def kernel(backend, a, b):
        e = expr[a.dtype] if isinstance(expr, dict) else expr
        return run_elementwise(backend, name, _typed(e, a.dtype), [a, b], _broadcast(a.shape, b.shape), a.dtype)

    return kernel


def _compare_kernel(name, op):
    def kernel(backend, a, b):
        test = f"a {op} b"
        if a.dtype == F32:  # IEEE: every comparison with NaN is false except !=
            test = (
                f"(a {op} b) || (is_nan(a) || is_nan(b))" if op == "!=" else f"(a {op} b) && !(is_nan(a) || is_nan(b))"
            )
        expr = f"select(0u, 1u, {test})"
        return run_elementwise(backend, name, expr, [a, b], _broadcast(a.shape, b.shape), BOOL)

    return kernel


def _logical_kernel(name, expr):
    def kernel(backend, a, b):
        return run_elementwise(backend, name, expr, [a, b], _broadcast(a.shape, b.shape), BOOL)

    return kernel


for _name, _expr in UNARY.items():
    register_kernel(_name, "webgpu", _unary_kernel(_name, _expr))
for _name, _expr in BINARY.items():
    register_kernel(_name, "webgpu", _binary_kernel(_name, _expr))
for _name, _op in COMPARE.items():
    register_kernel(_name, "webgpu", _compare_kernel(_name, _op))
for _name, _expr in LOGICAL.items():
    register_kernel(_name, "webgpu", _logical_kernel(_name, _expr))


# float tests, constant on int and bool tensors
FLOAT_TESTS = {
    "IsNan": ("is_nan(x)", "0u"),
    "IsInf": ("is_inf(x)", "0u"),
    "IsFinite": ("!is_inf(x) && !is_nan(x)", "1u"),
}


def _float_test(name, test, otherwise):
    def kernel(backend, x):
        expr = f"select(0u, 1u, {test})" if x.dtype == F32 else otherwise
        return run_elementwise(backend, name, expr, [x], x.shape, BOOL)

    return kernel


def _leaky_relu(backend, x, alpha):
    return run_elementwise(
        backend, "LeakyRelu", "select(x * u.alpha, x, x > 0.0)", [x], x.shape, x.dtype, {"alpha": alpha}
    )


def _select(backend, cond, a, b):
    shape = _broadcast(cond.shape, _broadcast(a.shape, b.shape))
    return run_elementwise(backend, "Select", "select(b, a, cond != 0u)", [cond, a, b], shape, a.dtype)


CAST = {
    (F32, I32): "i32(x)",
    # on the bits: only +-0 are false. SwiftShader's `x != 0.0` is false for NaN (numpy: True)
    (F32, BOOL): "select(0u, 1u, (bitcast<u32>(x) & 0x7fffffffu) != 0u)",
    (I32, F32): "f32(x)",
    (I32, BOOL): "select(0u, 1u, x != 0)",
    (BOOL, F32): "select(0.0, 1.0, x != 0u)",
    (BOOL, I32): "select(0, 1, x != 0u)",
}


def _cast(backend, x, dtype):
    expr = "x" if dtype == x.dtype else CAST[(x.dtype, dtype)]
    return run_elementwise(backend, "Cast", expr, [x], x.shape, dtype)


def _clip(backend, x, lo, hi):
    if x.dtype == F32:
        expr = "select(clamp(x, u.lo, u.hi), x, is_nan(x))"
        return run_elementwise(backend, "ClipByValue", expr, [x], x.shape, x.dtype, {"lo": float(lo), "hi": float(hi)})
    return run_elementwise(
        backend, "ClipByValue", "clamp(x, u.lo, u.hi)", [x], x.shape, x.dtype, {"lo": int(lo), "hi": int(hi)}
    )


# ops.math.activation_grad in dy (a) and the activation's output y (b); a compare is false for NaN, as Greater's
ACTIVATION_GRAD = {
    "relu": "a * select(0.0, 1.0, b > 0.0 && !is_nan(b))",
    "relu6": "a * select(0.0, 1.0, b > 0.0 && b < 6.0 && !is_nan(b))",
    "sigmoid": "a * b * (1.0 - b)",
    "tanh": "a * (1.0 - b * b)",
    "elu": "select(a * (b + 1.0), a, b > 0.0 && !is_nan(b))",
    "softplus": "a * (1.0 - exp_safe(-b))",
}


def _activation_grad(backend, dy, y, activation):
    return run_elementwise(backend, "ActivationGrad", ACTIVATION_GRAD[activation], [dy, y], dy.shape, F32)


def _clip_grad(backend, dy, x, lo, hi):
    expr = "select(0.0, a, b >= u.lo && b <= u.hi && !is_nan(b))"
    return run_elementwise(backend, "ClipByValueGrad", expr, [dy, x], dy.shape, F32, {"lo": lo, "hi": hi})


@functools.cache
def _fused_shader(program):
    """ops.elementwise_rules's traced rule in one shader: each step calls its op's float32 expression as a function (the same
    arithmetic as the op's own kernel); the scalars are one vector, read by every thread."""
    fns = []
    for name in sorted({name for name, _ in program.steps}):
        expr = {**UNARY, **BINARY}[name]
        params = "a: f32, b: f32" if name in BINARY else "x: f32"
        fns.append(
            f"fn op_{name}({params}) -> f32 {{ return {_typed(expr[F32] if isinstance(expr, dict) else expr, F32)}; }}"
        )
    lines = [f"  let v{k} = in{k}[i];" for k in range(program.tensors)]
    lines += [f"  let v{program.tensors + k} = scalars[{k}];" for k in range(program.scalars)]
    for k, (name, args) in enumerate(program.steps, program.tensors + program.scalars):
        lines.append(f"  let v{k} = op_{name}({', '.join(f'v{a}' for a in args)});")
    lines += [f"  out{j}[i] = v{v};" for j, v in enumerate(program.outputs)]
    ins = [(f"in{k}", F32) for k in range(program.tensors)] + ([("scalars", F32)] if program.scalars else [])
    outs = [(f"out{j}", F32) for j in range(len(program.outputs))]
    key = f"FusedElementwise:{program.describe()}"
    return compose_linear_shader(key, "\n".join(lines), ins, outs, {}, HELPERS + "\n".join(fns) + "\n")


def _fused_elementwise(backend, *inputs, program):
    outs = [backend.empty(inputs[0].shape, F32) for _ in program.outputs]
    n = outs[0].size
    backend.dispatch(_fused_shader(program), [*inputs, *outs], {"count": n}, linear_groups(n))
    return tuple(outs)


for _name, (_test, _otherwise) in FLOAT_TESTS.items():
    register_kernel(_name, "webgpu", _float_test(_name, _test, _otherwise))
register_kernel("LeakyRelu", "webgpu", _leaky_relu)
register_kernel("Select", "webgpu", _select)
register_kernel("Cast", "webgpu", _cast)
register_kernel("ClipByValue", "webgpu", _clip)
register_kernel("ActivationGrad", "webgpu", _activation_grad)
register_kernel("ClipByValueGrad", "webgpu", _clip_grad)
register_kernel("FusedElementwise", "webgpu", _fused_elementwise)

# the kernels that hand every input to run_elementwise, which reads a host scalar as a uniform: the backend uploads
# one only for the others
TAKES_HOST_SCALARS = frozenset(
    get_kernel(name, "webgpu")
    for name in (
        *UNARY,
        *BINARY,
        *COMPARE,
        *LOGICAL,
        *FLOAT_TESTS,
        "LeakyRelu",
        "Select",
        "Cast",
        "ClipByValue",
    )
)
