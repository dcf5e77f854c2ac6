/* The measuring tools of the benchmark harness (harness.h): a random model
 * directory of a given size, and timings of single operations through the
 * backend table. Every timing is the median over `reps` repetitions, each of
 * `inner` back-to-back calls followed by one wait, after one warm-up. */
#ifndef SQ_BENCH_BENCH_H
#define SQ_BENCH_BENCH_H

#include <seqcl/seqcl.h>

#include "backend/backend.h"

/* Seconds on a monotonic clock. */
double sq_bench_now(void);
double sq_bench_median(double *v, int n); /* sorts v */

/* Writes DIR/config.json and DIR/model.safetensors: embed D, encoder and
 * decoder hidden H (unidirectional, one layer), attention `score` ("additive"
 * with dim A, or "general"), vocabularies V, output "state", every bias
 * present; weights uniform in +-1/sqrt(H) (PyTorch's GRU/Linear scale) from
 * `seed`. With block_eos the EOS logit's bias is -1e4, so greedy decoding runs
 * every step (fixed work per run). DIR must exist. */
seqcl_status sq_bench_write_model(const char *dir, int D, int H, int A, int V, const char *score,
                                  int block_eos, unsigned seed);

/* The general form: encoder hidden H per direction (H_e = H or 2H), `layers`
 * encoder layers, decoder hidden Hd, output "state" or "state_context". */
typedef struct sq_bench_model_spec {
  int D, H, layers, bidirectional, Hd, A, V;
  const char *score;
  int state_context;
} sq_bench_model_spec;
seqcl_status sq_bench_write_model_spec(const char *dir, const sq_bench_model_spec *spec,
                                       int block_eos, unsigned seed);

/* Counters of the context's backend (zero on the host). */
typedef sq_backend_counts sq_bench_counts;
void sq_bench_counters(seqcl_ctx *ctx, sq_bench_counts *out);

/* Copy bandwidth: a buffer of `bytes` copied by the bench_copy kernel (OpenCL)
 * or memcpy (host); *gbps counts bytes read + written. */
seqcl_status sq_bench_copy(seqcl_ctx *ctx, size_t bytes, int reps, double *gbps);
/* C[M,N] = A[M,K] B[N,K]^T (the nn.Linear layout) through the backend's GEMM. */
seqcl_status sq_bench_gemm(seqcl_ctx *ctx, int M, int N, int K, int reps, double *gflops,
                           double *seconds);
/* The fused attention step (additive: A = He) on N rows, S positions; *gbps
 * counts the compulsory traffic (keys, plus projected keys for additive). */
seqcl_status sq_bench_attention(seqcl_ctx *ctx, sq_score kind, int N, int S, int He, int reps,
                                double *gbps, double *seconds);
/* The GRU gate kernel on N rows of width H; *gbps counts gi, gh, h in and h out. */
seqcl_status sq_bench_gates(seqcl_ctx *ctx, int N, int H, int reps, double *gbps,
                            double *seconds);

#endif
