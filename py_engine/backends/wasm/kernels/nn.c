// Convolutions (by im2col and the GEMM), depthwise convolutions and pooling, forward and backward.

#include "simd.h"
#include "gemm_tile.h"

// ---- convolution by im2col + GEMM --------------------------------------------------------------------------------
// Output pixel r (of n*OH*OW, row-major) gets row r of the patch matrix: its window's pixels in the filter's
// (kh, kw, c) order, zeros where the window leaves the image.

// An output pixel's place (image n, row oh, column ow), stepped along the rows in order: no division per pixel.
typedef struct {
  int n, oh, ow;
} pixel;

INLINE pixel pixel_of(const int *s, int r) {
  int OH = s[3], OW = s[4];
  pixel p = {r / OW / OH, r / OW % OH, r % OW};
  return p;
}

INLINE void next_pixel(const int *s, pixel *p) {
  if (++p->ow == s[4]) {
    p->ow = 0;
    if (++p->oh == s[3]) p->oh = 0, p->n++;
  }
}

INLINE void copy(f32 *dst, const f32 *src, int n) {
  int c = 0;
  for (; c + 4 <= n; c += 4) wasm_v128_store(dst + c, wasm_v128_load(src + c));
  for (; c < n; c++) dst[c] = src[c];
}

INLINE void zero_floats(f32 *dst, long n) {
  long c = 0;
  for (; c + 4 <= n; c += 4) wasm_v128_store(dst + c, wasm_f32x4_splat(0.0f));
  for (; c < n; c++) dst[c] = 0.0f;
}

INLINE void add_into(f32 *dst, const f32 *src, int n) {
  int c = 0;
  for (; c + 4 <= n; c += 4) wasm_v128_store(dst + c, wasm_f32x4_add(wasm_v128_load(dst + c), wasm_v128_load(src + c)));
  for (; c < n; c++) dst[c] += src[c];
}

INLINE void patch_row(const f32 *x, const int *s, pixel p, f32 *row) {
  // every shape number read before the first store (a store to row might alias s: each would be read again after it)
  int H = s[0], W = s[1], C = s[2], KH = s[5], KW = s[6], sh = s[7], dh = s[9], dw = s[10], pt = s[11];
  int iw0 = p.ow * s[8] - s[12], ih0 = p.oh * sh - pt, span = KW * C;
  // without dilation, a window row inside the image is KW * C contiguous floats: one copy, not KW (C may be 1)
  int whole = dw == 1 && iw0 >= 0 && iw0 + KW <= W;
  const f32 *image = x + (long)p.n * H * W * C;
  if (whole && ih0 >= 0 && ih0 + (KH - 1) * dh < H) {  // the whole window inside the image: KH plain copies
    const f32 *src = image + ((long)ih0 * W + iw0) * C;
    long step = (long)dh * W * C;
    if (span < 4) {  // a small window row (one channel): the floats one by one, no loop of SIMD copies to set up
      for (int kh = 0; kh < KH; kh++, row += span, src += step)
        for (int c = 0; c < span; c++) row[c] = src[c];
    } else {
      for (int kh = 0; kh < KH; kh++, row += span, src += step) copy(row, src, span);
    }
    return;
  }
  for (int kh = 0; kh < KH; kh++, row += span) {
    int ih = ih0 + kh * dh;
    if (ih < 0 || ih >= H) {
      for (int c = 0; c < span; c++) row[c] = 0.0f;
    } else if (whole) {
      copy(row, image + ((long)ih * W + iw0) * C, span);
    } else {
      for (int kw = 0; kw < KW; kw++) {
        int iw = iw0 + kw * dw;
        if (iw < 0 || iw >= W) {
          for (int c = 0; c < C; c++) row[kw * C + c] = 0.0f;
        } else {
          copy(row + kw * C, image + ((long)ih * W + iw) * C, C);
        }
      }
    }
  }
}

// Output pixels r0 .. r1 through their patch rows (`room` at a time in patches) and the GEMM.
INLINE void conv2d_patched(const f32 *x, const int *s, int r0, int r1, const f32 *wp, int O, const f32 *bias, int act,
                           f32 *out, f32 *patches, int room) {
  int K = s[5] * s[6] * s[2];
  for (; r0 < r1; r0 += room) {
    int n = r1 - r0 < room ? r1 - r0 : room;
    pixel p = pixel_of(s, r0);
    for (int r = 0; r < n; r++, next_pixel(s, &p)) patch_row(x, s, p, patches + (long)r * K);
    gemm(patches, K, 1, wp, out + (long)r0 * O, O, n, O, K, bias, 0, act);
  }
}

// A small filter (its packed panels within L1: a 3x3 filter on few channels) reads each window in the image itself:
// making the patch rows cost 3x the GEMM's time on one channel's 3x3 (K = 9), where each row is 9 floats. A larger
// filter keeps the GEMM's blocking of its panels in L2, over patch rows.
INLINE int window_in_place(int K, int O) { return (long)K * ((O + 7) / 8 * 8) <= 8192; }

