// Elementwise ops: binary with broadcasting, unary, equality, casts to float32 (float16 too), and the optimizers' fused
// programs.

#include "simd.h"

// ---- e^x and the sigmoid -------------------------------------------------------------------------------------
// e^x for x <= 0 (no libm here): x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^6 (relative error
// about 1e-7, a float's ulp), times 2^n built in the exponent bits. Below -87.3 the result flushes to 0.
INLINE f32x4 exp_nonpositive(f32x4 x) {
  x = wasm_f32x4_pmax(x, wasm_f32x4_splat(-87.3f));
  f32x4 n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504f)));
  f32x4 r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693145751953125f)));  // ln2's high part, exact
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(1.428606765330187e-06f)));  // and its low part
  // the series in Estrin's grouping, (1 + r) + r^2 (1/2 + r/6) + r^4 (1/24 + r/120 + r^2/720): a chain of 7 operations
  // where Horner's is 12, so the loop's vectors overlap more (1.3 M values, Node: 1.95 -> 1.8 ms)
#define LINE(c0, c1) wasm_f32x4_add(wasm_f32x4_splat(c0), wasm_f32x4_mul(r, wasm_f32x4_splat(c1)))
  f32x4 r2 = wasm_f32x4_mul(r, r), r4 = wasm_f32x4_mul(r2, r2);
  f32x4 high = wasm_f32x4_add(LINE(1.0f / 24, 1.0f / 120), wasm_f32x4_mul(r2, wasm_f32x4_splat(1.0f / 720)));
  f32x4 p = wasm_f32x4_add(wasm_f32x4_add(LINE(1.0f, 1.0f), wasm_f32x4_mul(r2, LINE(0.5f, 1.0f / 6))),
                           wasm_f32x4_mul(r4, high));
#undef LINE
  // 2^n: n + 127 (1 .. 127) in the low bits of 1.5 * 2^23 + n + 127 (exact), shifted into the exponent: two
  // instructions where i32x4.trunc_sat_f32x4 is seven in V8's x86 code
  v128_t scale = wasm_i32x4_shl(wasm_f32x4_add(n, wasm_f32x4_splat(12582912.0f + 127.0f)), 23);
  return wasm_f32x4_mul(p, scale);
}

// 1 / (1 + e^-x) as the numpy kernel computes it: e = e^-|x|, then 1 / (1 + e) for x >= 0 and e / (1 + e) below,
// the latter as e * (1 / (1 + e)), within an ulp of it: one division per vector (divps is the loop's slowest
// instruction; a detector's 1.3 M scores, Node: 2.5 -> 1.5 ms). A pass of its own (the unary kernel), not a GEMM
// epilogue: there, inlined or called, it cost the GEMM's k loop 9-13% (registers).
INLINE f32x4 sigmoid4(f32x4 x) {
  f32x4 e = exp_nonpositive(wasm_f32x4_neg(wasm_f32x4_abs(x)));
  f32x4 r = wasm_f32x4_div(wasm_f32x4_splat(1.0f), wasm_f32x4_add(wasm_f32x4_splat(1.0f), e));
  return wasm_v128_bitselect(r, wasm_f32x4_mul(e, r), wasm_f32x4_ge(x, wasm_f32x4_splat(0.0f)));
}

