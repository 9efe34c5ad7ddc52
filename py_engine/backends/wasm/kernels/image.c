// Image resizing and crops: ResizeBilinear (as numpy's kernel: float32 positions, TensorFlow's) and CropAndResize
// (as numpy's: float64 positions and values, TF.js's CPU backend). Every step is numpy's operation in numpy's order,
// so the results are its own, bit for bit (WebAssembly has no fused multiply-add to round differently).

#include "simd.h"

INLINE f32 f32_pixel(const void *image, int is_int, long i) {
  return is_int ? (f32)((const int *)image)[i] : ((const f32 *)image)[i];
}

// One row of the image interpolated along x: row[ox * C + c] = left + (right - left) * lerp, left and right the
// pixels x0[ox] and x1[ox] of input row `y`, as float32.
static void lerp_row_x(const void *image, int is_int, long start, int C, int OW, const int *x0, const int *x1,
                       const f32 *x_lerp, f32 *row) {
  if (!is_int && C % 4 == 0) {  // four channels per vector
    const f32 *pixels = (const f32 *)image + start;
    for (int ox = 0; ox < OW; ox++) {
      const f32 *l = pixels + (long)x0[ox] * C, *r = pixels + (long)x1[ox] * C;
      f32x4 t = wasm_f32x4_splat(x_lerp[ox]);
      for (int c = 0; c < C; c += 4) {
        f32x4 a = wasm_v128_load(l + c);
        wasm_v128_store(row + ox * C + c, wasm_f32x4_add(a, wasm_f32x4_mul(wasm_f32x4_sub(wasm_v128_load(r + c), a), t)));
      }
    }
    return;
  }
  for (int ox = 0; ox < OW; ox++) {
    long l = start + (long)x0[ox] * C, r = start + (long)x1[ox] * C;
    f32 t = x_lerp[ox];
    for (int c = 0; c < C; c++) {
      f32 a = f32_pixel(image, is_int, l + c);
      row[ox * C + c] = a + (f32_pixel(image, is_int, r + c) - a) * t;
    }
  }
}

// The source pixels and weight of output index i along an axis of n_in pixels (numpy's _bilinear_axis).
INLINE void bilinear_source(int i, int n_in, f32 scale, int half_pixel, int *lower, int *upper, f32 *lerp) {
  f32 dst = (f32)i;
  f32 src = half_pixel ? (dst + 0.5f) * scale - 0.5f : dst * scale;
  f32 floor = __builtin_floorf(src), ceil = __builtin_ceilf(src), last = (f32)(n_in - 1);
  *lower = (int)(floor < 0.0f ? 0.0f : floor > last ? last : floor);  // TF clamps below; the cap guards rounding
  *upper = (int)(ceil > last ? last : ceil);
  *lerp = src - floor;
}

INLINE f32 resize_scale(int n_in, int n_out, int align_corners) {
  return align_corners && n_out > 1 ? (f32)(n_in - 1) / (f32)(n_out - 1) : (f32)n_in / (f32)n_out;
}

// ---- ResizeBilinear: images [N, H, W, C] (float32, or int32 when is_int) -> out [N, OH, W, C] float32 ----
// Along x in each input row the output reads (two rows kept in scratch), then along y between the two rows:
// scratch holds 3 * OW words (x0, x1 as int, x lerp) and 2 * OW * C floats.
EXPORT(resize_bilinear)(const void *image, int is_int, int N, int H, int W, int C, int OH, int OW, int align_corners,
                        int half_pixel, f32 *scratch, f32 *out) {
  int *x0 = (int *)scratch, *x1 = x0 + OW;
  f32 *x_lerp = scratch + 2 * OW, *top = x_lerp + OW, *bottom = top + (long)OW * C;
  f32 x_scale = resize_scale(W, OW, align_corners), y_scale = resize_scale(H, OH, align_corners);
  for (int ox = 0; ox < OW; ox++) bilinear_source(ox, W, x_scale, half_pixel, x0 + ox, x1 + ox, x_lerp + ox);
  long n_row = (long)OW * C;
  for (int n = 0; n < N; n++) {
    int top_y = -1, bottom_y = -1;  // the input rows `top` and `bottom` hold
    for (int oy = 0; oy < OH; oy++) {
      int y0, y1;
      f32 y_lerp;
      bilinear_source(oy, H, y_scale, half_pixel, &y0, &y1, &y_lerp);
      if (y0 == bottom_y) {  // moving down: last row's bottom is this row's top
        f32 *row = top;
        top = bottom, bottom = row, top_y = bottom_y, bottom_y = -1;
      }
      if (y0 != top_y) lerp_row_x(image, is_int, ((long)n * H + y0) * W * C, C, OW, x0, x1, x_lerp, top), top_y = y0;
      const f32 *lower = top;
      if (y1 != y0) {
        if (y1 != bottom_y) lerp_row_x(image, is_int, ((long)n * H + y1) * W * C, C, OW, x0, x1, x_lerp, bottom);
        bottom_y = y1, lower = bottom;
      }
      f32 *o = out + ((long)n * OH + oy) * n_row;
      f32x4 t = wasm_f32x4_splat(y_lerp);
      for (long i = 0; i < n_row; i += 4) {
        int k = n_row - i < 4 ? (int)(n_row - i) : 4;
        f32x4 a = load_partial(top + i, k);
        store_partial(o + i, wasm_f32x4_add(a, wasm_f32x4_mul(wasm_f32x4_sub(load_partial(lower + i, k), a), t)), k);
      }
    }
  }
}

