/* Vector float32 exp, tanh and sigmoid for the host backend's hot loops (the
 * additive attention energies and the GRU gates), 4, 8 and 16 lanes wide, written
 * with GCC/Clang vector extensions so they run as SIMD at any optimisation
 * level; glibc's scalar tanhf is ten times slower and does not vectorise.
 *
 * Accuracy against double over [-20, 20] (test_host_slots checks it): exp
 * within 1 ulp (1.02 where multiply-adds are fused, see SQ_HOT_V4 / SQ_HOT_V3),
 * tanh within 1.5 ulp, sigmoid within 2.5 ulp; the host tests allow 2, 3 and
 * 4. The polynomials are Cephes' expf and tanhf (S. L. Moshier). */
#ifndef SQ_BACKEND_HOST_MATH_H
#define SQ_BACKEND_HOST_MATH_H

#include <stdint.h>
#include <string.h>

/* 16-byte vectors: the SSE2 / NEON baseline, so no ABI depends on -mavx. */
#define SQ_VW 4
typedef float sq_vf __attribute__((vector_size(16)));
typedef int32_t sq_vi __attribute__((vector_size(16)));

static inline sq_vf sq_v_splat(float x) {
  sq_vf v = {x, x, x, x};
  return v;
}

/* Lanes i < n from p (n in [0, SQ_VW]; p may be NULL when n is 0); the rest 0.
 * A full vector is one unaligned load. */
static inline sq_vf sq_v_load(const float *p, int n) {
  sq_vf v = {0, 0, 0, 0};
  if (n >= SQ_VW) {
    memcpy(&v, p, sizeof v);
    return v;
  }
  for (int i = 0; i < n; i++) v[i] = p[i];
  return v;
}

static inline void sq_v_store(float *p, sq_vf v, int n) {
  if (n >= SQ_VW) {
    memcpy(p, &v, sizeof v);
    return;
  }
  for (int i = 0; i < n; i++) p[i] = v[i];
}

/* The lane-wise functions below are generated for three widths by one macro,
 * so every width runs exactly the same operations per lane (the same bits):
 *  - sq_v_*   on sq_vf (4 lanes), the portable baseline;
 *  - sq_v8_*  on sq_vf8 (8 lanes), the AVX2 form of the per-width loops;
 *  - sq_v16_* on sq_vf16 (16 lanes), their AVX-512 form (SQ_HOT_BY_WIDTH
 *    below); on a target without 64-byte registers GCC splits each
 *    operation, slowly, which is why those loops are compiled per width.
 * The functions are static and always inlined, so a vector type never crosses
 * an ABI boundary; -Wpsabi only warns that it would if it did.
 *
 * select(m, a, b): m ? a : b lane by lane (m lanes are 0 or -1, as vector
 * comparisons give); loadu / storeu: one full vector from / to memory.
 * exp(x) for x in [-87, 88] (clamped outside: callers only divide by 1 + exp),
 * written so a NaN lane becomes a finite one inside (no float-to-int overflow)
 * and is put back at the end; x = n ln2 + r, |r| <= ln2 / 2, with ln2 split in
 * two for an exact n ln2.
 * tanh(x): an odd polynomial below |x| = 0.625, else 1 - 2e / (1 + e) with
 * e = exp(-2|x|) (no overflow, no cancellation), with the sign put back;
 * beyond |x| = 10 the result rounds to 1 anyway, and the clamp keeps e in
 * range. Its exp is the one above less what that range makes redundant (the
 * clamps, the NaN lane, the float-to-int round trip of the floor): a quarter
 * off the tanh, the additive energies' cost (a fifth of a batch-64 decode),
 * with the same error (worst 1.46 ulp over every float in [0, 10]).
 * sigmoid(x) = 1 / (1 + exp(-x)); exact 0 and 1 limits are approached within
 * 2^-126. */