// ---- elementwise -------------------------------------------------------------------------------------------------
// Binary ops on float32: out[i] = a[i % na] op b[i % nb], where na and nb are n, 1, or a divisor of n (a trailing
// vector repeated over rows, as a bias). op: BINARY_* (op_codes.h).
INLINE f32x4 binary4(int op, f32x4 a, f32x4 b) {
  switch (op) {
    case BINARY_ADD: return wasm_f32x4_add(a, b);
    case BINARY_SUB: return wasm_f32x4_sub(a, b);
    case BINARY_MUL: return wasm_f32x4_mul(a, b);
    case BINARY_REAL_DIV: return wasm_f32x4_div(a, b);
    case BINARY_MAXIMUM: return wasm_f32x4_max(a, b);
    case BINARY_MINIMUM: return wasm_f32x4_min(a, b);
    // a = dy, b = y: dy * (y > 0) (a multiply, not a mask, so that 0 * inf is NaN as in the numpy kernel)
    case BINARY_RELU_GRAD:
      return wasm_f32x4_mul(a, wasm_v128_and(wasm_f32x4_gt(b, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(1.0f)));
    case BINARY_RELU6_GRAD: {
      f32x4 inside = wasm_v128_and(wasm_f32x4_gt(b, wasm_f32x4_splat(0.0f)), wasm_f32x4_lt(b, wasm_f32x4_splat(6.0f)));
      return wasm_f32x4_mul(a, wasm_v128_and(inside, wasm_f32x4_splat(1.0f)));
    }
    case BINARY_SQUARED_DIFFERENCE:
    default: {  // the wrappers pass only op_codes.py's codes
      f32x4 d = wasm_f32x4_sub(a, b);
      return wasm_f32x4_mul(d, d);
    }
  }
}

// The whole vectors of a run of `len` outputs where a and b each advance (step 1) or stay (step 0); returns how many
// outputs it wrote.
INLINE int binary_run_vectors(int op, const f32 *a, int sa, const f32 *b, int sb, f32 *out, int len) {
  int i = 0;
  if (sa && sb) {
    for (; i + 4 <= len; i += 4) wasm_v128_store(out + i, binary4(op, wasm_v128_load(a + i), wasm_v128_load(b + i)));
  } else if (sa) {
    f32x4 vb = wasm_v128_load32_splat(b);
    for (; i + 4 <= len; i += 4) wasm_v128_store(out + i, binary4(op, wasm_v128_load(a + i), vb));
  } else if (sb) {
    f32x4 va = wasm_v128_load32_splat(a);
    for (; i + 4 <= len; i += 4) wasm_v128_store(out + i, binary4(op, va, wasm_v128_load(b + i)));
  } else {
    f32x4 v = binary4(op, wasm_v128_load32_splat(a), wasm_v128_load32_splat(b));
    for (; i + 4 <= len; i += 4) wasm_v128_store(out + i, v);
  }
  return i;
}

// The same with the op a constant of each copy of the loops: binary4's switch inside them ran a product of two 1.3 M
// value maps 2.3x slower (Node: 0.32 -> 0.14 ms). One function the callers share, so that V8 tiers it up once.
__attribute__((noinline)) static int binary_vectors(int op, const f32 *a, int sa, const f32 *b, int sb, f32 *out,
                                                    int len) {
  switch (op) {
#define CASE(o) \
  case o: return binary_run_vectors(o, a, sa, b, sb, out, len);
    CASE(BINARY_ADD) CASE(BINARY_SUB) CASE(BINARY_MUL) CASE(BINARY_REAL_DIV) CASE(BINARY_MAXIMUM) CASE(BINARY_MINIMUM)
    CASE(BINARY_RELU_GRAD) CASE(BINARY_RELU6_GRAD)
#undef CASE
    default: return binary_run_vectors(BINARY_SQUARED_DIFFERENCE, a, sa, b, sb, out, len);
  }
}

// A run of `len` outputs where a and b each advance (step 1) or stay (step 0).
INLINE void binary_run(int op, const f32 *a, int sa, const f32 *b, int sb, f32 *out, int len) {
  int i = binary_vectors(op, a, sa, b, sb, out, len);
  if (i < len) {
    int rest = len - i;
    f32x4 va = sa ? load_partial(a + i, rest) : wasm_v128_load32_splat(a);
    f32x4 vb = sb ? load_partial(b + i, rest) : wasm_v128_load32_splat(b);
    store_partial(out + i, binary4(op, va, vb), rest);
  }
}

// A repeated row of 2, 3 or 6 values (an image's channels: a normalization's scale or offset): its pattern over 12
// outputs held in 3 vectors, where a run per row computes 2-3 lanes at a time (192x192x3, Node: 0.14 -> 0.02 ms).
// s: the row, l: the other operand (n values); s_left: s is the op's left operand.
INLINE void binary_rows12(int op, const f32 *s, int row, int s_left, const f32 *l, f32 *out, int n) {
  f32x4 p0 = wasm_f32x4_make(s[0], s[1 % row], s[2 % row], s[3 % row]);
  f32x4 p1 = wasm_f32x4_make(s[4 % row], s[5 % row], s[6 % row], s[7 % row]);
  f32x4 p2 = wasm_f32x4_make(s[8 % row], s[9 % row], s[10 % row], s[11 % row]);
#define OP(p, v) (s_left ? binary4(op, p, v) : binary4(op, v, p))
  int i = 0;
  for (; i + 12 <= n; i += 12) {
    wasm_v128_store(out + i, OP(p0, wasm_v128_load(l + i)));
    wasm_v128_store(out + i + 4, OP(p1, wasm_v128_load(l + i + 4)));
    wasm_v128_store(out + i + 8, OP(p2, wasm_v128_load(l + i + 8)));
  }
  for (int k = 0; i < n; i += 4, k++) {  // the last 1-11 values: the pattern from its start
    int rest = n - i < 4 ? n - i : 4;
    store_partial(out + i, OP(k == 0 ? p0 : k == 1 ? p1 : p2, load_partial(l + i, rest)), rest);
  }
#undef OP
}

EXPORT(binary)(int op, const f32 *a, int na, const f32 *b, int nb, f32 *out, int n) {
  // the shorter repeating operand sets the row length; a scalar repeats with any
  int row = na < nb ? na : nb;
  if (row <= 1 || row == n) {
    binary_run(op, a, na == n, b, nb == n, out, n);
    return;
  }
  if (row == 2 || row == 3 || row == 6) {
    binary_rows12(op, na < nb ? a : b, row, na < nb, na < nb ? b : a, out, n);
    return;
  }
  for (int r = 0; r < n; r += row)
    binary_run(op, na == n ? a + r : a, 1, nb == n ? b + r : b, 1, out + r, row);
}

// ---- int32 a op b as numpy's: Add, Sub, Mul wrap around (two's complement); FloorDiv rounds the quotient down,
// gives 0 for a divisor of 0 and INT_MIN for INT_MIN // -1; Mod takes the divisor's sign, 0 for a divisor of 0 (numpy's
// values; its warnings are left out). Each operand is n values or one (na, nb), as a pose decoder's heatmap index
// split into row and column ----------------------------------------------------------------------------------------
INLINE int floor_div_i32(int a, int b) {
  if (b == 0) return 0;
  if (b == -1) return (int)(0u - (unsigned)a);
  int q = a / b;
  return q - (a % b != 0 && (a < 0) != (b < 0));
}

INLINE int mod_i32(int a, int b) {
  if (b == 0 || b == -1) return 0;
  int r = a % b;
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

#define I32_LOOP(EXPR)                                                         \
  for (int i = 0; i < n; i++) {                                                \
    unsigned x = (unsigned)a[na == 1 ? 0 : i], y = (unsigned)b[nb == 1 ? 0 : i]; \
    out[i] = (int)(EXPR);                                                      \
  }

EXPORT(binary_i32)(int op, const int *a, int na, const int *b, int nb, int *out, int n) {
  switch (op) {
    case BINARY_I32_ADD: I32_LOOP(x + y) break;
    case BINARY_I32_SUB: I32_LOOP(x - y) break;
    case BINARY_I32_MUL: I32_LOOP(x * y) break;
    case BINARY_I32_FLOOR_DIV: I32_LOOP(floor_div_i32((int)x, (int)y)) break;
    case BINARY_I32_MOD:
    default: I32_LOOP(mod_i32((int)x, (int)y)) break;
  }
}
#undef I32_LOOP

INLINE f32x4 unary4(int op, f32x4 v) {
  switch (op) {
    case UNARY_RELU: return activate(v, ACT_RELU);
    case UNARY_RELU6: return activate(v, ACT_RELU6);
    case UNARY_SIGMOID: return sigmoid4(v);
    case UNARY_NEG: return wasm_f32x4_neg(v);
    case UNARY_ABS: return wasm_f32x4_abs(v);
    case UNARY_SQRT: return wasm_f32x4_sqrt(v);
    case UNARY_SQUARE:
    default: return wasm_f32x4_mul(v, v);
  }
}

// An outer broadcast: out[i, j] = col[i] op row[j] (col_left) or row[j] op col[i], i < M, j < J: a column of M
// values (shape (..., 1)) against a row of J (shape (1, ..., J)), as a pose decoder's grid of distances.
EXPORT(binary_outer)(int op, const f32 *col, int M, const f32 *row, int J, int col_left, f32 *out) {
  for (int i = 0; i < M; i++, out += J) {
    if (col_left)
      binary_run(op, col + i, 0, row, 1, out, J);
    else
      binary_run(op, row, 1, col + i, 0, out, J);
  }
}

EXPORT(unary)(int op, const f32 *x, f32 *out, int n) {
  int i = 0;
  // one loop per op, the op chosen once (as fused_elementwise's steps), whole vectors, then the last 1-3 values
#define LOOP(o) \
  for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, unary4(o, wasm_v128_load(x + i)));
  switch (op) {
    case UNARY_RELU: LOOP(UNARY_RELU) break;
    case UNARY_RELU6: LOOP(UNARY_RELU6) break;
    case UNARY_SIGMOID: LOOP(UNARY_SIGMOID) break;
    default: LOOP(op) break;
  }
#undef LOOP
  if (i < n) store_partial(out + i, unary4(op, load_partial(x + i, n - i)), n - i);
}

// n rows of cols values (row stride ldx) through (x * scale) * relu6(x + 3), act the scale's bits: the order of
// MobileNetV3's graph nodes (Mul, Add, Relu6, Mul), so their values. Its own function (not inlined), so its constants
// live only here.
__attribute__((noinline)) void hard_swish(f32 *x, int n, int ldx, int cols, int act) {
  f32x4 scale = wasm_i32x4_splat(act), three = wasm_f32x4_splat(3.0f);
  for (int r = 0; r < n; r++) {
    f32 *p = x + (long)r * ldx;
    int i = 0;
#define HARD_SWISH(v) wasm_f32x4_mul(wasm_f32x4_mul(v, scale), activate(wasm_f32x4_add(v, three), ACT_RELU6))
    for (; i + 4 <= cols; i += 4) wasm_v128_store(p + i, HARD_SWISH(wasm_v128_load(p + i)));
    if (i < cols) store_partial(p + i, HARD_SWISH(load_partial(p + i, cols - i)), cols - i);
#undef HARD_SWISH
  }
}

// ---- comparisons -------------------------------------------------------------------------------------------------
// out[i] = a[i] == b[i] as numpy's bool bytes (0 or 1); IEEE equality: a NaN equals nothing, -0 equals +0.
EXPORT(equal)(const f32 *a, const f32 *b, unsigned char *out, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    v128_t m0 = wasm_f32x4_eq(wasm_v128_load(a + i), wasm_v128_load(b + i));
    v128_t m1 = wasm_f32x4_eq(wasm_v128_load(a + i + 4), wasm_v128_load(b + i + 4));
    v128_t m2 = wasm_f32x4_eq(wasm_v128_load(a + i + 8), wasm_v128_load(b + i + 8));
    v128_t m3 = wasm_f32x4_eq(wasm_v128_load(a + i + 12), wasm_v128_load(b + i + 12));
    // each lane's mask (-1 or 0) narrowed to a byte, saturating keeps -1, then the low bit
    v128_t bytes = wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(m0, m1), wasm_i16x8_narrow_i32x4(m2, m3));
    wasm_v128_store(out + i, wasm_v128_and(bytes, wasm_i8x16_splat(1)));
  }
  for (; i < n; i++) out[i] = a[i] == b[i];
}

