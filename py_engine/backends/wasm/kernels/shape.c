// Data movement: blocks of 4-byte elements (float32 or int32, copied as bits) between strided rows (a concat's
// inputs into their columns of the output); a slice's rows; slices picked by index tuples (GatherNd).

#include "simd.h"

// dst[r * dst_stride + i] = src[r * src_stride + i] for r < rows, i < width (strides and width in elements).
EXPORT(copy_rows)(const f32 *src, int src_stride, f32 *dst, int dst_stride, int rows, int width) {
  for (int r = 0; r < rows; r++) {
    const f32 *s = src + (long)r * src_stride;
    f32 *d = dst + (long)r * dst_stride;
    int i = 0;
    for (; i + 16 <= width; i += 16) {
      f32x4 a = wasm_v128_load(s + i), b = wasm_v128_load(s + i + 4);
      f32x4 c = wasm_v128_load(s + i + 8), e = wasm_v128_load(s + i + 12);
      wasm_v128_store(d + i, a);
      wasm_v128_store(d + i + 4, b);
      wasm_v128_store(d + i + 8, c);
      wasm_v128_store(d + i + 12, e);
    }
    for (; i < width; i += 4) store_partial(d + i, load_partial(s + i, width - i), width - i);
  }
}

// ---- Slice: out = x[begin[a] : begin[a] + size[a] for each axis a] of a C-contiguous x of `rank` axes, dims =
// shape, begin, size (rank values each), copied a row of size[rank - 1] at a time (each row's place in x from its
// number: the module has no stack for an index per axis) ------------------------------------------------------------
EXPORT(slice_rows)(const int *x, int rank, const int *dims, int *out) {
  const int *shape = dims, *begin = dims + rank, *size = dims + 2 * rank;
  int width = size[rank - 1];
  long rows = 1;
  for (int a = 0; a < rank - 1; a++) rows *= size[a];
  for (long r = 0; r < rows; r++, out += width) {
    long at = begin[rank - 1], stride = shape[rank - 1], rest = r;
    for (int a = rank - 2; a >= 0; a--) {
      at += (begin[a] + rest % size[a]) * stride;
      rest /= size[a];
      stride *= shape[a];
    }
    for (int i = 0; i < width; i++) out[i] = x[at + i];
  }
}

// ---- GatherNd: out[i, :] = x[idx[i, 0], ..., idx[i, k - 1], :] for i < m, slices of q 4-byte elements (copied as
// bits), dims: x's first k axes. A tuple out of range gives a slice of zeros (as TensorFlow on GPUs) and counts: the
// count is returned, and the wrapper raises the engine's error op by op; a replay never reads outside x ---------------
__attribute__((export_name("gather_nd"))) int gather_nd(const int *x, const int *idx, int m, int k, const int *dims,
                                                        int q, int *out) {
  int bad = 0;
  for (int i = 0; i < m; i++, idx += k, out += q) {
    long at = 0;
    int j = 0;
    for (; j < k && (unsigned)idx[j] < (unsigned)dims[j]; j++) at = at * dims[j] + idx[j];
    if (j < k) {
      bad++;
      for (int c = 0; c < q; c++) out[c] = 0;
      continue;
    }
    const int *s = x + at * q;
    for (int c = 0; c < q; c++) out[c] = s[c];
  }
  return bad;
}

// out = x's n values (their bits), each repeated `inner` times, all of them `outer` times: a broadcast of x along
// axes before and after its own (a gradient spreading a sum's or a mean's values back over what was reduced), or
// one value filling out (a gradient's seed of ones), while a capture records.
EXPORT(repeat_values)(const int *x, int n, int inner, int outer, int *out) {
  for (int o = 0; o < outer; o++)
    for (int i = 0; i < n; i++)
      for (int k = 0; k < inner; k++) *out++ = x[i];
}