#define SQ_VMATH_DEFINE(P, VF, VI)                                                         \
  static inline __attribute__((always_inline)) VF P##select(VI m, VF a, VF b) {            \
    return (VF)(((VI)a & m) | ((VI)b & ~m));                                               \
  }                                                                                        \
  /* a full vector from / to p, no alignment assumed */                                    \
  static inline __attribute__((always_inline)) VF P##loadu(const float *p) {               \
    VF v;                                                                                  \
    memcpy(&v, p, sizeof v);                                                               \
    return v;                                                                              \
  }                                                                                        \
  static inline __attribute__((always_inline)) void P##storeu(float *p, VF v) {            \
    memcpy(p, &v, sizeof v);                                                               \
  }                                                                                        \
  /* exp(x - fn ln2) for an integer fn with |x - fn ln2| <= ln2 / 2: the       \
   * reduction and Cephes' polynomial, shared by exp and tanh */                   \
  static inline __attribute__((always_inline)) VF P##exp_reduced(VF x, VF fn) {           \
    VF r = x - fn * 0.693359375f;                                                          \
    r = r - fn * -2.12194440e-4f;                                                          \
    VF p = (VF){0} + 1.9875691500e-4f;                                                     \
    p = p * r + 1.3981999507e-3f;                                                          \
    p = p * r + 8.3334519073e-3f;                                                          \
    p = p * r + 4.1665795894e-2f;                                                          \
    p = p * r + 1.6666665459e-1f;                                                          \
    p = p * r + 5.0000001201e-1f;                                                          \
    return p * r * r + r + 1.0f;                                                           \
  }                                                                                        \
  static inline __attribute__((always_inline)) VF P##exp(VF xin) {                         \
    const VF hi = (VF){0} + 88.0f, lo = (VF){0} - 87.0f;                                   \
    VF x = P##select(xin < hi, xin, hi);                                                   \
    x = P##select(x > lo, x, lo);                                                          \
    VF t = x * 1.44269504088896341f + 0.5f;                                                \
    VI n = __builtin_convertvector(t, VI); /* truncates toward 0 */                       \
    VF fn = __builtin_convertvector(n, VF);                                                \
    n += (VI)(fn > t); /* floor: subtract 1 where truncation went up */                   \
    fn = __builtin_convertvector(n, VF);                                                   \
    VI scale = (n + 127) << 23; /* 2^n, n in [-126, 127] */                               \
    return P##select(xin == xin, P##exp_reduced(x, fn) * (VF)scale, xin);                 \
  }                                                                                        \
  static inline __attribute__((always_inline)) VF P##tanh(VF x) {                          \
    const VI sign = (VI)(-(VF){0}); /* -0.0f in every lane */                             \
    VF ax = (VF)((VI)x & ~sign);                                                           \
    VF z = x * x;                                                                          \
    VF p = (VF){0} - 5.70498872745e-3f;                                                    \
    p = p * z + 2.06390887954e-2f;                                                         \
    p = p * z - 5.37397155531e-2f;                                                         \
    p = p * z + 1.33314422036e-1f;                                                         \
    p = p * z - 3.33332819422e-1f;                                                         \
    VF small = p * z * x + x;                                                              \
    /* e = exp(y), y = -2 min(|x|, 10) in [-20, 0] (a NaN lane: -20): exp above   \
     * without its clamps and NaN lane, and n = round(y / ln2) by adding        \
     * 1.5 * 2^23, which leaves the integer in the low mantissa bits */            \
    VF y = -2.0f * P##select(ax < 10.0f, ax, (VF){0} + 10.0f);                             \
    const VF magic = (VF){0} + 12582912.0f;                                                \
    VF u = y * 1.44269504088896341f + magic;                                               \
    VI scale = ((VI)u - (VI)magic + 127) << 23; /* 2^n, n in [-29, 0] */                  \
    VF e = P##exp_reduced(y, u - magic) * (VF)scale;                                       \
    VF big = 1.0f - 2.0f * e / (1.0f + e);                                                 \
    big = (VF)((VI)big | ((VI)x & sign));                                                  \
    return P##select(ax >= 0.625f, big, small); /* a NaN lane: small, NaN */              \
  }                                                                                        \
  static inline __attribute__((always_inline)) VF P##sigmoid(VF x) {                       \
    return 1.0f / (1.0f + P##exp(-x));                                                     \
  }

/* Silences -Wpsabi ("a 64-byte vector argument changes the ABI without
 * AVX-512") in the files that use the 16-lane functions: they are static and
 * inlined, so no ABI is involved. Clang versions without the warning would
 * complain about the unknown option, hence the first clang pragma. */
#if defined(__clang__)
#define SQ_IGNORE_PSABI                                                    \
  _Pragma("clang diagnostic ignored \"-Wunknown-warning-option\"")        \
      _Pragma("clang diagnostic ignored \"-Wpsabi\"")
#elif defined(__GNUC__)
#define SQ_IGNORE_PSABI _Pragma("GCC diagnostic ignored \"-Wpsabi\"")
#else
#define SQ_IGNORE_PSABI
#endif

#if defined(__GNUC__)
#pragma GCC diagnostic push
#endif
SQ_IGNORE_PSABI
SQ_VMATH_DEFINE(sq_v_, sq_vf, sq_vi)

#define SQ_VW16 16
typedef float sq_vf16 __attribute__((vector_size(64)));
typedef int32_t sq_vi16 __attribute__((vector_size(64)));
SQ_VMATH_DEFINE(sq_v16_, sq_vf16, sq_vi16)

/* 32-byte vectors: the AVX2 width, for the loops compiled per width
 * (SQ_HOT_BY_WIDTH below). */
