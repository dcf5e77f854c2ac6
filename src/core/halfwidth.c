/* 16-bit float conversions (halfwidth.h), bit by bit so that they give the
 * same answer on every compiler and CPU (no dependence on F16C or on how the
 * compiler treats _Float16). */
#include "core/halfwidth.h"

#include <float.h>
#include <math.h>
#include <string.h>

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return float_of(sign);
    int shift = 0;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      shift++;
    }
    mant &= 0x3ffu;
    return float_of(sign | ((uint32_t)(113 - shift) << 23) | (mant << 13));
  }
  return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

static float bf16_to_float(uint16_t h) { return float_of((uint32_t)h << 16); }

static uint16_t float_to_bf16(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  /* add half an ulp of bfloat16, less one unless the kept part is odd (ties
   * to even); a carry into the exponent is the correct rounding up, and
   * rounding up from the largest finite value gives inf */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static uint16_t float_to_half(float x) {
  const uint32_t u = bits_of(x);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: inf */
  if (a < 0x38800000u) {
    /* below 2^-14: a subnormal (or 0) of binary16, a multiple of 2^-24.
     * x * 2^24 rounded to an integer, ties to even, in float arithmetic:
     * exact, since the scaled value has at most 24 significant bits and
     * adding 2^23 (then removing it) rounds it to an integer the way the
     * current rounding mode does (round to nearest even by default). */
    float scaled = float_of(a) * 16777216.0f; /* exact: a power of two */
    float r = (scaled + 8388608.0f) - 8388608.0f;
    return (uint16_t)(sign | (uint16_t)r);
  }
  /* normal: rebias the exponent (127 -> 15), keep 10 mantissa bits, round
   * to nearest even on the 13 dropped; a carry moves into the exponent */
  uint32_t h = ((a >> 13) - ((127u - 15u) << 10));
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

/* The exported forms call the static ones, which the loops below inline (an
 * exported function of a position-independent build is not inlined). */
float sq_half_to_float(uint16_t h) { return half_to_float(h); }
float sq_bf16_to_float(uint16_t h) { return bf16_to_float(h); }
uint16_t sq_float_to_bf16(float x) { return float_to_bf16(x); }
uint16_t sq_float_to_half(float x) { return float_to_half(x); }

float sq_round_halfwidth(float x, sq_halfwidth w) {
  switch (w) {
  case SQ_HALF_BF16: return sq_bf16_to_float(sq_float_to_bf16(x));
  case SQ_HALF_F16: return sq_half_to_float(sq_float_to_half(x));
  case SQ_HALF_NONE: break;
  }
  return x;
}

uint16_t sq_halfwidth_bits(float x, sq_halfwidth w) {
  return w == SQ_HALF_F16 ? sq_float_to_half(x) : sq_float_to_bf16(x);
}

/* The whole-array loops: the conversions inlined, where a call per element
 * was most of a bf16 model load's own work. */
#define ROUND_ALL(round)                \
  for (size_t i = 0; i < n; i++) {      \
    const float r = round;              \
    if (!isfinite(r)) return i;         \
    x[i] = r;                           \
  }
size_t sq_round_halfwidth_n(float *x, size_t n, sq_halfwidth w) {
  switch (w) {
  case SQ_HALF_BF16: ROUND_ALL(bf16_to_float(float_to_bf16(x[i]))) break;
  case SQ_HALF_F16: ROUND_ALL(half_to_float(float_to_half(x[i]))) break;
  case SQ_HALF_NONE: ROUND_ALL(x[i]) break;
  }
  return n;
}
#undef ROUND_ALL

void sq_halfwidth_bits_n(const float *x, uint16_t *out, size_t n, sq_halfwidth w) {
  if (w == SQ_HALF_F16)
    for (size_t i = 0; i < n; i++) out[i] = float_to_half(x[i]);
  else
    for (size_t i = 0; i < n; i++) out[i] = float_to_bf16(x[i]);
}

float sq_halfwidth_max(sq_halfwidth w) {
  switch (w) {
  case SQ_HALF_BF16: return sq_bf16_to_float(0x7f7fu);
  case SQ_HALF_F16: return 65504.0f;
  case SQ_HALF_NONE: break;
  }
  return FLT_MAX;
}
