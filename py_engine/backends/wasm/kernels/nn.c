// The wasm backend's native kernels: float32, 128-bit SIMD, on numpy arrays in the interpreter's own memory.
//
// The module imports Pyodide's WebAssembly.Memory and nothing else. It must have no data segments, no globals and
// no shadow stack (app/wasm_kernels.py refuses a build that has any): it shares the heap with the interpreter, so
// anything it placed there on its own would overwrite Python's objects. So: no static data, no local arrays, no
// calls that need a stack frame in memory. Every pointer is an address a Python wrapper checked against its array
// (py_engine/backends/wasm/native.py); scratch space comes from numpy arrays the wrapper allocates.
//
// Layouts: images NHWC, filters HWIO (depthwise: H, W, C, 1), matrices row-major unless a stride says otherwise.

#include <wasm_simd128.h>

typedef float f32;
typedef v128_t f32x4;

#define EXPORT(name) __attribute__((export_name(#name))) void name
#define INLINE static inline __attribute__((always_inline))

// ---- epilogues: what a fused kernel applies to each output after its sum --------------------------------------
enum { ACT_LINEAR = 0, ACT_RELU = 1, ACT_RELU6 = 2 };

// e^x for x <= 0 (no libm here): x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^6 (relative error
// about 1e-7, a float's ulp), times 2^n built in the exponent bits. Below -87.3 the result flushes to 0.
INLINE f32x4 exp_nonpositive(f32x4 x) {
  x = wasm_f32x4_pmax(x, wasm_f32x4_splat(-87.3f));
  f32x4 n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504f)));
  f32x4 r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693145751953125f)));  // ln2's high part, exact
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(1.428606765330187e-06f)));  // and its low part
  f32x4 p = wasm_f32x4_splat(1.0f / 720);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 120));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 24));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 6));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(0.5f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
  v128_t scale = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
  return wasm_f32x4_mul(p, scale);
}

// 1 / (1 + e^-x) as the numpy kernel computes it: e = e^-|x|, then 1 / (1 + e) for x >= 0 and e / (1 + e) below.
// A pass of its own (the unary kernel), not a GEMM epilogue: there, inlined or called, it cost the GEMM's k loop
// 9-13% (registers).
INLINE f32x4 sigmoid4(f32x4 x) {
  f32x4 e = exp_nonpositive(wasm_f32x4_neg(wasm_f32x4_abs(x)));
  f32x4 d = wasm_f32x4_add(wasm_f32x4_splat(1.0f), e);
  return wasm_v128_bitselect(wasm_f32x4_div(wasm_f32x4_splat(1.0f), d), wasm_f32x4_div(e, d),
                             wasm_f32x4_ge(x, wasm_f32x4_splat(0.0f)));
}

INLINE f32x4 activate(f32x4 v, int act) {
  if (act == ACT_RELU) return wasm_f32x4_pmax(v, wasm_f32x4_splat(0.0f));
  if (act == ACT_RELU6) return wasm_f32x4_pmin(wasm_f32x4_pmax(v, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(6.0f));
  return v;
}

// The first n (1..4) lanes of p into a vector, the others 0: never reads past the end of an array.
INLINE f32x4 load_partial(const f32 *p, int n) {
  if (n >= 4) return wasm_v128_load(p);
  f32x4 v = wasm_f32x4_splat(0.0f);
  v = wasm_v128_load32_lane(p, v, 0);
  if (n > 1) v = wasm_v128_load32_lane(p + 1, v, 1);
  if (n > 2) v = wasm_v128_load32_lane(p + 2, v, 2);
  return v;
}

INLINE void store_partial(f32 *p, f32x4 v, int n) {
  if (n >= 4) {
    wasm_v128_store(p, v);
    return;
  }
  wasm_v128_store32_lane(p, v, 0);
  if (n > 1) wasm_v128_store32_lane(p + 1, v, 1);
  if (n > 2) wasm_v128_store32_lane(p + 2, v, 2);
}

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
    c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(x, b0));                                         \
    c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(x, b1));                                         \
    x = wasm_v128_load32_splat(x1);                                                           \
    c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(x, b0));                                         \
    c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(x, b1));                                         \
    x = wasm_v128_load32_splat(x2);                                                           \
    c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(x, b0));                                         \
    c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(x, b1));                                         \
    x = wasm_v128_load32_splat(x3);                                                           \
    c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(x, b0));                                         \
    c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(x, b1));                                         \
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

