// Sums over an array's leading axes; the index of the largest value along an axis; the top k of each row.

#include "simd.h"

// ---- reductions over leading axes: out[c] = sum over r of x[r, c] (a bias's gradient, a global average pool) ----
// Rows are added in order, one after another, as numpy adds them along an outer axis, so the sums are the same.
// Each column's sum is its own lane's, whatever columns are summed beside it, so the threads split the columns
// (x's rows ldx floats apart) and get one thread's sums.
EXPORT(sum_rows_strided)(const f32 *x, int R, int C, int ldx, f32 *out) {
  int c = 0;
  for (; c + 16 <= C; c += 16) {  // four vectors of columns down all the rows
    f32x4 s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (int r = 0; r < R; r++) {
      const f32 *row = x + (long)r * ldx + c;
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
  if (c + 8 <= C) {  // two vectors down the rows in one pass (a layer's 8 channels), not two passes of one
    f32x4 s0 = wasm_f32x4_splat(0.0f), s1 = s0;
    for (int r = 0; r < R; r++) {
      const f32 *row = x + (long)r * ldx + c;
      s0 = wasm_f32x4_add(s0, wasm_v128_load(row));
      s1 = wasm_f32x4_add(s1, wasm_v128_load(row + 4));
    }
    wasm_v128_store(out + c, s0);
    wasm_v128_store(out + c + 4, s1);
    c += 8;
  }
  for (; c < C; c += 4) {
    int n = C - c < 4 ? C - c : 4;
    f32x4 s = wasm_f32x4_splat(0.0f);
    for (int r = 0; r < R; r++) s = wasm_f32x4_add(s, load_partial(x + (long)r * ldx + c, n));
    store_partial(out + c, s, n);
  }
}

EXPORT(sum_rows)(const f32 *x, int R, int C, f32 *out) { sum_rows_strided(x, R, C, C, out); }

// ---- argmax along an axis: x[outer, n, inner], out[outer, inner] = the first index of the largest value along n, as
// numpy.argmax: a NaN counts as the largest (the first NaN wins), -0 and +0 are equal (the first stays) ------------
INLINE int argmax_takes(f32 v, f32 best) { return v > best || (v != v && best == best); }

EXPORT(arg_max)(const f32 *x, int outer, int n, int inner, int *out) {
  for (int o = 0; o < outer; o++, x += (long)n * inner, out += inner) {
    if (inner < 4) {
      for (int j = 0; j < inner; j++) {
        f32 best = x[j];
        int at = 0;
        for (int i = 1; i < n; i++)
          if (argmax_takes(x[(long)i * inner + j], best)) best = x[(long)i * inner + j], at = i;
        out[j] = at;
      }
      continue;
    }
    // 4 of the inner positions side by side (a last group overlapping the one before where inner % 4)
    for (int j0 = 0; j0 < inner; j0 += 4) {
      int j = j0 + 4 <= inner ? j0 : inner - 4;
      f32x4 best = wasm_v128_load(x + j);
      v128_t at = wasm_i32x4_splat(0);
      for (int i = 1; i < n; i++) {
        f32x4 v = wasm_v128_load(x + (long)i * inner + j);
        v128_t nan = wasm_v128_andnot(wasm_f32x4_ne(v, v), wasm_f32x4_ne(best, best));  // a first NaN
        v128_t takes = wasm_v128_or(wasm_f32x4_gt(v, best), nan);
        best = wasm_v128_bitselect(v, best, takes);
        at = wasm_v128_bitselect(wasm_i32x4_splat(i), at, takes);
      }
      wasm_v128_store(out + j, at);
    }
  }
}

// ---- top k of each row: TopK's order, a larger value first, NaN after every number, equal values by index ---------
INLINE int before(const f32 *row, int a, int b) {
  f32 va = row[a], vb = row[b];
  if (va > vb) return 1;
  if (va < vb) return 0;
  int a_nan = va != va, b_nan = vb != vb;
  if (a_nan != b_nan) return b_nan;
  return a < b;  // equal (-0 and +0 too) or both NaN
}

// heap[i] moved down to its place in a heap whose root is the last of the k in TopK's order
INLINE void sift_down(const f32 *row, int *heap, int size, int i) {
  for (;;) {
    int last = i, left = 2 * i + 1, right = left + 1;
    if (left < size && before(row, heap[last], heap[left])) last = left;
    if (right < size && before(row, heap[last], heap[right])) last = right;
    if (last == i) return;
    int t = heap[i];
    heap[i] = heap[last];
    heap[last] = t;
    i = last;
  }
}

// Each of `rows` rows of n values: the indices of its first k in TopK's order (a heap of k while the row passes,
// O(n log k), then sorted in place) and their values, copied as bits. 1 <= k <= n.
EXPORT(top_k_rows)(const f32 *x, int rows, int n, int k, int *values, int *indices) {
  for (int r = 0; r < rows; r++) {
    const f32 *row = x + (long)r * n;
    int *heap = indices + (long)r * k;
    for (int i = 0; i < k; i++) heap[i] = i;
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(row, heap, k, i);
    int i = k;
    // 16 values at a time while the heap's last is a number: none greater, none enters (an equal one comes later, a
    // NaN after every number), so the block is skipped whole (a detector's scores, mostly below the k-th)
    while (i + 16 <= n && row[heap[0]] == row[heap[0]]) {
      f32x4 last = wasm_f32x4_splat(row[heap[0]]);
      const f32 *p = row + i;
      v128_t greater = wasm_v128_or(
          wasm_v128_or(wasm_f32x4_gt(wasm_v128_load(p), last), wasm_f32x4_gt(wasm_v128_load(p + 4), last)),
          wasm_v128_or(wasm_f32x4_gt(wasm_v128_load(p + 8), last), wasm_f32x4_gt(wasm_v128_load(p + 12), last)));
      if (wasm_v128_any_true(greater)) {
        for (int end = i + 16; i < end; i++)
          if (before(row, i, heap[0])) {
            heap[0] = i;
            sift_down(row, heap, k, 0);
          }
      } else {
        i += 16;
      }
    }
    for (; i < n; i++) {
      if (before(row, i, heap[0])) {
        heap[0] = i;
        sift_down(row, heap, k, 0);
      }
    }
    for (int size = k - 1; size > 0; size--) {  // the last of the heap to its end, one at a time
      int t = heap[0];
      heap[0] = heap[size];
      heap[size] = t;
      sift_down(row, heap, size, 0);
    }
    const int *bits = (const int *)row;
    for (int i = 0; i < k; i++) values[(long)r * k + i] = bits[heap[i]];
  }
}

// ---- sums along the last axis in numpy's order: its pairwise sum of float32 (8 running sums joined as a tree, then
// the rest in order; above 128 values, the sums of two halves, the first a multiple of 8), added to 0, so numpy's
// values bit for bit. Scalars, not an array of 8: an array would live on a stack in memory, which the module has not.
static f32 pairwise_sum(const f32 *x, int n) {
  if (n < 8) {
    f32 s = 0.0f;
    for (int i = 0; i < n; i++) s += x[i];
    return s;
  }
  if (n <= 128) {
    f32 r0 = x[0], r1 = x[1], r2 = x[2], r3 = x[3], r4 = x[4], r5 = x[5], r6 = x[6], r7 = x[7];
    int i = 8;
    for (; i < n - n % 8; i += 8) {
      r0 += x[i], r1 += x[i + 1], r2 += x[i + 2], r3 += x[i + 3];
      r4 += x[i + 4], r5 += x[i + 5], r6 += x[i + 6], r7 += x[i + 7];
    }
    f32 s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
    for (; i < n; i++) s += x[i];
    return s;
  }
  int half = n / 2;
  half -= half % 8;
  return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

// out[r] = the sum of row r of x (R rows of n values): a loss's sum over its classes, or a mean's over its batch.
EXPORT(sum_last)(const f32 *x, int R, int n, f32 *out) {
  for (int r = 0; r < R; r++) out[r] = 0.0f + pairwise_sum(x + (long)r * n, n);
}