// ---- casts --------------------------------------------------------------------------------------------------------
// out[i] = x[i] as float32, rounded to nearest as numpy's astype: x int32 (from_bytes 0) or bool / uint8 (1).
EXPORT(to_f32)(const void *x, int from_bytes, f32 *out, int n) {
  int i = 0;
  if (!from_bytes) {
    const int *xi = x;
    for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, wasm_f32x4_convert_i32x4(wasm_v128_load(xi + i)));
    for (; i < n; i++) out[i] = (f32)xi[i];
    return;
  }
  const unsigned char *xb = x;
  for (; i + 16 <= n; i += 16) {
    v128_t b = wasm_v128_load(xb + i);
    v128_t lo = wasm_u16x8_extend_low_u8x16(b), hi = wasm_u16x8_extend_high_u8x16(b);
    wasm_v128_store(out + i, wasm_f32x4_convert_u32x4(wasm_u32x4_extend_low_u16x8(lo)));
    wasm_v128_store(out + i + 4, wasm_f32x4_convert_u32x4(wasm_u32x4_extend_high_u16x8(lo)));
    wasm_v128_store(out + i + 8, wasm_f32x4_convert_u32x4(wasm_u32x4_extend_low_u16x8(hi)));
    wasm_v128_store(out + i + 12, wasm_f32x4_convert_u32x4(wasm_u32x4_extend_high_u16x8(hi)));
  }
  for (; i < n; i++) out[i] = (f32)xb[i];
}

