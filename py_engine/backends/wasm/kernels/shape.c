// Data movement: blocks of 4-byte elements (float32 or int32, copied as bits) between strided rows (a concat's
// inputs into their columns of the output), and the casts to float32 of int32 and bool arrays.

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
