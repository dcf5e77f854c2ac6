/* Weight bandwidth of the host's products at batch 1 (M = 1, the decode
 * step's shape at batch 1) and with a few rows: sq_gemm_nt reading float32
 * weights in place (the 4 x 4 blocks; --ablate packed_weights) and over
 * their bfloat16 copy, and the packed forms a loaded model's weights are
 * read in, the float32 panels (sq_gemm_nt_panels) and the 16-bit ones
 * (sq_gemm_nt_half_panels, what --precision bf16 and f16 read), N x K, cycling
 * through SETS matrices so that the working set is SETS x N x K floats (the
 * decoder's weights, read once per step, are 3 to 5 MB). One thread; the
 * best of 7 rounds of 200 passes. Not built with seqcl: compile it against
 * a build's internal library,
 *
 *   gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Isrc -Iinclude bench/gemm_batch1.c \
 *       build/src/libseqcl_internal.a -lopenblas -ljansson -lOpenCL -lclblast \
 *       -lstdc++ -lm -lpthread -o gemm_batch1
 *   ./gemm_batch1 [SETS [N [K [M]]]]    (default 4 1024 256 1)
 *
 * (M > 1: the same products with M rows of A, the shape of beam search at
 * batch 1 and of the encoder's many-row products)
 *
 * and run it for two builds in turns (bench/RESULTS.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/gemm_nt.h"
#include "bench/bench.h"
#include "core/halfwidth.h"

int main(int argc, char **argv) {
  const int sets = argc > 1 ? atoi(argv[1]) : 4, N = argc > 2 ? atoi(argv[2]) : 1024,
            K = argc > 3 ? atoi(argv[3]) : 256, M = argc > 4 ? atoi(argv[4]) : 1;
  if (sets < 1 || N < 1 || K < 1 || M < 1) {
    fprintf(stderr, "usage: %s [SETS [N [K [M]]]] (positive integers)\n", argv[0]);
    return 2;
  }
  if (!sq_gemm_nt_available()) {
    fprintf(stderr, "%s: this CPU has no AVX-512F, so the own product does not run\n", argv[0]);
    return 77;
  }
  const size_t n = (size_t)sets * N * K;
  float *b = malloc(n * sizeof *b), *a = malloc((size_t)M * K * sizeof *a);
  float *c = malloc((size_t)M * N * sizeof *c);
  uint16_t *h = malloc(n * sizeof *h);
  /* one matrix's packed copies */
  const size_t floats = sq_gemm_panels_floats(N, K), words = sq_gemm_half_panels_words(N, K);
  float *pf = aligned_alloc(64, (size_t)sets * floats * sizeof *pf);
  uint32_t *ph = aligned_alloc(64, (size_t)sets * words * sizeof *ph);
  uint32_t *pg = aligned_alloc(64, (size_t)sets * words * sizeof *pg);
  if (!a || !b || !c || !h || !pf || !ph || !pg) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  /* values exact in bfloat16 (8 significant bits) and binary16, never zero */
  for (size_t i = 0; i < n; i++) {
    b[i] = (float)(1 + (i * 2654435761u) % 255) / 256.0f;
    uint32_t bits;
    memcpy(&bits, &b[i], sizeof bits);
    h[i] = (uint16_t)(bits >> 16);
  }
  for (int s = 0; s < sets; s++) {
    sq_gemm_pack(N, K, b + (size_t)s * N * K, K, pf + (size_t)s * floats);
    sq_gemm_pack_half_panels(N, K, b + (size_t)s * N * K, K, SQ_HALF_BF16, ph + (size_t)s * words);
    sq_gemm_pack_half_panels(N, K, b + (size_t)s * N * K, K, SQ_HALF_F16, pg + (size_t)s * words);
  }
  for (int k = 0; k < M * K; k++) a[k] = 0.5f + (float)(k % 13) / 64.0f;
  static const char *const names[] = {"f32 in place  ", "bf16 in place ", "f32 panels    ",
                                      "bf16 panels   ", "f16 panels    "};
  enum { FORMS = 5 };
  double best[FORMS];
  for (int form = 0; form < FORMS; form++) best[form] = 1e30;
  for (int round = 0; round < 7; round++)
    for (int form = 0; form < FORMS; form++) { /* in turns */
      const double t0 = sq_bench_now();
      for (int pass = 0; pass < 200; pass++)
        for (int s = 0; s < sets; s++) {
          const size_t off = (size_t)s * N * K;
          if (form == 4)
            sq_gemm_nt_half_panels(M, N, K, 1.0f, a, K, pg + (size_t)s * words, 0, SQ_HALF_F16,
                                   0.0f, c, N);
          else if (form == 3)
            sq_gemm_nt_half_panels(M, N, K, 1.0f, a, K, ph + (size_t)s * words, 0, SQ_HALF_BF16,
                                   0.0f, c, N);
          else if (form == 2)
            sq_gemm_nt_panels(M, N, K, 1.0f, a, K, pf + (size_t)s * floats, 0, 0.0f, c, N);
          else if (form == 1)
            sq_gemm_nt_half(M, N, K, 1.0f, a, K, h + off, K, SQ_HALF_BF16, 0.0f, c, N);
          else
            sq_gemm_nt(M, N, K, 1.0f, a, K, b + off, K, 0.0f, c, N);
        }
      const double t = (sq_bench_now() - t0) / (200.0 * sets);
      if (t < best[form]) best[form] = t;
    }
  for (int form = 0; form < FORMS; form++) {
    const int bytes = form == 0 || form == 2 ? 4 : 2; /* per weight */
    printf("%s: %.1f us per %d x %d x %d product, %.1f GB/s of weights\n", names[form],
           best[form] * 1e6, M, N, K, (double)N * K * bytes / best[form] / 1e9);
  }
  free(a);
  free(b);
  free(c);
  free(h);
  free(pf);
  free(ph);
  free(pg);
  return 0;
}