// shape: int32[13] = H, W, C, OH, OW, KH, KW, stride h, w, dilation h, w, pad top, left.
// out[first .. rows, O] = act(patches(x) @ W + bias), `block` patch rows at a time in scratch (block * KH*KW*C
// floats). A thread of the pool computes its own range of rows (first > 0) with its own scratch. With a small
// filter, the pixels whose windows lie whole in the image take the GEMM's tile on the image in place (the same sums
// in the same order: the same results), the others their patch rows; scratch then starts with the taps' offsets.
EXPORT(conv2d)(const f32 *x, const int *s, int first, int rows, const f32 *wp, int O, const f32 *bias, int act,
                   f32 *out, f32 *scratch, int block) {
  int H = s[0], W = s[1], C = s[2], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
  int K = KH * KW * C;
  if (!window_in_place(K, O)) {
    conv2d_patched(x, s, first, rows, wp, O, bias, act, out, scratch, block);
    return;
  }
  int post = is_hard_swish(act) ? act : 0;  // a pass over each output row once stored (simd.h)
  if (post) act = ACT_LINEAR;
  int *taps = (int *)scratch;  // tap k's offset from its window's first pixel, in the filter's (kh, kw, c) order
  for (int kh = 0; kh < KH; kh++)
    for (int kw = 0; kw < KW; kw++)
      for (int c = 0; c < C; c++) taps[(kh * KW + kw) * C + c] = (kh * dh * W + kw * dw) * C + c;
  f32 *patches = scratch + K;
  // the output columns whose windows lie whole in the image's width: lo .. hi
  int lo = (pl + sw - 1) / sw, last = W - 1 - (KW - 1) * dw + pl, hi = last < 0 ? 0 : last / sw + 1;
  if (hi > OW) hi = OW;
  if (lo > hi) lo = hi;
  for (int r = first; r < rows;) {
    pixel p = pixel_of(s, r);
    int row0 = r - p.ow, end = row0 + OW < rows ? row0 + OW : rows;  // this output row's pixels, row0 its first
    int ih0 = p.oh * sh - pt;
    int a = row0 + lo, b = row0 + hi;  // its pixels with whole windows
    if (ih0 < 0 || ih0 + (KH - 1) * dh >= H) a = b = end;
    if (a < r) a = r;
    if (b > end) b = end;
    if (a > b) a = b;
    conv2d_patched(x, s, r, a, wp, O, bias, act, out, patches, block - 1);
    const f32 *image = x + (long)p.n * H * W * C;
    for (int i = a; i < b; i += 4) {
      int n = b - i < 4 ? b - i : 4;
      const f32 *window = image + ((long)ih0 * W + (i - row0) * sw - pl) * C;
      for (int j0 = 0; j0 < O; j0 += 8)
        gemm_tile(window, sw * C, 0, taps, wp + (long)j0 * K, out + (long)i * O + j0, O, K, n, O - j0 < 8 ? O - j0 : 8,
                  bias ? bias + j0 : 0, 0, act);
    }
    conv2d_patched(x, s, b, end, wp, O, bias, act, out, patches, block - 1);
    if (post) hard_swish(out + (long)r * O, 1, 0, (end - r) * O, post);
    r = end;
  }
}

// The first pixels of the windows of output pixels r0 .. r0+n into origins (offsets in x), if every one lies whole
// in the image; else 0.
INLINE int whole_windows(const int *s, int r0, int n, int *origins) {
  int H = s[0], W = s[1], C = s[2], KH = s[5], KW = s[6], sh = s[7], sw = s[8], dh = s[9], dw = s[10];
  int pt = s[11], pl = s[12];
  pixel p = pixel_of(s, r0);
  for (int r = 0; r < n; r++, next_pixel(s, &p)) {
    int ih0 = p.oh * sh - pt, iw0 = p.ow * sw - pl;
    if (ih0 < 0 || ih0 + (KH - 1) * dh >= H || iw0 < 0 || iw0 + (KW - 1) * dw >= W) return 0;
    origins[r] = ((p.n * H + ih0) * W + iw0) * C;
  }
  return 1;
}

// dw's rows of filter taps t0 .. t1 (dw: the whole gradient) += the block's windows (origins, all whole in the image)
// ^T @ its n rows of dy (packed), read in place: the GEMM's tile on up to 4 rows of dw at a time whose floats lie
// side by side in the image (the taps of one filter row without dilation in width, else one tap's channels).
// add 0: dw = that product (plus 0, as the tile adds its bias), not added to.
INLINE void filter_grad_in_place(const f32 *x, const int *s, int n, const int *origins, const f32 *packed, int O,
                                 f32 *dw, int t0, int t1, int add) {
  int W = s[1], C = s[2], KW = s[6], dh = s[9], dil = s[10];
  for (int j = t0 * C, end = t1 * C; j < end;) {
    int t = j / C, kh = t / KW, kw = t % KW, c = j % C;
    int rows = dil == 1 ? (KW - kw) * C - c : C - c;  // the run of side-by-side floats from here
    if (rows > 4) rows = 4;
    if (rows > end - j) rows = end - j;
    const f32 *a = x + ((long)kh * dh * W + kw * dil) * C + c;
    f32 *out = dw + (long)j * O;
    for (int j0 = 0; j0 < O; j0 += 8)
      gemm_tile(a, 1, 0, origins, packed + (long)j0 * n, out + j0, O, n, rows, O - j0 < 8 ? O - j0 : 8, 0,
                add ? out + j0 : 0, ACT_LINEAR);
    j += rows;
  }
}

// dw[K, O] (+)= patches(x)^T @ dy over output pixels r0 .. r0+n (one block): added to dw, or (add 0) written.
// packed: scratch for dy's rows packed (block * round8(O) floats). With a small filter, a block whose windows all lie
// whole in the image (all of them without padding) reads them in place as conv2d does (filter_grad_in_place: the
// same sums in the same order as the patch rows' GEMM).
INLINE void filter_grad_block(const f32 *x, const int *s, int r0, int n, const f32 *dy, int O, f32 *dw,
                              f32 *scratch, f32 *packed, int add) {
  int K = s[5] * s[6] * s[2];
  int *origins = (int *)scratch;  // n ints: the block's scratch holds n * K floats
  pack_b(dy + (long)r0 * O, n, O, O, 1, packed);
  if (window_in_place(K, O) && whole_windows(s, r0, n, origins)) {
    filter_grad_in_place(x, s, n, origins, packed, O, dw, 0, s[5] * s[6], add);
    return;
  }
  pixel p = pixel_of(s, r0);
  for (int r = 0; r < n; r++, next_pixel(s, &p)) patch_row(x, s, p, scratch + (long)r * K);
  gemm(scratch, 1, K, packed, dw, O, K, O, n, 0, add ? dw : 0, ACT_LINEAR);
}

