// The GEMM's 4x8 micro-kernel (linalg.c's gemm, and nn.c's convolutions reading their windows in place).

#pragma once
#include "simd.h"

// One tile: rows i .. i+rows (rows 1..4) of A against one packed panel, columns j0 .. j0+cols (cols 1..8).
// A's element (r, k) is a[r*sai + k*sak], or a[r*sai + taps[k]] where taps is given: a convolution's window read
// in the image itself (nn.c), each tap's offset from the window's first pixel, with no patch matrix made.
INLINE void gemm_tile(const f32 *a, int sai, int sak, const int *taps, const f32 *panel, f32 *c, int ldc, int K, int rows, int cols,
                      const f32 *bias, const f32 *res, int act) {
  f32x4 c00 = wasm_f32x4_splat(0.0f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  const f32 *a0 = a, *a1 = a + (rows > 1 ? sai : 0), *a2 = a + (rows > 2 ? 2 * sai : 0),
            *a3 = a + (rows > 3 ? 3 * sai : 0);
  // One k: the panel's row of B times each row's element of A. With A's rows contiguous the loads are indexed by
  // k (no pointer per row to step), which keeps the loop to its 16 SIMD operations and 6 loads in V8's code.
#define STEP(x0, x1, x2, x3, b)                                                               \
  {                                                                                           \
    f32x4 b0 = wasm_v128_load(b), b1 = wasm_v128_load((b) + 4);                               \
    f32x4 x = wasm_v128_load32_splat(x0);                                                     \
    c00 = MADD(x, b0, c00);                                                                   \
    c01 = MADD(x, b1, c01);                                                                   \
    x = wasm_v128_load32_splat(x1);                                                           \
    c10 = MADD(x, b0, c10);                                                                   \
    c11 = MADD(x, b1, c11);                                                                   \
    x = wasm_v128_load32_splat(x2);                                                           \
    c20 = MADD(x, b0, c20);                                                                   \
    c21 = MADD(x, b1, c21);                                                                   \
    x = wasm_v128_load32_splat(x3);                                                           \
    c30 = MADD(x, b0, c30);                                                                   \
    c31 = MADD(x, b1, c31);                                                                   \
  }
  // LLVM's own unrolling keeps eight B vectors live at once, more registers than x86 has: V8 then spills.
  if (taps) {
#pragma clang loop unroll(disable)
    for (int k = 0; k < K; k++) STEP(a0 + taps[k], a1 + taps[k], a2 + taps[k], a3 + taps[k], panel + 8 * k)
  } else if (sak == 1) {
#pragma clang loop unroll(disable)
    for (int k = 0; k < K; k++) STEP(a0 + k, a1 + k, a2 + k, a3 + k, panel + 8 * k)
  } else {
#pragma clang loop unroll(disable)
    for (int k = 0; k < K; k++, a0 += sak, a1 += sak, a2 += sak, a3 += sak) STEP(a0, a1, a2, a3, panel + 8 * k)
  }
#undef STEP
  int n0 = cols < 4 ? cols : 4, n1 = cols - 4;
  f32x4 bias0 = wasm_f32x4_splat(0.0f), bias1 = bias0;
  if (bias) {
    bias0 = load_partial(bias, n0);
    if (n1 > 0) bias1 = load_partial(bias + 4, n1);
  }
#define STORE_ROW(r, v0, v1)                                                               \
  if (rows > r) {                                                                          \
    f32 *out = c + (long)r * ldc;                                                          \
    f32x4 lo = wasm_f32x4_add(v0, bias0), hi = wasm_f32x4_add(v1, bias1);                  \
    if (res) {                                                                             \
      const f32 *rr = res + (long)r * ldc;                                                 \
      lo = wasm_f32x4_add(lo, load_partial(rr, n0));                                       \
      if (n1 > 0) hi = wasm_f32x4_add(hi, load_partial(rr + 4, n1));                       \
    }                                                                                      \
    store_partial(out, activate(lo, act), n0);                                             \
    if (n1 > 0) store_partial(out + 4, activate(hi, act), n1);                             \
  }
  STORE_ROW(0, c00, c01)
  STORE_ROW(1, c10, c11)
  STORE_ROW(2, c20, c21)
  STORE_ROW(3, c30, c31)
#undef STORE_ROW
}
