// Sums over an array's leading axes.

#include "simd.h"

// ---- reductions over leading axes: out[c] = sum over r of x[r, c] (a bias's gradient, a global average pool) ----
// Rows are added in order, one after another, as numpy adds them along an outer axis, so the sums are the same.
EXPORT(sum_rows)(const f32 *x, int R, int C, f32 *out) {
  int c = 0;
  for (; c + 16 <= C; c += 16) {  // four vectors of columns down all the rows
    f32x4 s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (int r = 0; r < R; r++) {
      const f32 *row = x + (long)r * C + c;
      s0 = wasm_f32x4_add(s0, wasm_v128_load(row));
      s1 = wasm_f32x4_add(s1, wasm_v128_load(row + 4));
      s2 = wasm_f32x4_add(s2, wasm_v128_load(row + 8));
      s3 = wasm_f32x4_add(s3, wasm_v128_load(row + 12));
    }
    wasm_v128_store(out + c, s0);
    wasm_v128_store(out + c + 4, s1);
    wasm_v128_store(out + c + 8, s2);
    wasm_v128_store(out + c + 12, s3);
  }
  for (; c < C; c += 4) {
    int n = C - c < 4 ? C - c : 4;
    f32x4 s = wasm_f32x4_splat(0.0f);
    for (int r = 0; r < R; r++) s = wasm_f32x4_add(s, load_partial(x + (long)r * C + c, n));
    store_partial(out + c, s, n);
  }
}