// dW[K, O] = patches(x)^T @ dy: the filter gradient, accumulated block by block (dw must start at 0).
EXPORT(conv2d_filter_grad)(const f32 *x, const int *s, int rows, const f32 *dy, int O, f32 *dw, f32 *scratch,
                               f32 *packed, int block) {
  for (int r0 = 0; r0 < rows; r0 += block)
    filter_grad_block(x, s, r0, rows - r0 < block ? rows - r0 : block, dy, O, dw, scratch, packed, 1);
}

// dx = the patch gradients dy @ W^T added back into the image pixels they came from (dx must start at 0).
// wtp: W^T packed (pack_b with sbk = 1, sbj = O).
EXPORT(conv2d_input_grad)(const f32 *dy, const int *s, int rows, const f32 *wtp, int O, f32 *dx, f32 *scratch,
                              int block) {
  int H = s[0], W = s[1], C = s[2], KH = s[5], KW = s[6], dw = s[10];
  int K = KH * KW * C;
  for (int r0 = 0; r0 < rows; r0 += block) {
    int n = rows - r0 < block ? rows - r0 : block;
    gemm(dy + (long)r0 * O, O, 1, wtp, scratch, K, n, K, O, 0, 0, ACT_LINEAR);
    pixel p = pixel_of(s, r0);
    for (int r = 0; r < n; r++, next_pixel(s, &p)) {
      int iw0 = p.ow * s[8] - s[12], whole = dw == 1 && iw0 >= 0 && iw0 + KW <= W;  // as in patch_row
      f32 *image = dx + (long)p.n * H * W * C;
      const f32 *row = scratch + (long)r * K;
      for (int kh = 0; kh < KH; kh++, row += KW * C) {
        int ih = p.oh * s[7] - s[11] + kh * s[9];
        if (ih < 0 || ih >= H) continue;
        if (whole) {
          add_into(image + ((long)ih * W + iw0) * C, row, KW * C);
          continue;
        }
        for (int kw = 0; kw < KW; kw++) {
          int iw = iw0 + kw * dw;
          if (iw >= 0 && iw < W) add_into(image + ((long)ih * W + iw) * C, row + kw * C, C);
        }
      }
    }
  }
}

// ---- depthwise convolution (channel multiplier 1) --------------------------------------------------------------
// Vectorised over channels; the taps a window has inside the image are found once per output pixel.

INLINE int first_tap(int origin, int dilation) { return origin >= 0 ? 0 : (-origin + dilation - 1) / dilation; }
INLINE int end_tap(int origin, int dilation, int k, int size) {
  int last = size - 1 - origin;  // taps t with origin + t*d <= size - 1
  if (last < 0) return 0;
  int e = last / dilation + 1;
  return e < k ? e : k;
}

// Four neighbouring outputs of one row and 4 channels at a time, where their windows lie inside the image's width:
// each filter tap is loaded once for the four. ow0: the first of them; x points at the channels' first input row.
INLINE void depthwise_four(const f32 *image, const f32 *w, int W, int C, int KW, int sw, int dw, int ih0, int dh,
                           int kh0, int kh1, int iw0, f32x4 bias, int act, f32 *dst) {
  f32x4 a0 = bias, a1 = bias, a2 = bias, a3 = bias;
  long step = (long)sw * C;
  for (int kh = kh0; kh < kh1; kh++) {
    const f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C;
    const f32 *wrow = w + (long)kh * KW * C;
    for (int kw = 0; kw < KW; kw++) {
      f32x4 f = wasm_v128_load(wrow + kw * C);
      const f32 *p = xrow + (long)kw * dw * C;
      a0 = mul_add(wasm_v128_load(p), f, a0);
      a1 = mul_add(wasm_v128_load(p + step), f, a1);
      a2 = mul_add(wasm_v128_load(p + 2 * step), f, a2);
      a3 = mul_add(wasm_v128_load(p + 3 * step), f, a3);
    }
  }
  wasm_v128_store(dst, activate(a0, act));
  wasm_v128_store(dst + C, activate(a1, act));
  wasm_v128_store(dst + 2 * C, activate(a2, act));
  wasm_v128_store(dst + 3 * C, activate(a3, act));
}

// Four neighbouring outputs of one row, 4 channels, of a filter KW wide (3 or 5) whose taps come as the GEMM's panels
// (pack_b of the KH*KW x C filter: 8 channels a panel; t: this group's first tap), where the stride across SW is 1 or
// 2 and the dilation across 1: each filter row's input pixels loaded once for the four outputs (KW + 3 of them, or
// KW + 6 at stride 2), each tap at a constant offset from t. The sums in depthwise_four's order, so its values. (V8
// kept depthwise_four's per-tap offsets in registers it then spilled: in Chromium 128x128x128 3x3 34 -> 46 GFLOP/s,
// 64x64x192 5x5 35 -> 55.)
INLINE void depthwise_four_panels(const int KW, const int SW, const f32 *image, const f32 *t, int W, int C, int ih0,
                                  int dh, int kh0, int kh1, int iw0, f32x4 bias, int act, f32 *dst) {
  f32x4 a0 = bias, a1 = bias, a2 = bias, a3 = bias;
  for (int kh = kh0; kh < kh1; kh++) {
    const f32 *p = image + ((long)(ih0 + kh * dh) * W + iw0) * C, *f = t + 8 * KW * kh;
    f32x4 tap;
    // tap kw: outputs 0-3 read pixels s0-s3, the last of them (pixel `col`) loaded into the register `in`
#define TAP(kw, col, in, s0, s1, s2, s3)                                                                 \
  in = wasm_v128_load(p + (col) * C), tap = wasm_v128_load(f + 8 * (kw));                                \
  a0 = mul_add(s0, tap, a0), a1 = mul_add(s1, tap, a1), a2 = mul_add(s2, tap, a2), a3 = mul_add(s3, tap, a3);
#define AT(col) wasm_v128_load(p + (col) * C)
    if (SW == 1) {  // pixels kw .. kw+3, one register each, each step's last one loaded where the first was
      f32x4 x0 = AT(0), x1 = AT(1), x2 = AT(2), x3;
      TAP(0, 3, x3, x0, x1, x2, x3)
      TAP(1, 4, x0, x1, x2, x3, x0)
      TAP(2, 5, x1, x2, x3, x0, x1)
      if (KW == 5) {
        TAP(3, 6, x2, x3, x0, x1, x2)
        TAP(4, 7, x3, x0, x1, x2, x3)
      }
    } else {  // pixels kw, kw+2, kw+4, kw+6: the even taps read the even pixels, the odd ones the odd
      f32x4 e0 = AT(0), e1 = AT(2), e2 = AT(4), e3, o0 = AT(1), o1 = AT(3), o2 = AT(5), o3;
      TAP(0, 6, e3, e0, e1, e2, e3)
      TAP(1, 7, o3, o0, o1, o2, o3)
      TAP(2, 8, e0, e1, e2, e3, e0)
      if (KW == 5) {
        TAP(3, 9, o0, o1, o2, o3, o0)
        TAP(4, 10, e1, e2, e3, e0, e1)
      }
    }
#undef AT
#undef TAP
  }
  wasm_v128_store(dst, activate(a0, act));
  wasm_v128_store(dst + C, activate(a1, act));
  wasm_v128_store(dst + 2 * C, activate(a2, act));
  wasm_v128_store(dst + 3 * C, activate(a3, act));
}

