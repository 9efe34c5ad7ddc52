// The GEMM: products, and the convolutions' patches times their filters (nn.c).

#include "simd.h"
#include "gemm_tile.h"

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

// C = act(A @ B + bias + R) with B packed by pack_b; A's element (i, k) is a[i*sai + k*sak]; bias and res may be 0
// (none); res may be c itself, which accumulates (C += A @ B). C and R have row stride ldc. A hard-swish (simd.h)
// runs over every 32 rows' columns of a group of panels once their tiles are stored (a call per 4 rows cost more
// than the pass where N is 16).
EXPORT(gemm)(const f32 *a, int sai, int sak, const f32 *bp, f32 *c, int ldc, int M, int N, int K, const f32 *bias,
                 const f32 *res, int act) {
  int post = is_hard_swish(act) ? act : 0;
  if (post) act = ACT_LINEAR;
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
        const f32 *ai = a + (long)i * sai, *bj = bp + (long)j0 * K, *biasj = bias ? bias + j0 : 0;
        f32 *cij = c + (long)i * ldc + j0;
        // a whole tile with no residual: the epilogue's shape and activation are constants of its own copy of the
        // tile (no test per row, per column half, per vector): 1x1 convolutions with K 16-24, Node: 5-10% faster
        if (rows == 4 && cols == 8 && !res) {
          if (act == ACT_RELU6)
            gemm_tile(ai, sai, sak, 0, bj, cij, ldc, K, 4, 8, biasj, 0, ACT_RELU6);
          else if (act == ACT_RELU)
            gemm_tile(ai, sai, sak, 0, bj, cij, ldc, K, 4, 8, biasj, 0, ACT_RELU);
          else
            gemm_tile(ai, sai, sak, 0, bj, cij, ldc, K, 4, 8, biasj, 0, ACT_LINEAR);
        } else {
          gemm_tile(ai, sai, sak, 0, bj, cij, ldc, K, rows, cols, biasj, res ? res + (long)i * ldc + j0 : 0, act);
        }
      }
      if (post && (i % 32 == 28 || i + rows == M)) {
        int i0 = i - i % 32;
        hard_swish(c + (long)i0 * ldc + p0 * 8, i + rows - i0, ldc, (p1 * 8 < N ? p1 * 8 : N) - p0 * 8, post);
      }
    }
  }
}

// gemm where N's last panel has 1-4 columns (a pose model's heads: N = 17, 34, 1): those columns in a 4x4 tile (one
// B vector and 4 accumulators per k, half the 4x8 tile's multiply-adds), the same sums in the same order as
// gemm_tile's, so the same values bit for bit. gemm itself is called, unchanged, for the whole panels (a narrow tile
// inside its loop, as a branch or a function, made V8's code for the full tiles 1.6-3% slower), 64 rows at a time so
// A's rows are in cache for the narrow columns after it.
EXPORT(gemm_narrow_edge)(const f32 *a, int sai, int sak, const f32 *bp, f32 *c, int ldc, int M, int N, int K,
                         const f32 *bias, const f32 *res, int act) {
  int post = is_hard_swish(act) ? act : 0, tile_act = post ? ACT_LINEAR : act;
  int full = N - N % 8, cols = N - full;
  const f32 *panel = bp + (long)full * K;
  f32x4 b0 = bias ? load_partial(bias + full, cols) : wasm_f32x4_splat(0.0f);
  for (int i0 = 0; i0 < M; i0 += 64) {
    int block = M - i0 < 64 ? M - i0 : 64;
    if (full)
      gemm(a + (long)i0 * sai, sai, sak, bp, c + (long)i0 * ldc, ldc, block, full, K, bias,
           res ? res + (long)i0 * ldc : 0, act);
    for (int i = i0; i < i0 + block; i += 4) {
      int rows = i0 + block - i < 4 ? i0 + block - i : 4;
      const f32 *a0 = a + (long)i * sai, *a1 = a0 + (rows > 1 ? sai : 0), *a2 = a0 + (rows > 2 ? 2 * sai : 0),
                *a3 = a0 + (rows > 3 ? 3 * sai : 0);
      f32x4 c0 = wasm_f32x4_splat(0.0f), c1 = c0, c2 = c0, c3 = c0;
#pragma clang loop unroll(disable)
      for (int k = 0; k < K; k++) {
        f32x4 b = wasm_v128_load(panel + 8 * k);
        long at = (long)k * sak;
        c0 = MADD(wasm_v128_load32_splat(a0 + at), b, c0);
        c1 = MADD(wasm_v128_load32_splat(a1 + at), b, c1);
        c2 = MADD(wasm_v128_load32_splat(a2 + at), b, c2);
        c3 = MADD(wasm_v128_load32_splat(a3 + at), b, c3);
      }
      f32x4 acc[4] = {c0, c1, c2, c3};
      for (int r = 0; r < rows; r++) {
        f32 *out = c + (long)(i + r) * ldc + full;
        f32x4 v = wasm_f32x4_add(acc[r], b0);
        if (res) v = wasm_f32x4_add(v, load_partial(res + (long)(i + r) * ldc + full, cols));
        store_partial(out, activate(v, tile_act), cols);
      }
    }
    if (post) hard_swish(c + (long)i0 * ldc + full, block, ldc, cols, post);
  }
}