INLINE void add_into(f32 *dst, const f32 *src, int n) {
  int c = 0;
  for (; c + 4 <= n; c += 4) wasm_v128_store(dst + c, wasm_f32x4_add(wasm_v128_load(dst + c), wasm_v128_load(src + c)));
  for (; c < n; c++) dst[c] += src[c];
}

INLINE void patch_row(const f32 *x, const int *s, pixel p, f32 *row) {
  int H = s[0], W = s[1], C = s[2], KH = s[5], KW = s[6], dw = s[10];
  int iw0 = p.ow * s[8] - s[12];
  // without dilation, a window row inside the image is KW * C contiguous floats: one copy, not KW (C may be 1)
  int whole = dw == 1 && iw0 >= 0 && iw0 + KW <= W;
  const f32 *image = x + (long)p.n * H * W * C;
  for (int kh = 0; kh < KH; kh++, row += KW * C) {
    int ih = p.oh * s[7] - s[11] + kh * s[9];
    if (ih < 0 || ih >= H) {
      for (int c = 0; c < KW * C; c++) row[c] = 0.0f;
    } else if (whole) {
      copy(row, image + ((long)ih * W + iw0) * C, KW * C);
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

// shape: int32[13] = H, W, C, OH, OW, KH, KW, stride h, w, dilation h, w, pad top, left.
// out[first .. rows, O] = act(patches(x) @ W + bias), `block` patch rows at a time in scratch (block * KH*KW*C
// floats). A thread of the pool computes its own range of rows (first > 0) with its own scratch.
EXPORT(conv2d)(const f32 *x, const int *s, int first, int rows, const f32 *wp, int O, const f32 *bias, int act,
                   f32 *out, f32 *scratch, int block) {
  int K = s[5] * s[6] * s[2];
  for (int r0 = first; r0 < rows; r0 += block) {
    int n = rows - r0 < block ? rows - r0 : block;
    pixel p = pixel_of(s, r0);
    for (int r = 0; r < n; r++, next_pixel(s, &p)) patch_row(x, s, p, scratch + (long)r * K);
    gemm(scratch, K, 1, wp, out + (long)r0 * O, O, n, O, K, bias, 0, act);
  }
}

// dW[K, O] = patches(x)^T @ dy: the filter gradient, accumulated block by block (dw must start at 0).
// packed: scratch for dy's rows packed (block * round8(O) floats).
EXPORT(conv2d_filter_grad)(const f32 *x, const int *s, int rows, const f32 *dy, int O, f32 *dw, f32 *scratch,
                               f32 *packed, int block) {
  int K = s[5] * s[6] * s[2];
  for (int r0 = 0; r0 < rows; r0 += block) {
    int n = rows - r0 < block ? rows - r0 : block;
    pixel p = pixel_of(s, r0);
    for (int r = 0; r < n; r++, next_pixel(s, &p)) patch_row(x, s, p, scratch + (long)r * K);
    pack_b(dy + (long)r0 * O, n, O, O, 1, packed);
    gemm(scratch, 1, K, packed, dw, O, K, O, n, 0, dw, ACT_LINEAR);
  }
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
      a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(wasm_v128_load(p), f));
      a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(wasm_v128_load(p + step), f));
      a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(wasm_v128_load(p + 2 * step), f));
      a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(wasm_v128_load(p + 3 * step), f));
    }
  }
  wasm_v128_store(dst, activate(a0, act));
  wasm_v128_store(dst + C, activate(a1, act));
  wasm_v128_store(dst + 2 * C, activate(a2, act));
  wasm_v128_store(dst + 3 * C, activate(a3, act));
}

