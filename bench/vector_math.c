/* The host's vector tanh (backend/host/host_math.h) over every float of
 * magnitude up to 10.5 against double: the worst error in ulp, whether the
 * 4-lane and 16-lane forms agree bit for bit, and the time of 16 lanes (a
 * loop over 4 096 values in [-3, 3], the best of 7 rounds). The host tests
 * sample [-20, 20]; this reads every float, in under a minute. Not
 * built with seqcl:
 *
 *   gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Isrc bench/vector_math.c -lm -o vector_math
 *   ./vector_math
 *
 * (bench/RESULTS.md); with -march=x86-64-v4 -ffp-contract=fast added it
 * measures what the host's x86-64-v4 clone computes (multiply-adds fused,
 * as SQ_HOT_CLONES compiles it). Needs an AVX-512F CPU for the 16-lane
 * timing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/host/host_math.h"

SQ_IGNORE_PSABI

__attribute__((target("avx512f"), noinline)) static void tanh16(const float *x, float *o, int n) {
  for (int i = 0; i + SQ_VW16 <= n; i += SQ_VW16) {
    sq_vf16 v;
    memcpy(&v, x + i, sizeof v);
    v = sq_v16_tanh(v);
    memcpy(o + i, &v, sizeof v);
  }
}

__attribute__((noinline)) static void tanh4(const float *x, float *o, int n) {
  for (int i = 0; i + SQ_VW <= n; i += SQ_VW) {
    sq_vf v = sq_v_load(x + i, SQ_VW);
    sq_v_store(o + i, sq_v_tanh(v), SQ_VW);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  enum { B = 1 << 16 };
  static float x[B], o16[B], o4[B];
  const float lim = 10.5f;
  uint32_t top;
  memcpy(&top, &lim, sizeof top);
  double worst = 0;
  float worst_at = 0;
  long differ = 0;
  for (int neg = 0; neg < 2; neg++)
    for (uint32_t base = 0; base < top; base += B) {
      for (int i = 0; i < B; i++) {
        const uint32_t bits = (base + (uint32_t)i) | (neg ? 0x80000000u : 0u);
        memcpy(&x[i], &bits, sizeof bits);
      }
      tanh16(x, o16, B);
      tanh4(x, o4, B);
      for (int i = 0; i < B; i++) {
        differ += memcmp(&o16[i], &o4[i], sizeof(float)) != 0;
        const double want = tanh((double)x[i]);
        if (o16[i] == want) continue;
        const float aw = (float)fabs(want);
        const double ulp = (double)nextafterf(aw, INFINITY) - (double)aw;
        const double err = fabs(o16[i] - want) / ulp;
        if (err > worst) {
          worst = err;
          worst_at = x[i];
        }
      }
    }
  printf("tanh: worst %.3f ulp (at %.9g) over every float of magnitude <= 10.5; "
         "4-lane and 16-lane results differing: %ld\n", worst, (double)worst_at, differ);
  static float t[4096], u[4096];
  for (int i = 0; i < 4096; i++) t[i] = (float)(i % 997) / 997.0f * 6.0f - 3.0f;
  double best = 1e30;
  for (int round = 0; round < 7; round++) {
    const double t0 = now();
    for (int r = 0; r < 2000; r++) tanh16(t, u, 4096);
    const double s = (now() - t0) / (2000.0 * 4096 / SQ_VW16);
    if (s < best) best = s;
  }
  printf("tanh: %.2f ns per 16 lanes\n", best * 1e9);
  return worst <= 3.0 && differ == 0 ? 0 : 1;
}
