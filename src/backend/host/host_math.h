/* Four-wide float32 exp, tanh and sigmoid for the host backend's hot loops
 * (the additive attention energies and the GRU gates), written with GCC/Clang
 * vector extensions so they run as SIMD at any optimisation level; glibc's
 * scalar tanhf is ten times slower and does not vectorise.
 *
 * Accuracy against double over [-20, 20] (test_host_slots checks it): exp
 * within 1 ulp, tanh within 1.5 ulp, sigmoid within 2.5 ulp; the host tests
 * allow 2, 3 and 4. The polynomials are Cephes' expf and tanhf (S. L. Moshier). */
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

/* m ? a : b lane by lane (m lanes are 0 or -1, as vector comparisons give). */
static inline sq_vf sq_v_select(sq_vi m, sq_vf a, sq_vf b) {
  return (sq_vf)(((sq_vi)a & m) | ((sq_vi)b & ~m));
}

/* exp(x) for x in [-87, 88] (clamped outside: callers only divide by 1 + exp). */
static inline sq_vf sq_v_exp(sq_vf xin) {
  const sq_vf hi = sq_v_splat(88.0f), lo = sq_v_splat(-87.0f);
  /* Written so a NaN lane becomes a finite one here (no float-to-int overflow
   * below) and is put back at the end. */
  sq_vf x = sq_v_select(xin < hi, xin, hi);
  x = sq_v_select(x > lo, x, lo);
  /* x = n ln2 + r, |r| <= ln2 / 2; ln2 split in two for an exact n ln2. */
  sq_vf t = x * 1.44269504088896341f + 0.5f;
  sq_vi n = __builtin_convertvector(t, sq_vi); /* truncates toward 0 */
  sq_vf fn = __builtin_convertvector(n, sq_vf);
  n += (sq_vi)(fn > t); /* floor: subtract 1 where truncation went up */
  fn = __builtin_convertvector(n, sq_vf);
  sq_vf r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  sq_vf p = sq_v_splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  sq_vi scale = (n + 127) << 23; /* 2^n, n in [-126, 127] */
  return sq_v_select(xin == xin, p * (sq_vf)scale, xin);
}

/* tanh(x): an odd polynomial below |x| = 0.625, else 1 - 2e / (1 + e) with
 * e = exp(-2|x|) (no overflow, no cancellation), with the sign put back. */
static inline sq_vf sq_v_tanh(sq_vf x) {
  const sq_vi sign = (sq_vi)sq_v_splat(-0.0f);
  sq_vf ax = (sq_vf)((sq_vi)x & ~sign);
  sq_vf z = x * x;
  sq_vf p = sq_v_splat(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  sq_vf small = p * z * x + x;
  /* Beyond |x| = 10 the result rounds to 1 anyway; the clamp keeps exp in range. */
  sq_vf e = sq_v_exp(-2.0f * sq_v_select(ax > 10.0f, sq_v_splat(10.0f), ax));
  sq_vf big = 1.0f - 2.0f * e / (1.0f + e);
  big = (sq_vf)((sq_vi)big | ((sq_vi)x & sign));
  return sq_v_select(ax < 0.625f, small, big);
}

/* 1 / (1 + exp(-x)); exact 0 and 1 limits are approached within 2^-126. */
static inline sq_vf sq_v_sigmoid(sq_vf x) { return 1.0f / (1.0f + sq_v_exp(-x)); }

/* Eight-lane copies of sq_v_exp and sq_v_tanh for the additive attention
 * energies, built only by GCC on x86-64, where host_attention.c compiles its
 * energy loop twice (AVX2 and the SSE2 baseline) and picks one at load time.
 * Every lane runs exactly the operations of the four-lane versions, so the
 * results are the same bits and the accuracy above holds. The functions are
 * static and always inlined, so the 32-byte vectors never cross an ABI
 * boundary; -Wpsabi only warns that they would if they did. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SQ_HAVE_VF8 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float sq_vf8 __attribute__((vector_size(32)));
typedef int32_t sq_vi8 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) sq_vf8 sq_v8_splat(float x) {
  return (sq_vf8){x, x, x, x, x, x, x, x};
}

static inline __attribute__((always_inline)) sq_vf8 sq_v8_select(sq_vi8 m, sq_vf8 a, sq_vf8 b) {
  return (sq_vf8)(((sq_vi8)a & m) | ((sq_vi8)b & ~m));
}

static inline __attribute__((always_inline)) sq_vf8 sq_v8_exp(sq_vf8 xin) {
  const sq_vf8 hi = sq_v8_splat(88.0f), lo = sq_v8_splat(-87.0f);
  sq_vf8 x = sq_v8_select(xin < hi, xin, hi);
  x = sq_v8_select(x > lo, x, lo);
  sq_vf8 t = x * 1.44269504088896341f + 0.5f;
  sq_vi8 n = __builtin_convertvector(t, sq_vi8);
  sq_vf8 fn = __builtin_convertvector(n, sq_vf8);
  n += (sq_vi8)(fn > t);
  fn = __builtin_convertvector(n, sq_vf8);
  sq_vf8 r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  sq_vf8 p = sq_v8_splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  sq_vi8 scale = (n + 127) << 23;
  return sq_v8_select(xin == xin, p * (sq_vf8)scale, xin);
}

static inline __attribute__((always_inline)) sq_vf8 sq_v8_tanh(sq_vf8 x) {
  const sq_vi8 sign = (sq_vi8)sq_v8_splat(-0.0f);
  sq_vf8 ax = (sq_vf8)((sq_vi8)x & ~sign);
  sq_vf8 z = x * x;
  sq_vf8 p = sq_v8_splat(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  sq_vf8 small = p * z * x + x;
  sq_vf8 e = sq_v8_exp(-2.0f * sq_v8_select(ax > 10.0f, sq_v8_splat(10.0f), ax));
  sq_vf8 big = 1.0f - 2.0f * e / (1.0f + e);
  big = (sq_vf8)((sq_vi8)big | ((sq_vi8)x & sign));
  return sq_v8_select(ax < 0.625f, small, big);
}
#pragma GCC diagnostic pop
#endif

#endif