// out[N, OH, OW, C] = act(depthwise(x, w) + bias), output rows first .. last of the N * OH (a thread of the pool
// computes its own range); s as conv2d's (C = channels).
EXPORT(depthwise)(const f32 *x, int first, int last, const int *s, const f32 *w, const f32 *bias, int act,
                      f32 *out) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
  // outputs whose whole window row lies inside the width: ow in [inner0, inner1)
  int inner0 = (pl + sw - 1) / sw, inner1 = (W - 1 - (KW - 1) * dw + pl) / sw + 1;
  if (inner1 > OW) inner1 = OW;
  if (C % 4 || inner1 < inner0) inner0 = inner1 = 0;
  for (int r = first; r < last; r++) {
    int n = r / OH, oh = r % OH;
    const f32 *image = x + (long)n * H * W * C;
    {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, dh), kh1 = end_tap(ih0, dh, KH, H);
      f32 *row = out + (long)r * OW * C;
      int ow = inner0;
      for (; ow + 4 <= inner1; ow += 4)
        for (int c = 0; c < C; c += 4)
          depthwise_four(image + c, w + c, W, C, KW, sw, dw, ih0, dh, kh0, kh1, ow * sw - pl,
                         bias ? wasm_v128_load(bias + c) : wasm_f32x4_splat(0.0f), act, row + (long)ow * C + c);
      for (int o = 0; o < OW; o++) {
        if (o >= inner0 && o < ow) continue;  // done four at a time above
        int iw0 = o * sw - pl, kw0 = first_tap(iw0, dw), kw1 = end_tap(iw0, dw, KW, W);
        f32 *dst = row + (long)o * C;
        for (int c = 0; c < C; c += 4) {
          int lanes = C - c < 4 ? C - c : 4;
          f32x4 acc = bias ? load_partial(bias + c, lanes) : wasm_f32x4_splat(0.0f);
          for (int kh = kh0; kh < kh1; kh++) {
            const f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C + c;
            const f32 *wrow = w + (long)kh * KW * C + c;
            for (int kw = kw0; kw < kw1; kw++)
              acc = wasm_f32x4_add(
                  acc, wasm_f32x4_mul(load_partial(xrow + (long)kw * dw * C, lanes), load_partial(wrow + kw * C, lanes)));
          }
          store_partial(dst + c, activate(acc, act), lanes);
        }
      }
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
              store_partial(p, wasm_f32x4_add(load_partial(p, lanes), wasm_f32x4_mul(gv, load_partial(wrow + kw * C, lanes))),
                            lanes);
            }
          }
        }
      }
    }
  }
}

// dw (zeroed, [KH, KW, C]) += x * dy over every output pixel and tap.
EXPORT(depthwise_filter_grad)(const f32 *x, const f32 *dy, int N, const int *s, f32 *dwt) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
  for (int n = 0; n < N; n++) {
    const f32 *image = x + (long)n * H * W * C;
    for (int oh = 0; oh < OH; oh++) {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, dh), kh1 = end_tap(ih0, dh, KH, H);
      for (int ow = 0; ow < OW; ow++) {
        int iw0 = ow * sw - pl, kw0 = first_tap(iw0, dw), kw1 = end_tap(iw0, dw, KW, W);
        const f32 *g = dy + (((long)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; c += 4) {
          int lanes = C - c < 4 ? C - c : 4;
          f32x4 gv = load_partial(g + c, lanes);
          for (int kh = kh0; kh < kh1; kh++) {
            const f32 *xrow = image + ((long)(ih0 + kh * dh) * W + iw0) * C + c;
            f32 *wrow = dwt + (long)kh * KW * C + c;
            for (int kw = kw0; kw < kw1; kw++) {
              f32 *p = wrow + kw * C;
              store_partial(
                  p, wasm_f32x4_add(load_partial(p, lanes), wasm_f32x4_mul(gv, load_partial(xrow + (long)kw * dw * C, lanes))),
                  lanes);
            }
          }
        }
      }
    }
  }
}

// ---- pooling: padding never takes part ------------------------------------------------------------------------
// out[N, OH, OW, C]: the max (avg = 0) or the mean over the real pixels (avg = 1) of each window, output rows
// first .. last of the N * OH.
EXPORT(pool)(const f32 *x, int first, int last, const int *s, int avg, f32 *out) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], pt = s[11], pl = s[12];
  for (int r = first; r < last; r++) {
    int n = r / OH, oh = r % OH;
    const f32 *image = x + (long)n * H * W * C;
    {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, 1), kh1 = end_tap(ih0, 1, KH, H);
      for (int ow = 0; ow < OW; ow++) {
        int iw0 = ow * sw - pl, kw0 = first_tap(iw0, 1), kw1 = end_tap(iw0, 1, KW, W);
        f32 *dst = out + (((long)n * OH + oh) * OW + ow) * C;
        f32x4 count = wasm_f32x4_splat((f32)((kh1 - kh0) * (kw1 - kw0)));
        for (int c = 0; c < C; c += 4) {
          int lanes = C - c < 4 ? C - c : 4;
          f32x4 acc = wasm_f32x4_splat(avg ? 0.0f : -__builtin_inff());
          for (int kh = kh0; kh < kh1; kh++) {
            const f32 *xrow = image + ((long)(ih0 + kh) * W + iw0) * C + c;
            for (int kw = kw0; kw < kw1; kw++) {
              f32x4 v = load_partial(xrow + (long)kw * C, lanes);
              // max: NaN wins, as numpy.maximum
              acc = avg ? wasm_f32x4_add(acc, v) : wasm_f32x4_max(acc, v);
            }
          }
          store_partial(dst + c, avg ? wasm_f32x4_div(acc, count) : acc, lanes);
        }
      }
    }
  }
}