// out[i] = x[i], a float16 (IEEE half) widened to float32, exactly and as numpy's astype: every half is a float32. Its
// bits shifted into a float32's place (exponent and mantissa, 13 bits up) are that value times 2^-112, subnormal
// halves included, so one product by 2^112 rescales them; infinities and NaNs (exponent all ones) keep their
// mantissa under an all-ones exponent; the sign is put back last. A quantized graph model's weights (TF.js's
// float16 shards): numpy's astype converts one value at a time.
EXPORT(f16_to_f32)(const unsigned short *x, f32 *out, int n) {
  const v128_t magnitude = wasm_i32x4_splat(0x7fff), exponent = wasm_i32x4_splat(0x7f800000);
  const v128_t infinite = wasm_i32x4_splat(0x7c00 - 1), scale = wasm_f32x4_splat(0x1p112f);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t h = wasm_v128_load(x + i);
    v128_t halves[2] = {wasm_u32x4_extend_low_u16x8(h), wasm_u32x4_extend_high_u16x8(h)};
    for (int k = 0; k < 2; k++) {
      v128_t em = wasm_v128_and(halves[k], magnitude);
      v128_t shifted = wasm_i32x4_shl(em, 13);
      v128_t finite = wasm_f32x4_mul(shifted, scale);
      v128_t special = wasm_i32x4_gt(em, infinite);  // exponent all ones: infinity or NaN
      v128_t value = wasm_v128_bitselect(wasm_v128_or(shifted, exponent), finite, special);
      v128_t sign = wasm_i32x4_shl(wasm_v128_andnot(halves[k], magnitude), 16);
      wasm_v128_store(out + i + 4 * k, wasm_v128_or(value, sign));
    }
  }
  for (; i < n; i++) {
    unsigned em = x[i] & 0x7fffu, bits = em << 13;
    union { unsigned u; f32 f; } v = {bits};
    if (em > 0x7c00u - 1) v.u = bits | 0x7f800000u;
    else v.f *= 0x1p112f;
    v.u |= (unsigned)(x[i] & 0x8000u) << 16;
    out[i] = v.f;
  }
}