// A 3x3 filter's outputs ow0 .. ow1 of one row whose windows lie inside the image, channels c .. c+4 (C at least 4):
// the channels' 9 taps stay in registers along the row, one output per step (its 9 loads and multiply-adds, then the
// store). The caller gives 16 outputs at a time, so the input pixels the channel groups share stay in L1 from one group
// to the next (a whole row of 128 channels did not). x0: the windows' top input row.
INLINE void depthwise_row3x3_group(const f32 *x0, const f32 *w, int W, int C, int sw, int dw, int dh, int pl, int ow0,
                                   int ow1, const f32 *bias, int act, f32 *row, int c) {
  long d = (long)dw * C, r = (long)dh * W * C, step = (long)sw * C;
  const f32 *t = w + c;
  f32x4 w00 = wasm_v128_load(t), w01 = wasm_v128_load(t + C), w02 = wasm_v128_load(t + 2 * C);
  f32x4 w10 = wasm_v128_load(t + 3 * C), w11 = wasm_v128_load(t + 4 * C), w12 = wasm_v128_load(t + 5 * C);
  f32x4 w20 = wasm_v128_load(t + 6 * C), w21 = wasm_v128_load(t + 7 * C), w22 = wasm_v128_load(t + 8 * C);
  f32x4 b = bias ? wasm_v128_load(bias + c) : wasm_f32x4_splat(0.0f);
  const f32 *p = x0 + (long)(ow0 * sw - pl) * C + c;
  f32 *dst = row + (long)ow0 * C + c;
#pragma clang loop unroll(disable)
  for (int ow = ow0; ow < ow1; ow++, p += step, dst += C) {
    f32x4 a = mul_add(wasm_v128_load(p), w00, b);  // the taps in depthwise_four's order: the same sums
    a = mul_add(wasm_v128_load(p + d), w01, a);
    a = mul_add(wasm_v128_load(p + 2 * d), w02, a);
    a = mul_add(wasm_v128_load(p + r), w10, a);
    a = mul_add(wasm_v128_load(p + r + d), w11, a);
    a = mul_add(wasm_v128_load(p + r + 2 * d), w12, a);
    a = mul_add(wasm_v128_load(p + 2 * r), w20, a);
    a = mul_add(wasm_v128_load(p + 2 * r + d), w21, a);
    a = mul_add(wasm_v128_load(p + 2 * r + 2 * d), w22, a);
    wasm_v128_store(dst, activate(a, act));
  }
}

// Channels c .. c+4 in groups, and where C is not a multiple of 4 (C >= 4) a last group C-4 .. C overlapping the one
// before: its channels are computed twice in the same order, so the same values. (A loop whose step picks the last
// group ran the whole-channel case up to 15% slower in V8's code.)
#define CHANNEL_GROUPS(C, group)             \
  {                                          \
    for (int c = 0; c + 4 <= (C); c += 4)    \
      group;                                 \
    if ((C) % 4) {                           \
      int c = (C) - 4;                       \
      group;                                 \
    }                                        \
  }

// The activation a constant of each copy: no test per output, and no register for a constant it does not use.
INLINE void depthwise_row3x3(const f32 *x0, const f32 *w, int W, int C, int sw, int dw, int dh, int pl, int ow0,
                             int ow1, const f32 *bias, int act, f32 *row) {
#define ROWS(a) CHANNEL_GROUPS(C, depthwise_row3x3_group(x0, w, W, C, sw, dw, dh, pl, ow0, ow1, bias, a, row, c))
  if (act == ACT_RELU6)
    ROWS(ACT_RELU6)
  else if (act == ACT_RELU)
    ROWS(ACT_RELU)
  else
    ROWS(ACT_LINEAR)
#undef ROWS
}

