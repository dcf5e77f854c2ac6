/* Internal API of the host backend: the float32 CPU path (C loops + CBLAS).
 * Every slot runs synchronously; the functions below fill the table in
 * host_backend.c. Shapes were validated by the src/ops/ fronts. */
#ifndef SQ_BACKEND_HOST_H
#define SQ_BACKEND_HOST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Private state: a scratch row that grows on demand (the fused attention keeps
 * its energies there when the caller does not want alpha back). */
typedef struct sq_host {
  float *scratch;
  size_t scratch_floats;
} sq_host;

static inline float *sq_host_f32(sq_ref r) { return (float *)r.buf->ptr + r.off; }
static inline int32_t *sq_host_i32(sq_ref r) { return (int32_t *)r.buf->ptr + r.off; }
/* NULL for an absent optional ref. */
static inline float *sq_host_f32_opt(sq_ref r) { return r.buf ? sq_host_f32(r) : NULL; }
static inline int32_t *sq_host_i32_opt(sq_ref r) { return r.buf ? sq_host_i32(r) : NULL; }

/* Scalar sigmoid and tanh of the training slots (host_gru.c, host_attention.c). */
static inline float sq_host_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* tanh through expf: glibc's tanhf goes through expm1f and dominated a training
 * step (over half its time). Near 0 the identity 1 - 2/(e^2x + 1) cancels, so
 * a short odd series takes over there (its truncation below 1e-10 at |x| 0.1);
 * elsewhere the error is a few float ulps of 1, i.e. absolute ~2e-7, which is
 * far inside what gradients of a float32 model resolve. */
static inline float sq_host_fast_tanhf(float x) {
  if (fabsf(x) < 0.1f) {
    float x2 = x * x;
    return x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
  }
  return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f);
}

/* Scratch of at least n floats owned by the backend (valid until the next call). */
seqcl_status sq_host_scratch(sq_backend *be, size_t n, float **out);

/* The slots, one file per op family (host_<family>.c); host_backend.c puts
 * them in the table. */

/* host_linear.c */
seqcl_status sq_host_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                          sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta,
                          sq_ref C, int ldc, size_t sc, int batch);
seqcl_status sq_host_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias);
seqcl_status sq_host_bias_grad(sq_backend *be, int rows, int cols, sq_ref dy, int ld, sq_ref db);
seqcl_status sq_host_tanh_inplace(sq_backend *be, size_t count, sq_ref x);
seqcl_status sq_host_tanh_bwd(sq_backend *be, size_t count, sq_ref y, sq_ref dy, sq_ref dx);

/* host_attention.c */
seqcl_status sq_host_attn_scores(sq_backend *be, const sq_attn_args *a, sq_ref scores);
seqcl_status sq_host_masked_softmax(sq_backend *be, int N, int S, sq_ref x, sq_ref lens,
                                    sq_ref mask, sq_ref y);
seqcl_status sq_host_context(sq_backend *be, int N, int S, int He, sq_ref alpha, sq_ref keys,
                             sq_ref c, int ld_c);
seqcl_status sq_host_attn_fused(sq_backend *be, const sq_attn_args *a, sq_ref c, int ld_c,
                                sq_ref alpha);
seqcl_status sq_host_attn_fwd(sq_backend *be, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                              sq_ref alpha);
seqcl_status sq_host_attn_bwd(sq_backend *be, const sq_attn_args *a, sq_ref alpha, sq_ref u,
                              sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                              sq_ref dpkeys, sq_ref dv, sq_ref dbv);

/* host_gru.c */
seqcl_status sq_host_gru_gates(sq_backend *be, const sq_gru_args *g);
seqcl_status sq_host_gru_fwd(sq_backend *be, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                             size_t sv_st);
seqcl_status sq_host_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g);

/* host_embedding.c */
seqcl_status sq_host_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                               int ld_out);
seqcl_status sq_host_embedding_bwd(sq_backend *be, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                                   int pad_id, sq_ref dtable);

/* host_loss.c */
seqcl_status sq_host_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y);
seqcl_status sq_host_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                   sq_ref loss);
seqcl_status sq_host_cross_entropy_bwd(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                       float scale, sq_ref dx);

/* host_decode.c */
seqcl_status sq_host_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                            sq_ref ids);
seqcl_status sq_host_greedy_update(sq_backend *be, int N, sq_ref ids, sq_ref finished, int eos,
                                   sq_ref hist);

/* host_beam.c */
seqcl_status sq_host_beam_topk(sq_backend *be, int N, int V, sq_ref x, int ld, int K,
                               sq_ref vals, sq_ref ids);
seqcl_status sq_host_beam_select(sq_backend *be, const sq_beam_args *a);
seqcl_status sq_host_gather_rows(sq_backend *be, int N, int D, sq_ref src, sq_ref idx,
                                 sq_ref dst);

/* host_dropout.c */
seqcl_status sq_host_dropout(sq_backend *be, const sq_dropout_args *a);
/* The generator behind it (exposed for the known-answer test). */
void sq_host_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* host_optim.c */
seqcl_status sq_host_sum_squares(sq_backend *be, size_t count, sq_ref x, sq_ref out);
seqcl_status sq_host_scale(sq_backend *be, size_t count, sq_ref x, float s);
seqcl_status sq_host_adam(sq_backend *be, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                          float b1, float b2, float eps, float step_size, float bc2_sqrt);

#endif