// ---- fused elementwise programs (py_engine/ops/elementwise_rules.py: the optimizers' update rules, hard-swish) ---------
// values[0 .. tensors) are the inputs (addresses in ptrs), values[tensors .. tensors+scalars) the scalars (splat
// from `scalars`), then one value per step. prog holds 3 ints per step: op, left, right (right unused by unary
// ops; FUSED_* in op_codes.h). outs[k] is the value written to output k (address ptrs[tensors + k]). Works
// FUSED_CHUNK elements at a time in scratch (values * FUSED_CHUNK floats).

EXPORT(fused_elementwise)(const int *prog, int steps, const int *ptrs, int tensors, const f32 *scalars,
                              int n_scalars, const int *outs, int n_outs, f32 *scratch, int n) {
  int first_step = tensors + n_scalars;
  for (int v = 0; v < n_scalars; v++) {
    f32x4 s = wasm_v128_load32_splat(scalars + v);
    for (int i = 0; i < FUSED_CHUNK; i += 4) wasm_v128_store(scratch + (tensors + v) * FUSED_CHUNK + i, s);
  }
  for (int i0 = 0; i0 < n; i0 += FUSED_CHUNK) {
    int len = n - i0 < FUSED_CHUNK ? n - i0 : FUSED_CHUNK;
    for (int t = 0; t < tensors; t++) {
      const f32 *src = (const f32 *)ptrs[t] + i0;
      f32 *dst = scratch + t * FUSED_CHUNK;
      for (int i = 0; i < len; i += 4) wasm_v128_store(dst + i, load_partial(src + i, len - i));
    }
    for (int k = 0; k < steps; k++) {
      const f32 *x = scratch + prog[3 * k + 1] * FUSED_CHUNK, *y = scratch + prog[3 * k + 2] * FUSED_CHUNK;
      f32 *z = scratch + (first_step + k) * FUSED_CHUNK;
      // one loop per op (the op chosen once per chunk, not per vector)
#define STEP(expr)                                                      \
  for (int i = 0; i < len; i += 4) {                                    \
    f32x4 a = wasm_v128_load(x + i);                                    \
    wasm_v128_store(z + i, expr);                                       \
  }                                                                     \
  break;
#define STEP2(expr) STEP(({ f32x4 b = wasm_v128_load(y + i); expr; }))
      switch (prog[3 * k]) {
        case FUSED_ADD: STEP2(wasm_f32x4_add(a, b))
        case FUSED_SUB: STEP2(wasm_f32x4_sub(a, b))
        case FUSED_MUL: STEP2(wasm_f32x4_mul(a, b))
        case FUSED_REAL_DIV: STEP2(wasm_f32x4_div(a, b))
        case FUSED_MAXIMUM: STEP2(wasm_f32x4_max(a, b))
        case FUSED_MINIMUM: STEP2(wasm_f32x4_min(a, b))
        case FUSED_NEG: STEP(wasm_f32x4_neg(a))
        case FUSED_SQRT: STEP(wasm_f32x4_sqrt(a))
        case FUSED_SQUARE: STEP(wasm_f32x4_mul(a, a))
        case FUSED_RELU: STEP(activate(a, ACT_RELU))
        case FUSED_RELU6: STEP(activate(a, ACT_RELU6))
        case FUSED_ABS:
        default: STEP(wasm_f32x4_abs(a))
      }
#undef STEP2
#undef STEP
    }
    for (int o = 0; o < n_outs; o++) {
      f32 *dst = (f32 *)ptrs[tensors + o] + i0;
      const f32 *src = scratch + outs[o] * FUSED_CHUNK;
      for (int i = 0; i < len; i += 4) store_partial(dst + i, wasm_v128_load(src + i), len - i);
    }
  }
}