// out[N, OH, OW, C] = act(depthwise(x, w) + bias), output rows first .. last of the N * OH (a thread of the pool
// computes its own range); s as conv2d's (C = channels). panels: the filter's taps as pack_b(w, KH * KW, C) packs
// them (depthwise_four_panels), or 0.
EXPORT(depthwise)(const f32 *x, int first, int last, const int *s, const f32 *w, const f32 *panels, const f32 *bias,
                  int act, f32 *out) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
  // outputs whose whole window row lies inside the width: ow in [inner0, inner1) (none where the window is wider
  // than the padded start allows: C's division truncates toward zero, so a negative `last` is tested first)
  int last_in = W - 1 - (KW - 1) * dw + pl, inner0 = (pl + sw - 1) / sw, inner1 = last_in < 0 ? 0 : last_in / sw + 1;
  if (inner1 > OW) inner1 = OW;
  if (C < 4 || inner1 < inner0) inner0 = inner1 = 0;
  int post = is_hard_swish(act) ? act : 0;  // a pass over each output row once stored (simd.h)
  if (post) act = ACT_LINEAR;
  for (int r = first; r < last; r++) {
    int n = r / OH, oh = r % OH;
    const f32 *image = x + (long)n * H * W * C;
    {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, dh), kh1 = end_tap(ih0, dh, KH, H);
      f32 *row = out + (long)r * OW * C;
      int ow = inner0;
      if (panels && (KW == 3 || KW == 5) && (sw == 1 || sw == 2) && dw == 1 && C % 4 == 0) {
        // a loop per width and stride, so that each is a constant of its copy
#define FOURS(kw, s)                                                                                              \
  for (; ow + 4 <= inner1; ow += 4)                                                                               \
    for (int c = 0; c < C; c += 4)                                                                                \
      depthwise_four_panels(kw, s, image + c, panels + (long)(c / 8) * 8 * KH * kw + c % 8, W, C, ih0, dh, kh0,   \
                            kh1, ow * s - pl, bias ? wasm_v128_load(bias + c) : wasm_f32x4_splat(0.0f), act,     \
                            row + (long)ow * C + c);
        if (KW == 3 && sw == 1)
          FOURS(3, 1)
        else if (KW == 3)
          FOURS(3, 2)
        else if (sw == 1)
          FOURS(5, 1)
        else
          FOURS(5, 2)
#undef FOURS
      }
      if (KH == 3 && KW == 3 && kh0 == 0 && kh1 == 3) {  // a row whose windows are whole in height
        for (; ow < inner1; ow += 16) {
          int end = ow + 16 < inner1 ? ow + 16 : inner1;
          depthwise_row3x3(image + (long)ih0 * W * C, w, W, C, sw, dw, dh, pl, ow, end, bias, act, row);
        }
        ow = inner1;
      }
      for (; ow + 4 <= inner1; ow += 4)
        CHANNEL_GROUPS(C, depthwise_four(image + c, w + c, W, C, KW, sw, dw, ih0, dh, kh0, kh1, ow * sw - pl,
                                         bias ? wasm_v128_load(bias + c) : wasm_f32x4_splat(0.0f), act,
                                         row + (long)ow * C + c))
      for (int o = 0; o < OW; o++) {
        if (o >= inner0 && o < ow) continue;  // done four at a time above
        int iw0 = o * sw - pl, kw0 = first_tap(iw0, dw), kw1 = end_tap(iw0, dw, KW, W);
        f32 *dst = row + (long)o * C;
        int c = 0;
        // 16 channels at a time (their loads at constant offsets from one address, four sums in flight): the
        // border's pixels, a third of a 12x12 image's (movenet's 12x12x384 0.76x, 6x6x960 0.68x of 4 at a time)
        for (; c + 16 <= C; c += 16) {
          f32x4 zero = wasm_f32x4_splat(0.0f);
          f32x4 a0 = bias ? wasm_v128_load(bias + c) : zero, a1 = bias ? wasm_v128_load(bias + c + 4) : zero;
          f32x4 a2 = bias ? wasm_v128_load(bias + c + 8) : zero, a3 = bias ? wasm_v128_load(bias + c + 12) : zero;
          for (int kh = kh0; kh < kh1; kh++) {
            const f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C + c;
            const f32 *wrow = w + (long)kh * KW * C + c;
            for (int kw = kw0; kw < kw1; kw++) {
              const f32 *xp = xrow + (long)kw * dw * C, *wp = wrow + kw * C;
              a0 = mul_add(wasm_v128_load(xp), wasm_v128_load(wp), a0);
              a1 = mul_add(wasm_v128_load(xp + 4), wasm_v128_load(wp + 4), a1);
              a2 = mul_add(wasm_v128_load(xp + 8), wasm_v128_load(wp + 8), a2);
              a3 = mul_add(wasm_v128_load(xp + 12), wasm_v128_load(wp + 12), a3);
            }
          }
          wasm_v128_store(dst + c, activate(a0, act));
          wasm_v128_store(dst + c + 4, activate(a1, act));
          wasm_v128_store(dst + c + 8, activate(a2, act));
          wasm_v128_store(dst + c + 12, activate(a3, act));
        }
        for (; c < C; c += 4) {
          int lanes = C - c < 4 ? C - c : 4;
          f32x4 acc = bias ? load_partial(bias + c, lanes) : wasm_f32x4_splat(0.0f);
          for (int kh = kh0; kh < kh1; kh++) {
            const f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C + c;
            const f32 *wrow = w + (long)kh * KW * C + c;
            for (int kw = kw0; kw < kw1; kw++)
              acc = mul_add(load_partial(xrow + (long)kw * dw * C, lanes), load_partial(wrow + kw * C, lanes), acc);
          }
          store_partial(dst + c, activate(acc, act), lanes);
        }
      }
      if (post) hard_swish(out + (long)r * OW * C, 1, 0, OW * C, post);
    }
  }
}

// dx (zeroed) += each output's gradient through the taps that made it.
EXPORT(depthwise_input_grad)(const f32 *dy, int N, const int *s, const f32 *w, f32 *dx) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
  for (int n = 0; n < N; n++) {
    f32 *image = dx + (long)n * H * W * C;
    for (int oh = 0; oh < OH; oh++) {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, dh), kh1 = end_tap(ih0, dh, KH, H);
      for (int ow = 0; ow < OW; ow++) {
        int iw0 = ow * sw - pl, kw0 = first_tap(iw0, dw), kw1 = end_tap(iw0, dw, KW, W);
        const f32 *g = dy + (((long)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; c += 4) {
          int lanes = C - c < 4 ? C - c : 4;
          f32x4 gv = load_partial(g + c, lanes);
          for (int kh = kh0; kh < kh1; kh++) {
            f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C + c;
            const f32 *wrow = w + (long)kh * KW * C + c;
            for (int kw = kw0; kw < kw1; kw++) {
              f32 *p = xrow + (long)kw * dw * C;
              store_partial(p, MADD(gv, load_partial(wrow + kw * C, lanes), load_partial(p, lanes)), lanes);
            }
          }
        }
      }
    }
  }
}

