// The GEMM: products, and the convolutions' patches times their filters (nn.c).

#include "simd.h"

// ---- GEMM ------------------------------------------------------------------------------------------------------
// C[M, N] = act(A[M, K] @ B[K, N] + bias[N] + R[M, N]). B is packed first (pack_b) into panels of 8 columns, so
// the micro-kernel reads 8 contiguous floats per k whatever B's layout; A is read through two strides, so a
// transposed A costs nothing extra. A 4x8 tile keeps its 8 accumulators in registers (a 5x8 or 6x8 tile spills).

// Panel p holds B[:, 8p .. 8p+8] row after row (out[(p*K + k)*8 + j]), zero past column N.
// Element (k, j) of B is b[k*sbk + j*sbj]: sbj = 1 for row-major B, sbk = 1 for B given transposed.
EXPORT(pack_b)(const f32 *b, int K, int N, int sbk, int sbj, f32 *out) {
  for (int j0 = 0; j0 < N; j0 += 8) {
    int n = N - j0 < 8 ? N - j0 : 8;
    f32 *panel = out + (long)j0 * K;
    if (sbj == 1 && n == 8) {
      for (int k = 0; k < K; k++) {
        const f32 *row = b + (long)k * sbk + j0;
        wasm_v128_store(panel + k * 8, wasm_v128_load(row));
        wasm_v128_store(panel + k * 8 + 4, wasm_v128_load(row + 4));
      }
    } else {
      for (int k = 0; k < K; k++)
        for (int j = 0; j < 8; j++) panel[k * 8 + j] = j < n ? b[(long)k * sbk + (long)(j0 + j) * sbj] : 0.0f;
    }
  }
}

// One tile: rows i .. i+rows (rows 1..4) of A against one packed panel, columns j0 .. j0+cols (cols 1..8).
INLINE void gemm_tile(const f32 *a, int sai, int sak, const f32 *panel, f32 *c, int ldc, int K, int rows, int cols,
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
  if (sak == 1) {
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

// C = act(A @ B + bias + R) with B packed by pack_b; A's element (i, k) is a[i*sai + k*sak]; bias and res may be 0
// (none); res may be c itself, which accumulates (C += A @ B). C and R have row stride ldc.
EXPORT(gemm)(const f32 *a, int sai, int sak, const f32 *bp, f32 *c, int ldc, int M, int N, int K, const f32 *bias,
                 const f32 *res, int act) {
  // Panels in groups that stay in L2 (about 128 KiB) while every row block of A passes over them.
  int group = K > 0 ? (32768 / (8 * K)) : 1;
  if (group < 1) group = 1;
  int panels = (N + 7) / 8;
  for (int p0 = 0; p0 < panels; p0 += group) {
    int p1 = p0 + group < panels ? p0 + group : panels;
    for (int i = 0; i < M; i += 4) {
      int rows = M - i < 4 ? M - i : 4;
      for (int p = p0; p < p1; p++) {
        int j0 = p * 8, cols = N - j0 < 8 ? N - j0 : 8;
        gemm_tile(a + (long)i * sai, sai, sak, bp + (long)j0 * K, c + (long)i * ldc + j0, ldc, K, rows, cols,
                  bias ? bias + j0 : 0, res ? res + (long)i * ldc + j0 : 0, act);
      }
    }
  }
}