// dx (zeroed) += dy at each window's first maximum in row-major order (TensorFlow's rule); y is the pool's output.
EXPORT(max_pool_grad)(const f32 *dy, const f32 *x, const f32 *y, int N, const int *s, f32 *dx) {
  int H = s[0], W = s[1], C = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
  int sh = s[7], sw = s[8], pt = s[11], pl = s[12];
  for (int n = 0; n < N; n++) {
    const f32 *image = x + (long)n * H * W * C;
    f32 *grad = dx + (long)n * H * W * C;
    for (int oh = 0; oh < OH; oh++) {
      int ih0 = oh * sh - pt, kh0 = first_tap(ih0, 1), kh1 = end_tap(ih0, 1, KH, H);
      for (int ow = 0; ow < OW; ow++) {
        int iw0 = ow * sw - pl, kw0 = first_tap(iw0, 1), kw1 = end_tap(iw0, 1, KW, W);
        long o = (((long)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; c++) {
          f32 best = y[o + c];
          for (int kh = kh0; kh < kh1; kh++)
            for (int kw = kw0; kw < kw1; kw++) {
              long i = ((long)(ih0 + kh) * W + iw0 + kw) * C + c;
              if (image[i] == best) {
                grad[i] += dy[o + c];
                goto next;
              }
            }
        next:;
        }
      }
    }
  }
}

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

// ---- elementwise -------------------------------------------------------------------------------------------------
// Binary ops on float32: out[i] = a[i % na] op b[i % nb], where na and nb are n, 1, or a divisor of n (a trailing
// vector repeated over rows, as a bias).
enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, OP_RELU_GRAD, OP_RELU6_GRAD, OP_SQUARED_DIFFERENCE };