// ---- pooling: padding never takes part ------------------------------------------------------------------------

// max(a, b) where a NaN wins, as numpy.maximum: a pseudo-max (one maxps) and NaN's own test, where wasm's f32x4.max
// is 7 x86 instructions in V8's code (it also orders -0 below +0; here, as in numpy.maximum, of two zeros the first
// stays). The max pool's taps: 3.3x faster than f32x4.max on a 3x3 window.
INLINE f32x4 max_or_nan(f32x4 a, f32x4 b) {
  return wasm_v128_bitselect(b, wasm_f32x4_pmax(a, b), wasm_f32x4_ne(b, b));
}

// A 3x3 window's outputs ow0 .. ow1 of one row whose windows lie inside the image (C a multiple of 4), 4 channels
// at a time, 16 outputs per run as depthwise_row3x3: no tap bounds, no partial loads, the taps in pool's order (the
// same results). x0: the windows' top input row.
INLINE void pool_row3x3(const f32 *x0, int W, int C, int sw, int pl, int ow0, int ow1, int avg, f32 *row) {
  long r = (long)W * C, step = (long)sw * C;
  f32x4 nine = wasm_f32x4_splat(9.0f);
  for (int c = 0; c < C; c += 4) {
    const f32 *p = x0 + (long)(ow0 * sw - pl) * C + c;
    f32 *dst = row + (long)ow0 * C + c;
#define TAPS(op, start)                                                                                     \
  for (int ow = ow0; ow < ow1; ow++, p += step, dst += C) {                                                 \
    f32x4 a = op(start, wasm_v128_load(p));                                                                 \
    a = op(a, wasm_v128_load(p + C));                                                                       \
    a = op(a, wasm_v128_load(p + 2 * C));                                                                   \
    a = op(a, wasm_v128_load(p + r));                                                                       \
    a = op(a, wasm_v128_load(p + r + C));                                                                   \
    a = op(a, wasm_v128_load(p + r + 2 * C));                                                               \
    a = op(a, wasm_v128_load(p + 2 * r));                                                                   \
    a = op(a, wasm_v128_load(p + 2 * r + C));                                                               \
    a = op(a, wasm_v128_load(p + 2 * r + 2 * C));                                                           \
    wasm_v128_store(dst, avg ? wasm_f32x4_div(a, nine) : a);                                                \
  }
    if (avg) {
      TAPS(wasm_f32x4_add, wasm_f32x4_splat(0.0f))
    } else {
      TAPS(max_or_nan, wasm_f32x4_splat(-__builtin_inff()))
    }
#undef TAPS
  }
}

// Two output rows of a 3x3 max pool, stride 1 down, whose windows lie inside the image: each input row's max over
// a window's width (h0 .. h3 of rows 0 .. 3), then max(h0, max(h1, h2)) and max(max(h1, h2), h3), 11 max_or_nan
// for the two outputs where each alone takes 8, and with stride 1 across, two outputs of a row share their windows'
// middle columns' maximum (128x128x80, Node: 2.26 -> 1.41 -> 1.16 ms). max_or_nan is associative (the first of equal
// values stays, the last NaN wins), so grouping the taps in their row-major order gives pool_row3x3's values.
INLINE void pool_max_rows3x3(const f32 *x0, int W, int C, int sw, int pl, int ow0, int ow1, f32 *row0, f32 *row1) {
  long r = (long)W * C, step = (long)sw * C;
  for (int c = 0; c < C; c += 4) {
    const f32 *p = x0 + (long)(ow0 * sw - pl) * C + c;
    f32 *dst0 = row0 + (long)ow0 * C + c, *dst1 = row1 + (long)ow0 * C + c;
#define WIDTH(q) max_or_nan(max_or_nan(wasm_v128_load(q), wasm_v128_load((q) + C)), wasm_v128_load((q) + 2 * C))
    int ow = ow0;
    if (sw == 1) {  // two outputs of a row at once: their windows' widths share the two middle columns' maximum
#define WIDTHS(q, w0, w1)                                                                \
  {                                                                                      \
    f32x4 shared = max_or_nan(wasm_v128_load((q) + C), wasm_v128_load((q) + 2 * C));     \
    w0 = max_or_nan(wasm_v128_load(q), shared);                                          \
    w1 = max_or_nan(shared, wasm_v128_load((q) + 3 * C));                                \
  }
#pragma clang loop unroll(disable)
      for (; ow + 2 <= ow1; ow += 2, p += 2 * C, dst0 += 2 * C, dst1 += 2 * C) {
        f32x4 a0, a1, b0, b1;
        WIDTHS(p + r, a0, a1)
        WIDTHS(p + 2 * r, b0, b1)
        f32x4 middle0 = max_or_nan(a0, b0), middle1 = max_or_nan(a1, b1);
        WIDTHS(p, a0, a1)
        wasm_v128_store(dst0, max_or_nan(a0, middle0));
        wasm_v128_store(dst0 + C, max_or_nan(a1, middle1));
        WIDTHS(p + 3 * r, b0, b1)
        wasm_v128_store(dst1, max_or_nan(middle0, b0));
        wasm_v128_store(dst1 + C, max_or_nan(middle1, b1));
      }
#undef WIDTHS
    }
#pragma clang loop unroll(disable)
    for (; ow < ow1; ow++, p += step, dst0 += C, dst1 += C) {
      f32x4 middle = max_or_nan(WIDTH(p + r), WIDTH(p + 2 * r));
      wasm_v128_store(dst0, max_or_nan(WIDTH(p), middle));
      wasm_v128_store(dst1, max_or_nan(middle, WIDTH(p + 3 * r)));
    }
#undef WIDTH
  }
}