// ---- a loss's small steps, so a captured training step runs them as native steps --------------------------------
// out[i, j] = x[i, j] op col[i] (col_left: col[i] op x[i, j]), i < M, j < J: a matrix against one value per row
// (shape (..., 1)), as a probability's division by its row's sum. IEEE's ops, so numpy's values.
EXPORT(binary_row_values)(int op, const f32 *x, int M, int J, const f32 *col, int col_left, f32 *out) {
  for (int i = 0; i < M; i++, x += J, out += J) {
    if (col_left)
      binary_run(op, col + i, 0, x, 1, out, J);
    else
      binary_run(op, x, 1, col + i, 0, out, J);
  }
}

// numpy's clip of floats: max(x, lo) then min(., hi), each keeping x where it is NaN (its _NPY_MAX/_NPY_MIN).
EXPORT(clip)(const f32 *x, f32 lo, f32 hi, f32 *out, int n) {
  for (int i = 0; i < n; i++) {
    f32 v = x[i];
    v = v != v || v > lo ? v : lo;
    out[i] = v != v || v < hi ? v : hi;
  }
}

// The clip's gradient: dy where lo <= x <= hi, else 0 (a NaN x gives 0).
EXPORT(clip_grad)(const f32 *dy, const f32 *x, f32 lo, f32 hi, f32 *out, int n) {
  for (int i = 0; i < n; i++) out[i] = x[i] >= lo && x[i] <= hi ? dy[i] : 0.0f;
}