// ---- CropAndResize: image [N, H, W, C] float32, boxes [B, 4] (y1, x1, y2, x2), box_ind [B] -> out [B, CH, CW, C] --
// Positions and values in float64 as numpy's kernel (TF.js's CPU backend); outside the image extrapolation_value,
// a box_ind outside the batch zeros. nearest: the pixel at floor(p + 0.5) (JavaScript's Math.round).

typedef v128_t f64x2;

// Two floats at p as doubles.
INLINE f64x2 load_f64x2(const f32 *p) { return wasm_f64x2_promote_low_f32x4(wasm_v128_load64_zero(p)); }

// A box's sampling position k of n_out along an axis of n_in pixels spanning low..high (numpy's _crop_axis).
INLINE double crop_position(double low, double high, int n_in, int k, int n_out) {
  if (n_out > 1) return low * (n_in - 1) + (double)k * ((high - low) * (n_in - 1) / (n_out - 1));
  return 0.5 * (low + high) * (n_in - 1);
}

EXPORT(crop_and_resize)(const f32 *image, int N, int H, int W, int C, const f32 *boxes, const int *box_ind, int B,
                        int CH, int CW, int nearest, f32 extrapolation, f32 *out) {
  long n_row = (long)CW * C;
  for (int b = 0; b < B; b++) {
    f32 *o = out + (long)b * CH * n_row;
    int owner = box_ind[b];
    if (owner < 0 || owner >= N) {
      for (long i = 0; i < CH * n_row; i++) o[i] = 0.0f;
      continue;
    }
    const f32 *pixels = image + (long)owner * H * W * C;
    double y1 = boxes[4 * b], x1 = boxes[4 * b + 1], y2 = boxes[4 * b + 2], x2 = boxes[4 * b + 3];
    for (int oy = 0; oy < CH; oy++, o += n_row) {
      double ys = crop_position(y1, y2, H, oy, CH);
      if (!(ys >= 0 && ys <= H - 1)) {  // NaN too
        for (long i = 0; i < n_row; i++) o[i] = extrapolation;
        continue;
      }
      double top_y = __builtin_floor(ys), y_lerp = ys - top_y;
      const f32 *top = pixels + (long)(nearest ? __builtin_floor(ys + 0.5) : top_y) * W * C;
      const f32 *bottom = pixels + (long)__builtin_ceil(ys) * W * C;
      for (int ox = 0; ox < CW; ox++) {
        f32 *p = o + ox * C;
        double xs = crop_position(x1, x2, W, ox, CW);
        if (!(xs >= 0 && xs <= W - 1)) {
          for (int c = 0; c < C; c++) p[c] = extrapolation;
          continue;
        }
        if (nearest) {
          const f32 *q = top + (long)__builtin_floor(xs + 0.5) * C;
          for (int c = 0; c < C; c++) p[c] = q[c];
          continue;
        }
        double left_x = __builtin_floor(xs), x_lerp = xs - left_x;
        long l = (long)left_x * C, r = (long)__builtin_ceil(xs) * C;
        int c = 0;
        for (; c + 2 <= C; c += 2) {  // two channels per vector of doubles
          f64x2 tl = load_f64x2(top + l + c), tr = load_f64x2(top + r + c);
          f64x2 bl = load_f64x2(bottom + l + c), br = load_f64x2(bottom + r + c);
          f64x2 xt = wasm_f64x2_splat(x_lerp), yt = wasm_f64x2_splat(y_lerp);
          f64x2 upper = wasm_f64x2_add(tl, wasm_f64x2_mul(wasm_f64x2_sub(tr, tl), xt));
          f64x2 lower = wasm_f64x2_add(bl, wasm_f64x2_mul(wasm_f64x2_sub(br, bl), xt));
          f64x2 v = wasm_f64x2_add(upper, wasm_f64x2_mul(wasm_f64x2_sub(lower, upper), yt));
          wasm_v128_store64_lane(p + c, wasm_f32x4_demote_f64x2_zero(v), 0);
        }
        for (; c < C; c++) {
          double tl = top[l + c], tr = top[r + c], bl = bottom[l + c], br = bottom[r + c];
          double upper = tl + (tr - tl) * x_lerp, lower = bl + (br - bl) * x_lerp;
          p[c] = (f32)(upper + (lower - upper) * y_lerp);
        }
      }
    }
  }
}