// One output row's windows that are not whole in the image (outputs outside [skip0, skip1)): the taps inside it.
INLINE void pool_edges(const f32 *image, int H, int W, int C, int OW, int KH, int KW, int sw, int pl, int ih0,
                       int skip0, int skip1, int avg, f32 *row) {
  int kh0 = first_tap(ih0, 1), kh1 = end_tap(ih0, 1, KH, H);
  for (int ow = 0; ow < OW; ow++) {
    if (ow >= skip0 && ow < skip1) continue;
    int iw0 = ow * sw - pl, kw0 = first_tap(iw0, 1), kw1 = end_tap(iw0, 1, KW, W);
    f32 *dst = row + (long)ow * C;
    f32x4 count = wasm_f32x4_splat((f32)((kh1 - kh0) * (kw1 - kw0)));
    for (int c = 0; c < C; c += 4) {
      int lanes = C - c < 4 ? C - c : 4;
      f32x4 acc = wasm_f32x4_splat(avg ? 0.0f : -__builtin_inff());
      for (int kh = kh0; kh < kh1; kh++) {
        const f32 *xrow = image + ((long)(ih0 + kh) * W + iw0) * C + c;
        for (int kw = kw0; kw < kw1; kw++) {
          f32x4 v = load_partial(xrow + (long)kw * C, lanes);
          acc = avg ? wasm_f32x4_add(acc, v) : max_or_nan(acc, v);
        }
      }
      store_partial(dst + c, avg ? wasm_f32x4_div(acc, count) : acc, lanes);
    }
  }
}

// out[N, OH, OW, C]: the max (avg = 0) or the mean over the real pixels (avg = 1) of each window, output rows
// first .. last of the N * OH.
EXPORT(pool)(const f32 *x, int first, int last, const int *s, int avg, f32 *out) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], pt = s[11], pl = s[12];
  // outputs whose whole window row lies inside the width: ow in [inner0, inner1), as in depthwise
  int last_in = W - 1 - (KW - 1) + pl, inner0 = (pl + sw - 1) / sw, inner1 = last_in < 0 ? 0 : last_in / sw + 1;
  if (inner1 > OW) inner1 = OW;
  if (C % 4 || KH != 3 || KW != 3 || inner1 < inner0) inner0 = inner1 = 0;
  for (int r = first; r < last; r++) {
    int n = r / OH, oh = r % OH;
    const f32 *image = x + (long)n * H * W * C;
    int ih0 = oh * sh - pt;
    f32 *row = out + (long)r * OW * C;
    // this row's windows are whole in height; and a max pool's next row too, one input row down (done with it)
    int whole = ih0 >= 0 && ih0 + KH <= H && inner1 > inner0;
    int pair = whole && !avg && sh == 1 && r + 1 < last && oh + 1 < OH && ih0 + 1 + KH <= H;
    for (int ow = inner0; whole && ow < inner1; ow += 16) {
      int end = ow + 16 < inner1 ? ow + 16 : inner1;
      if (pair)
        pool_max_rows3x3(image + (long)ih0 * W * C, W, C, sw, pl, ow, end, row, row + (long)OW * C);
      else
        pool_row3x3(image + (long)ih0 * W * C, W, C, sw, pl, ow, end, avg, row);
    }
    int skip0 = whole ? inner0 : 0, skip1 = whole ? inner1 : 0;
    pool_edges(image, H, W, C, OW, KH, KW, sw, pl, ih0, skip0, skip1, avg, row);
    if (pair) {
      pool_edges(image, H, W, C, OW, KH, KW, sw, pl, ih0 + 1, skip0, skip1, avg, row + (long)OW * C);
      r++;
    }
  }
}

// dx = dy added at each window's first maximum in row-major order (TensorFlow's rule); y is the pool's output. Each
// image's dx is zeroed here, just before its adds, while it stays in cache (and by each thread for its own images).
EXPORT(max_pool_grad)(const f32 *dy, const f32 *x, const f32 *y, int N, const int *s, f32 *dx) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], pt = s[11], pl = s[12];
  for (int n = 0; n < N; n++) {
    const f32 *image = x + (long)n * H * W * C;
    f32 *grad = dx + (long)n * H * W * C;
    zero_floats(grad, (long)H * W * C);
    for (int oh = 0; oh < OH; oh++) {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, 1), kh1 = end_tap(ih0, 1, KH, H);
      for (int ow = 0; ow < OW; ow++) {
        int iw0 = ow * sw - pl, kw0 = first_tap(iw0, 1), kw1 = end_tap(iw0, 1, KW, W);
        long o = (((long)n * OH + oh) * OW + ow) * C;
        int c = 0;
        for (; c + 4 <= C; c += 4) {  // four channels at once: each lane's first tap as below, then its add
          f32x4 best = wasm_v128_load(y + o + c);
          v128_t first = wasm_i32x4_splat(-1);
          for (int kh = kh1 - 1; kh >= kh0; kh--)
            for (int kw = kw1 - 1; kw >= kw0; kw--) {
              int i = ((ih0 + kh) * W + iw0 + kw) * C + c;
              v128_t hit = wasm_f32x4_eq(wasm_v128_load(image + i), best);
              first = wasm_v128_bitselect(wasm_i32x4_add(wasm_i32x4_splat(i), wasm_i32x4_make(0, 1, 2, 3)), first, hit);
            }
          f32x4 g = wasm_v128_load(dy + o + c);
          int i0 = wasm_i32x4_extract_lane(first, 0), i1 = wasm_i32x4_extract_lane(first, 1);
          int i2 = wasm_i32x4_extract_lane(first, 2), i3 = wasm_i32x4_extract_lane(first, 3);
          if (i0 >= 0) grad[i0] += wasm_f32x4_extract_lane(g, 0);
          if (i1 >= 0) grad[i1] += wasm_f32x4_extract_lane(g, 1);
          if (i2 >= 0) grad[i2] += wasm_f32x4_extract_lane(g, 2);
          if (i3 >= 0) grad[i3] += wasm_f32x4_extract_lane(g, 3);
        }
        for (; c < C; c++) {
          // the first tap in window order that holds the max, without a branch per tap (which tap it is is
          // random on real data: a branch on it mispredicted most of the time): taps from last to first, a select
          f32 best = y[o + c];
          long first = -1;
          for (int kh = kh1 - 1; kh >= kh0; kh--)
            for (int kw = kw1 - 1; kw >= kw0; kw--) {
              long i = ((long)(ih0 + kh) * W + iw0 + kw) * C + c;
              first = image[i] == best ? i : first;
            }
          if (first >= 0) grad[first] += dy[o + c];
        }
      }
    }
  }
}