// Softmax along rows of n: e^(x - max) by exp_nonpositive (an ulp or two from numpy's np.exp; a value 87.3 or more
// below the max gives about 1e-38, not 0), summed in order, then each divided by the sum as numpy does. The max
// is numpy's (a NaN wins), so a NaN or +inf in a row makes it NaN, and a row of -inf too.
EXPORT(softmax_rows)(const f32 *x, int rows, int n, f32 *out) {
  for (int r = 0; r < rows; r++, x += n, out += n) {
    f32 m = x[0];
    for (int i = 1; i < n; i++) m = x[i] > m || x[i] != x[i] ? x[i] : m;
    f32x4 vm = wasm_f32x4_splat(m);
    for (int i = 0; i < n; i += 4)
      store_partial(out + i, exp_nonpositive(wasm_f32x4_sub(load_partial(x + i, n - i), vm)), n - i);
    f32 s = 0.0f;
    for (int i = 0; i < n; i++) s += out[i];
    f32x4 vs = wasm_f32x4_splat(s);
    for (int i = 0; i < n; i += 4) store_partial(out + i, wasm_f32x4_div(load_partial(out + i, n - i), vs), n - i);
  }
}

// ln x (the module has no libm): x = 2^e m with m in [sqrt(1/2), sqrt(2)) (a subnormal scaled by 2^23 first), then
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^9 (the next term is 2e-9 of it), plus
// e ln2 in two parts: within an ulp or two of numpy's np.log. numpy's special values: ln(+-0) = -inf, ln of a
// negative number NaN, of +inf +inf, of NaN NaN. A loss's log, so a captured training step has no numpy step.
INLINE f32x4 log4(f32x4 x) {
  v128_t tiny = wasm_f32x4_lt(x, wasm_f32x4_splat(1.17549435e-38f));
  f32x4 scaled = wasm_v128_bitselect(wasm_f32x4_mul(x, wasm_f32x4_splat(8388608.0f)), x, tiny);
  v128_t k = wasm_i32x4_sub(scaled, wasm_i32x4_splat(0x3f3504f3));  // the bits above sqrt(1/2)'s
  f32x4 e = wasm_f32x4_convert_i32x4(wasm_i32x4_shr(k, 23));
  e = wasm_f32x4_sub(e, wasm_v128_and(tiny, wasm_f32x4_splat(23.0f)));
  f32x4 m = wasm_i32x4_add(wasm_v128_and(k, wasm_i32x4_splat(0x007fffff)), wasm_i32x4_splat(0x3f3504f3));
  f32x4 f = wasm_f32x4_sub(m, wasm_f32x4_splat(1.0f));
  f32x4 s = wasm_f32x4_div(f, wasm_f32x4_add(m, wasm_f32x4_splat(1.0f))), z = wasm_f32x4_mul(s, s);
#define TERM(c, rest) wasm_f32x4_add(wasm_f32x4_splat(c), wasm_f32x4_mul(z, rest))
  f32x4 series = TERM(2.0f / 3, TERM(2.0f / 5, TERM(2.0f / 7, wasm_f32x4_splat(2.0f / 9))));
#undef TERM
  // ln m = 2s + s z series, the small part first; e ln2 as e 0.693145751953125 (exact) + e 1.4286068e-6
  f32x4 ln_m = wasm_f32x4_add(wasm_f32x4_add(s, s), wasm_f32x4_mul(wasm_f32x4_mul(s, z), series));
  f32x4 y = wasm_f32x4_add(wasm_f32x4_mul(e, wasm_f32x4_splat(0.693145751953125f)),
                           wasm_f32x4_add(wasm_f32x4_mul(e, wasm_f32x4_splat(1.428606765330187e-06f)), ln_m));
  y = wasm_v128_bitselect(wasm_f32x4_splat(-__builtin_inff()), y, wasm_f32x4_eq(x, wasm_f32x4_splat(0.0f)));
  y = wasm_v128_bitselect(wasm_f32x4_splat(__builtin_nanf("")), y, wasm_f32x4_lt(x, wasm_f32x4_splat(0.0f)));
  v128_t keep = wasm_v128_or(wasm_f32x4_ne(x, x), wasm_f32x4_eq(x, wasm_f32x4_splat(__builtin_inff())));
  return wasm_v128_bitselect(x, y, keep);
}

EXPORT(log_values)(const f32 *x, f32 *out, int n) {
  for (int i = 0; i < n; i += 4) store_partial(out + i, log4(load_partial(x + i, n - i)), n - i);
}
