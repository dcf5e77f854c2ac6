/* Weight bandwidth of the host's own product at batch 1 (M = 1, the decode
 * step's shape at batch 1): sq_gemm_nt over float32 weights, sq_gemm_nt_half
 * over their bfloat16 copy and sq_gemm_nt_pairs over its paired form (the
 * one --precision bf16 reads at batch 1), N x K, cycling through SETS
 * matrices so that the working set is SETS x N x K floats (the decoder's
 * weights, read once per step, are 3 to 5 MB). One thread; the best of 7
 * rounds of 200 passes. Not built with seqcl: compile it against a build's
 * internal library,
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
  const size_t words = sq_gemm_pairs_words(N, K); /* one matrix's paired copy */
  uint16_t *p = aligned_alloc(64, (size_t)sets * words * sizeof *p);
  if (!a || !b || !c || !h || !p) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  /* values exact in bfloat16 (8 significant bits), never zero */
  for (size_t i = 0; i < n; i++) {
    b[i] = (float)(1 + (i * 2654435761u) % 255) / 256.0f;
    uint32_t bits;
    memcpy(&bits, &b[i], sizeof bits);
    h[i] = (uint16_t)(bits >> 16);
  }
  for (int s = 0; s < sets; s++)
    sq_gemm_pack_pairs(N, K, b + (size_t)s * N * K, K, p + (size_t)s * words);
  for (int k = 0; k < M * K; k++) a[k] = 0.5f + (float)(k % 13) / 64.0f;
  static const char *const names[] = {"f32  ", "bf16 ", "pairs"};
  for (int half = 0; half < 3; half++) {
    double best = 1e30;
    for (int round = 0; round < 7; round++) {
      const double t0 = sq_bench_now();
      for (int pass = 0; pass < 200; pass++)
        for (int s = 0; s < sets; s++) {
          const size_t off = (size_t)s * N * K;
          if (half == 2)
            sq_gemm_nt_pairs(M, N, K, 1.0f, a, K, p + (size_t)s * words, 0, 0.0f, c, N);
          else if (half)
            sq_gemm_nt_half(M, N, K, 1.0f, a, K, h + off, K, SQ_HALF_BF16, 0.0f, c, N);
          else
            sq_gemm_nt(M, N, K, 1.0f, a, K, b + off, K, 0.0f, c, N);
        }
      const double t = (sq_bench_now() - t0) / (200.0 * sets);
      if (t < best) best = t;
    }
    printf("%s: %.1f us per %d x %d x %d product, %.1f GB/s of weights\n", names[half],
           best * 1e6, M, N, K, (double)N * K * (half ? 2 : 4) / best / 1e9);
  }
  free(a);
  free(b);
  free(c);
  free(h);
  free(p);
  return 0;
}