// ---- the pool's shares of the gradients (threads.py): each thread writes its own filter taps, channels or partials -
// (the input gradients split by images, which the kernels above take as they are)

// The patch columns of filter taps t0 .. t1 (tap = kh * KW + kw) of output pixel p: (t1 - t0) * C floats, each
// the value patch_row puts there.
INLINE void patch_taps(const f32 *x, const int *s, pixel p, int t0, int t1, f32 *row) {
  int H = s[0], W = s[1], C = s[2], KW = s[6];
  const f32 *image = x + (long)p.n * H * W * C;
  for (int t = t0; t < t1; t++, row += C) {
    int ih = p.oh * s[7] - s[11] + t / KW * s[9], iw = p.ow * s[8] - s[12] + t % KW * s[10];
    if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
      for (int c = 0; c < C; c++) row[c] = 0.0f;
    } else {
      copy(row, image + ((long)ih * W + iw) * C, C);
    }
  }
}

// conv2d_filter_grad's rows of dW for taps t0 .. t1 (dw: the whole gradient, zeroed), with the same blocks of
// `block` rows, so each element gets the same sums in the same order. scratch: block * (t1 - t0) * C floats.
EXPORT(conv2d_filter_grad_taps)(const f32 *x, const int *s, int rows, const f32 *dy, int O, f32 *dw, f32 *scratch,
                                    f32 *packed, int block, int t0, int t1) {
  int K = (t1 - t0) * s[2], in_place = window_in_place(s[5] * s[6] * s[2], O);
  f32 *out = dw + (long)t0 * s[2] * O;
  for (int r0 = 0; r0 < rows; r0 += block) {
    int n = rows - r0 < block ? rows - r0 : block;
    int *origins = (int *)scratch;  // n ints: the block's scratch holds n * K floats
    if (in_place && whole_windows(s, r0, n, origins)) {  // as conv2d_filter_grad
      pack_b(dy + (long)r0 * O, n, O, O, 1, packed);
      filter_grad_in_place(x, s, n, origins, packed, O, dw, t0, t1, 1);
      continue;
    }
    pixel p = pixel_of(s, r0);
    for (int r = 0; r < n; r++, next_pixel(s, &p)) patch_taps(x, s, p, t0, t1, scratch + (long)r * K);
    pack_b(dy + (long)r0 * O, n, O, O, 1, packed);
    gemm(scratch, 1, K, packed, out, O, K, O, n, 0, out, ACT_LINEAR);
  }
}

// conv2d_filter_grad's blocks b0 .. b1 of `block` rows, each block's sum written into its own partial (partials + b *
// K * O). sum_rows_strided then adds the partials to 0 in the blocks' order, which gives conv2d_filter_grad's values
// bit for bit: there each block's tile adds its sum plus 0 (the tile's bias) to dw, zeroed first; here a partial is
// that sum plus 0, and x + y = y + x exactly. scratch, packed: as conv2d_filter_grad's.
EXPORT(conv2d_filter_grad_blocks)(const f32 *x, const int *s, int rows, const f32 *dy, int O, f32 *partials,
                                      f32 *scratch, f32 *packed, int block, int b0, int b1) {
  long size = (long)s[5] * s[6] * s[2] * O;
  for (int b = b0; b < b1; b++) {
    int r0 = b * block;
    filter_grad_block(x, s, r0, rows - r0 < block ? rows - r0 : block, dy, O, partials + b * size, scratch, packed, 0);
  }
}

// dw (zeroed, [KH, KW, C]) += x * dy over every output pixel and tap, for channels c0 .. c1 (c0 a multiple of 4;
// 0 .. C: all of them).
EXPORT(depthwise_filter_grad)(const f32 *x, const f32 *dy, int N, const int *s, f32 *dwt, int c0, int c1) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
  for (int n = 0; n < N; n++) {
    const f32 *image = x + (long)n * H * W * C;
    for (int oh = 0; oh < OH; oh++) {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, dh), kh1 = end_tap(ih0, dh, KH, H);
      for (int ow = 0; ow < OW; ow++) {
        int iw0 = ow * sw - pl, kw0 = first_tap(iw0, dw), kw1 = end_tap(iw0, dw, KW, W);
        const f32 *g = dy + (((long)n * OH + oh) * OW + ow) * C;
        for (int c = c0; c < c1; c += 4) {
          int lanes = c1 - c < 4 ? c1 - c : 4;
          f32x4 gv = load_partial(g + c, lanes);
          for (int kh = kh0; kh < kh1; kh++) {
            const f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C + c;
            f32 *wrow = dwt + (long)kh * KW * C + c;
            for (int kw = kw0; kw < kw1; kw++) {
              f32 *p = wrow + kw * C;
              store_partial(p, MADD(gv, load_partial(xrow + (long)kw * dw * C, lanes), load_partial(p, lanes)), lanes);
            }
          }
        }
      }
    }
  }
}