#define SQ_VW8 8
typedef float sq_vf8 __attribute__((vector_size(32)));
typedef int32_t sq_vi8 __attribute__((vector_size(32)));
SQ_VMATH_DEFINE(sq_v8_, sq_vf8, sq_vi8)
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Compiles a hot loop once per instruction set and picks the clone the CPU
 * runs at load time (GCC on x86-64 with ifunc support); elsewhere one plain
 * build. The x86-64-v4 (AVX-512) and v3 (AVX2 with FMA) clones contract
 * a * b + c into one fused multiply-add: one rounding instead of two, and a
 * fifth fewer instructions in the tanh and exp above. FMA rounds the same at
 * every vector width, so those two clones compute the same bits; the
 * baseline clone, for CPUs without FMA, rounds the product first. Both stay
 * within the accuracy stated at the top (test_host_slots measures the clone
 * this CPU runs, through sq_host_vmath16). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SQ_HOT_CLONES                                                           \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                 optimize("fp-contract=fast")))
#else
#define SQ_HOT_CLONES
#endif

/* GCC compiles 16-lane vectors poorly where the target has no 64-byte
 * registers: it keeps them in memory and moves them in 8-byte pieces. The
 * x86-64-v3 clone of a hot loop ran 3x (the additive energies), 5x (the
 * sigmoid and tanh of elementwise loops) to 8x (the context, whose
 * accumulators the loop carries) slower than the same operations on 8-lane
 * vectors. The hot loops are therefore written once over a vector type of W
 * lanes and compiled per width (SQ_HOT_BY_WIDTH): 16 lanes with AVX-512
 * (SQ_HOT_V4), two 8-lane halves per 16 lanes with AVX2 (SQ_HOT_V3), four
 * 4-lane quarters otherwise, then picked at run time by sq_host_isa(). Each
 * logical lane runs the same operations at every width, so the v4 and v3
 * forms give the same bits, as the clones do. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SQ_HOT_BY_WIDTH 1
#define SQ_HOT_V4 __attribute__((target("arch=x86-64-v4"), optimize("fp-contract=fast")))
#define SQ_HOT_V3 __attribute__((target("arch=x86-64-v3"), optimize("fp-contract=fast")))
#else
#define SQ_HOT_BY_WIDTH 0
#endif

/* v unchanged, but the product that made it can no longer be fused into the
 * add that follows: where GCC fuses a multiply-add depends on how it laid out
 * the code around it, which differs between widths (training's dv update was
 * fused at one width and not at the other). An empty asm that may change v. */
#if SQ_HOT_BY_WIDTH
#define SQ_HOT_ROUNDED(v) __asm__("" : "+v"(v))
#else
#define SQ_HOT_ROUNDED(v) ((void)0)
#endif

/* a##b after expanding both: a width's function prefix and a name */
#define SQ_HOT_CAT2(a, b) a##b
#define SQ_HOT_CAT(a, b) SQ_HOT_CAT2(a, b)

/* DEF(SUF, ATTR, VF, VI, W, P) once per width this build compiles: the
 * suffix of the function names (v4, v3, base), the target attribute, the
 * float and int vector types, the lane count and the prefix of that width's
 * functions above (sq_v16_, sq_v8_, sq_v_). For loops written as a macro;
 * longer ones are templates included per width (host_widths.h). */
#define SQ_HOT_BASE /* the baseline: no target attribute */
#if SQ_HOT_BY_WIDTH
#define SQ_HOT_WIDTHS(DEF)                                                    \
  DEF(v4, SQ_HOT_V4, sq_vf16, sq_vi16, SQ_VW16, sq_v16_)                      \
  DEF(v3, SQ_HOT_V3, sq_vf8, sq_vi8, SQ_VW8, sq_v8_)                          \
  DEF(base, SQ_HOT_BASE, sq_vf, sq_vi, SQ_VW, sq_v_)
#else
#define SQ_HOT_WIDTHS(DEF) DEF(base, SQ_HOT_BASE, sq_vf, sq_vi, SQ_VW, sq_v_)
#endif

/* The form of a loop compiled per width that this CPU runs, by sq_host_isa():
 * fn##_v4, fn##_v3 or fn##_base (all of one type), called as
 * SQ_HOT_PICK(fn)(args). */
#if SQ_HOT_BY_WIDTH
#define SQ_HOT_PICK(fn) (sq_host_isa() == 4 ? fn##_v4 : sq_host_isa() == 3 ? fn##_v3 : fn##_base)
#else
#define SQ_HOT_PICK(fn) fn##_base
#endif

/* The level the per-width loops run at: 4 where the CPU runs x86-64-v4 code,
 * 3 for x86-64-v3, else 0 (what SQ_HOT_CLONES picks as well), capped by
 * SEQCL_HOST_ISA and, in tests, sq_host_isa_limit (the clones ignore both).
 * The CPU's level is read once. */
int sq_host_isa(void);

#endif
