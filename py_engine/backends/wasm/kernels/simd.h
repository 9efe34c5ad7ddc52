// What the SIMD kernels of every family share: the module's rules, the vector types, the epilogues, partial loads.
//
// The kernels (<family>.c, built into one module by scripts/build_wasm_kernels.py) run on numpy arrays in the
// interpreter's own memory: float32, 128-bit SIMD. The module imports Pyodide's WebAssembly.Memory and nothing else.
// It must have no data segments, no globals and no shadow stack (the build refuses a module that has any): it shares
// the heap with the interpreter, so anything it placed there on its own would overwrite Python's objects. So: no
// static data, no local arrays, no calls that need a stack frame in memory. Every pointer is an address a Python
// wrapper checked against its array (py_engine/backends/wasm/native.py); scratch space comes from numpy arrays the
// wrapper allocates.
//
// Layouts: images NHWC, filters HWIO (depthwise: H, W, C, 1), matrices row-major unless a stride says otherwise.

#pragma once

#include <wasm_simd128.h>

#include "op_codes.h"

typedef float f32;
typedef v128_t f32x4;

#define EXPORT(name) __attribute__((export_name(#name))) void name
#define INLINE static inline __attribute__((always_inline))

// a * b + c: the sums of products (the GEMM, the depthwise convolutions' gradients). The relaxed-SIMD build
// (kernels_relaxed.wasm) makes it f32x4.relaxed_madd, one fused multiply-add rounded once where the CPU has FMA (x86
// FMA3, ARM: every browser that has relaxed SIMD there), a multiply and an add as in the plain build elsewhere. Only
// this macro differs between the builds (they compile with -ffp-contract=off): the kernels that give numpy's results
// bit for bit (resizes, crops, elementwise ops) do not use it.
#ifdef __wasm_relaxed_simd__
#define MADD(a, b, c) wasm_f32x4_relaxed_madd(a, b, c)
#else
#define MADD(a, b, c) wasm_f32x4_add(c, wasm_f32x4_mul(a, b))
#endif

// a * b + c as a multiply and an add in both builds, for the depthwise convolutions' forward pass: each output there
// is one chain of 9 or 25 steps, and fused steps (4 cycles each on x86) ran it 5-13% slower than the plain build's.
INLINE f32x4 mul_add(f32x4 a, f32x4 b, f32x4 c) { return wasm_f32x4_add(c, wasm_f32x4_mul(a, b)); }

// ---- epilogues: what a fused kernel applies to each output after its sum (ACT_*, op_codes.h) ----------------
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

// A hard-swish epilogue (act above the ACT_ codes: the scale's float32 bits) as a pass over outputs just stored,
// while they are in cache (math.c). Not in activate(): its constants, which a compiler keeps in registers across
// loops, would take the registers the GEMM's and the depthwise rows' loops need (V8 then spilled: 1.5-2x slower).
INLINE int is_hard_swish(int act) { return act > ACT_RELU6; }
void hard_swish(f32 *x, int n, int ldx, int cols, int act);

// The GEMM (linalg.c), which the convolutions (nn.c) run on their patches.
void pack_b(const f32 *b, int K, int N, int sbk, int sbj, f32 *out);
void gemm(const f32 *a, int sai, int sak, const f32 *bp, f32 *c, int ldc, int M, int N, int K, const f32 *bias,
          const f32 *res, int act);