INLINE f32x4 binary4(int op, f32x4 a, f32x4 b) {
  switch (op) {
    case OP_ADD: return wasm_f32x4_add(a, b);
    case OP_SUB: return wasm_f32x4_sub(a, b);
    case OP_MUL: return wasm_f32x4_mul(a, b);
    case OP_DIV: return wasm_f32x4_div(a, b);
    case OP_MAX: return wasm_f32x4_max(a, b);
    case OP_MIN: return wasm_f32x4_min(a, b);
    // a = dy, b = y: dy * (y > 0) (a multiply, not a mask, so that 0 * inf is NaN as in the numpy kernel)
    case OP_RELU_GRAD:
      return wasm_f32x4_mul(a, wasm_v128_and(wasm_f32x4_gt(b, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(1.0f)));
    case OP_RELU6_GRAD: {
      f32x4 inside = wasm_v128_and(wasm_f32x4_gt(b, wasm_f32x4_splat(0.0f)), wasm_f32x4_lt(b, wasm_f32x4_splat(6.0f)));
      return wasm_f32x4_mul(a, wasm_v128_and(inside, wasm_f32x4_splat(1.0f)));
    }
    default: {
      f32x4 d = wasm_f32x4_sub(a, b);
      return wasm_f32x4_mul(d, d);
    }
  }
}

// A run of `len` outputs where a and b each advance (step 1) or stay (step 0).
INLINE void binary_run(int op, const f32 *a, int sa, const f32 *b, int sb, f32 *out, int len) {
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
  if (i < len) {
    int rest = len - i;
    f32x4 va = sa ? load_partial(a + i, rest) : wasm_v128_load32_splat(a);
    f32x4 vb = sb ? load_partial(b + i, rest) : wasm_v128_load32_splat(b);
    store_partial(out + i, binary4(op, va, vb), rest);
  }
}

EXPORT(binary)(int op, const f32 *a, int na, const f32 *b, int nb, f32 *out, int n) {
  // the shorter repeating operand sets the row length; a scalar repeats with any
  int row = na < nb ? na : nb;
  if (row <= 1 || row == n) {
    binary_run(op, a, na == n, b, nb == n, out, n);
    return;
  }
  for (int r = 0; r < n; r += row)
    binary_run(op, na == n ? a + r : a, 1, nb == n ? b + r : b, 1, out + r, row);
}

enum { UN_RELU, UN_RELU6, UN_NEG, UN_ABS, UN_SQRT, UN_SQUARE, UN_SIGMOID };

EXPORT(unary)(int op, const f32 *x, f32 *out, int n) {
  for (int i = 0; i < n; i += 4) {
    int lanes = n - i < 4 ? n - i : 4;
    f32x4 v = load_partial(x + i, lanes);
    switch (op) {
      case UN_RELU: v = activate(v, ACT_RELU); break;
      case UN_RELU6: v = activate(v, ACT_RELU6); break;
      case UN_SIGMOID: v = sigmoid4(v); break;
      case UN_NEG: v = wasm_f32x4_neg(v); break;
      case UN_ABS: v = wasm_f32x4_abs(v); break;
      case UN_SQRT: v = wasm_f32x4_sqrt(v); break;
      default: v = wasm_f32x4_mul(v, v); break;
    }
    store_partial(out + i, v, lanes);
  }
}

// ---- fused elementwise programs (the optimizers' update rules, py_engine/ops/fusion.py) -------------------------
// values[0 .. tensors) are the inputs (addresses in ptrs), values[tensors .. tensors+scalars) the scalars (splat
// from `scalars`), then one value per step. prog holds 3 ints per step: op, left, right (right unused by unary
// ops). outs[k] is the value written to output k (address ptrs[tensors + k]). Works CHUNK elements at a time in
// scratch (values * CHUNK floats).
#define CHUNK 64
enum { F_ADD, F_SUB, F_MUL, F_DIV, F_MAX, F_MIN, F_NEG, F_SQRT, F_SQUARE, F_ABS };

EXPORT(fused_elementwise)(const int *prog, int steps, const int *ptrs, int tensors, const f32 *scalars,
                              int n_scalars, const int *outs, int n_outs, f32 *scratch, int n) {
  int first_step = tensors + n_scalars;
  for (int v = 0; v < n_scalars; v++) {
    f32x4 s = wasm_v128_load32_splat(scalars + v);
    for (int i = 0; i < CHUNK; i += 4) wasm_v128_store(scratch + (tensors + v) * CHUNK + i, s);
  }
  for (int i0 = 0; i0 < n; i0 += CHUNK) {
    int len = n - i0 < CHUNK ? n - i0 : CHUNK;
    for (int t = 0; t < tensors; t++) {
      const f32 *src = (const f32 *)ptrs[t] + i0;
      f32 *dst = scratch + t * CHUNK;
      for (int i = 0; i < len; i += 4) wasm_v128_store(dst + i, load_partial(src + i, len - i));
    }
    for (int k = 0; k < steps; k++) {
      int op = prog[3 * k];
      const f32 *x = scratch + prog[3 * k + 1] * CHUNK, *y = scratch + prog[3 * k + 2] * CHUNK;
      f32 *z = scratch + (first_step + k) * CHUNK;
      for (int i = 0; i < len; i += 4) {
        f32x4 a = wasm_v128_load(x + i), b = wasm_v128_load(y + i), r;
        switch (op) {
          case F_ADD: r = wasm_f32x4_add(a, b); break;
          case F_SUB: r = wasm_f32x4_sub(a, b); break;
          case F_MUL: r = wasm_f32x4_mul(a, b); break;
          case F_DIV: r = wasm_f32x4_div(a, b); break;
          case F_MAX: r = wasm_f32x4_max(a, b); break;
          case F_MIN: r = wasm_f32x4_min(a, b); break;
          case F_NEG: r = wasm_f32x4_neg(a); break;
          case F_SQRT: r = wasm_f32x4_sqrt(a); break;
          case F_SQUARE: r = wasm_f32x4_mul(a, a); break;
          default: r = wasm_f32x4_abs(a); break;
        }
        wasm_v128_store(z + i, r);
      }
    }
    for (int o = 0; o < n_outs; o++) {
      f32 *dst = (f32 *)ptrs[tensors + o] + i0;
      const f32 *src = scratch + outs[o] * CHUNK;
      for (int i = 0; i < len; i += 4) store_partial(dst + i, wasm_v128_load(src + i), len - i);
    }
  }
}
