/* One front per operation: validate shapes, lengths and ids (returning a clear
 * status + message on bad input), then call the context's backend table.
 * Model code, training and the op list call these, never the table directly.
 * Grouped by op family; family X's fronts are in src/ops/X.c (backend.h says
 * where the rest of a family lives).
 *
 * Where an op reads per-sequence lengths, the caller passes both the device
 * copy (lens, int32 [N]) and the host copy (lens_host) that the front validates
 * (1 <= len <= S; SEQCL_ERR_EMPTY_SEQUENCE for a zero length). Where an op
 * takes a mask, mask_host (int32 [N,S] or NULL) is validated the same way
 * (a row with no valid position is SEQCL_ERR_EMPTY_SEQUENCE). */
#ifndef SQ_OPS_H
#define SQ_OPS_H

#include "backend/backend.h"
#include "core/ctx.h"
#include "core/halfwidth.h"

static inline sq_backend *sq_be(seqcl_ctx *ctx) { return ctx->be; }

/* ---- memory (memory.c) ---- */
seqcl_status sq_buf_alloc(seqcl_ctx *ctx, size_t bytes, sq_buf **out);
void sq_buf_free(sq_buf *buf); /* accepts NULL */
seqcl_status sq_write(seqcl_ctx *ctx, sq_ref dst, const void *src, size_t bytes);
seqcl_status sq_read(seqcl_ctx *ctx, sq_ref src, void *dst, size_t bytes);
seqcl_status sq_copy(seqcl_ctx *ctx, sq_ref dst, sq_ref src, size_t count);
seqcl_status sq_fill(seqcl_ctx *ctx, sq_ref dst, size_t count, float value);
seqcl_status sq_fill_i32(seqcl_ctx *ctx, sq_ref dst, size_t count, int32_t value);
seqcl_status sq_finish(seqcl_ctx *ctx);
/* fn(arg, i) for every i < n, at the same time where the backend can (its
 * run_tasks, backend.h), else in order; fn must not fail (it keeps its
 * status for the caller). A failure inside a task sets only the message of
 * the thread it ran on (sq_message_private), so that tasks failing at once
 * never write the context's message together: the task keeps that message
 * (seqcl_last_message() on its thread) and the caller raises it again. */
void sq_run_tasks(seqcl_ctx *ctx, int n, void (*fn)(void *arg, int task), void *arg);
/* How many tasks sq_run_tasks runs at the same time on ctx's backend now (1
 * where it runs them in order, and inside a task). */
int sq_task_threads(seqcl_ctx *ctx);
/* Reduced precision: whether ctx's backend keeps 16-bit copies of weights for
 * its products, and giving buf (whose floats are already rounded to width)
 * such a copy (the halfwidth_copy slot, backend.h). */
int sq_halfwidth_supported(seqcl_ctx *ctx);
seqcl_status sq_buf_halfwidth(seqcl_ctx *ctx, sq_buf *buf, sq_halfwidth width);
/* The count floats at `at` (sq_buf_freeze: all of buf) hold weights that only
 * sq_write, sq_copy, sq_fill and sq_adam_update change (the freeze slot,
 * backend.h): the backend may keep derived copies of them. Nothing where it
 * keeps none. */
void sq_freeze(seqcl_ctx *ctx, sq_ref at, size_t count);
void sq_buf_freeze(seqcl_ctx *ctx, sq_buf *buf);
/* buf's floats in host memory to fill directly, where the backend has them
 * there (the host_view slot, backend.h: only for a buffer fresh from
 * sq_buf_alloc); NULL elsewhere (then stage them and sq_write). */
float *sq_buf_host_view(seqcl_ctx *ctx, sq_buf *buf);

/* ---- linear (linear.c) ---- */
seqcl_status sq_gemm(seqcl_ctx *ctx, int ta, int tb, int M, int N, int K, float alpha, sq_ref A,
                     int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C, int ldc,
                     size_t sc, int batch);
/* The backend's gemm_paths slot (backend.h); *side = 0 where it has none. */
seqcl_status sq_gemm_paths(seqcl_ctx *ctx, int force, size_t *side);
/* y[rows, out] = x[rows, in] W^T + b, W [out, in] row-major (nn.Linear); b optional. */
seqcl_status sq_linear(seqcl_ctx *ctx, int rows, int in, int out, sq_ref x, int ldx, sq_ref W,
                       sq_ref b, sq_ref y, int ldy);
seqcl_status sq_add_bias(seqcl_ctx *ctx, int rows, int cols, sq_ref y, int ld, sq_ref bias);
seqcl_status sq_tanh_inplace(seqcl_ctx *ctx, size_t count, sq_ref x);
/* training */
seqcl_status sq_bias_grad(seqcl_ctx *ctx, int rows, int cols, sq_ref dy, int ld, sq_ref db);
seqcl_status sq_tanh_bwd(seqcl_ctx *ctx, size_t count, sq_ref y, sq_ref dy, sq_ref dx);
/* Backward of y = x W^T + b (nn.Linear) over rows: dx (optional) gets
 * beta_dx * dx + dy W; dW += dy^T x; db (optional) += column sums of dy. */
seqcl_status sq_linear_bwd(seqcl_ctx *ctx, int rows, int in, int out, sq_ref x, int ldx, sq_ref W,
                           sq_ref dy, int lddy, sq_ref dx, int lddx, float beta_dx, sq_ref dW,
                           sq_ref db);

/* ---- dropout (dropout.c) ---- */
/* Inverted dropout (backend.h's sq_dropout_args). sq_dropout_key fills the
 * mask's key from the probability p in [0, 1), the run's seed, the training
 * step and which tensor of the step it is: threshold floor(p * 2^32), scale
 * float(1 / (1 - p)). */
void sq_dropout_key(sq_dropout_args *a, double p, uint64_t seed, uint64_t step, uint32_t tensor);
seqcl_status sq_dropout(seqcl_ctx *ctx, const sq_dropout_args *a);

/* ---- attention (attention.c) ---- */
seqcl_status sq_attn_scores(seqcl_ctx *ctx, const sq_attn_args *a, const int32_t *lens_host,
                            const int32_t *mask_host, sq_ref scores);
seqcl_status sq_masked_softmax(seqcl_ctx *ctx, int N, int S, sq_ref x, sq_ref lens,
                               const int32_t *lens_host, sq_ref mask, const int32_t *mask_host,
                               sq_ref y);
seqcl_status sq_context(seqcl_ctx *ctx, int N, int S, int He, sq_ref alpha, sq_ref keys, sq_ref c,
                        int ld_c);
seqcl_status sq_attn_fused(seqcl_ctx *ctx, const sq_attn_args *a, const int32_t *lens_host,
                           const int32_t *mask_host, sq_ref c, int ld_c, sq_ref alpha);
/* training */
seqcl_status sq_attn_fwd(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                         sq_ref alpha);
seqcl_status sq_attn_bwd(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref alpha, sq_ref u, sq_ref dc,
                         int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys, sq_ref dpkeys,
                         sq_ref dv, sq_ref dbv);

/* ---- gru (gru.c) ---- */
seqcl_status sq_gru_gates(seqcl_ctx *ctx, const sq_gru_args *g, const int32_t *lens_host);

/* GRU cell: h <- GRUCell(x, h) for N rows. x [N, In] (row stride ldx),
 * W_ih [3H, In], W_hh [3H, H], biases [3H] optional. ws must hold 6*N*H floats. */
seqcl_status sq_gru_cell(seqcl_ctx *ctx, int N, int In, int H, sq_ref x, int ldx, sq_ref W_ih,
                         sq_ref W_hh, sq_ref b_ih, sq_ref b_hh, sq_ref h, sq_ref ws);

/* One GRU layer direction over time with pack_padded_sequence semantics.
 * x [N, T, In], out [N, T, out_width] written at column offset out_col (so a
 * bidirectional layer writes forward at 0 and reverse at H); positions t >= len
 * of out are left untouched (callers zero out first). h [N, H] holds the
 * initial state on entry and the final state (after each row's last valid
 * step) on return. ws must hold N*T*3H + N*3H floats (the hoisted input GEMM
 * over all time steps, then one recurrent GEMM [N,H]x[H,3H] per step). */
seqcl_status sq_gru_layer(seqcl_ctx *ctx, int N, int T, int In, int H, sq_ref x, sq_ref W_ih,
                          sq_ref W_hh, sq_ref b_ih, sq_ref b_hh, sq_ref lens,
                          const int32_t *lens_host, int reverse, sq_ref h, sq_ref out,
                          int out_width, int out_col, sq_ref ws);
/* training */
seqcl_status sq_gru_fwd(seqcl_ctx *ctx, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                        size_t sv_st);
seqcl_status sq_gru_gates_bwd(seqcl_ctx *ctx, const sq_gru_bwd_args *g);

/* ---- embedding (embedding.c) ---- */
seqcl_status sq_embedding(seqcl_ctx *ctx, int N, int D, int V, sq_ref ids, const int32_t *ids_host,
                          sq_ref table, sq_ref out, int ld_out);
/* The same gather for ids that a device slot wrote (argmax, greedy_update,
 * beam_select over the same V, so in range by construction): every shape and
 * buffer is checked, the id values are not, as that would need the very
 * device-to-host copy the decoding loops avoid. */
seqcl_status sq_embedding_device_ids(seqcl_ctx *ctx, int N, int D, int V, sq_ref ids, sq_ref table,
                                     sq_ref out, int ld_out);
/* training */
seqcl_status sq_embedding_bwd(seqcl_ctx *ctx, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                              int pad_id, sq_ref dtable);

/* ---- loss (loss.c) ---- */
seqcl_status sq_log_softmax(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref y);
seqcl_status sq_cross_entropy(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                              const int32_t *labels_host, sq_ref loss);
/* training */
seqcl_status sq_cross_entropy_bwd(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                                  float scale, sq_ref dx);

/* ---- decode (decode.c) ---- */
seqcl_status sq_argmax(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, sq_ref bias, sq_ref ids);
seqcl_status sq_greedy_update(seqcl_ctx *ctx, int N, sq_ref ids, sq_ref finished, int eos,
                              sq_ref hist);
/* ids = argmax_v (x + bias) then the greedy_update bookkeeping: one launch on a
 * backend with argmax_greedy, else argmax and greedy_update. x [N, V] stride ld. */
seqcl_status sq_argmax_greedy(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, sq_ref bias,
                              sq_ref ids, sq_ref finished, int eos, sq_ref hist);

/* ---- beam (beam.c): SEQCL_ERR_UNSUPPORTED where a backend has none ---- */
seqcl_status sq_beam_topk(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, int K, sq_ref vals,
                          sq_ref ids);
seqcl_status sq_beam_select(seqcl_ctx *ctx, const sq_beam_args *a);
seqcl_status sq_gather_rows(seqcl_ctx *ctx, int N, int D, sq_ref src, sq_ref idx, sq_ref dst);

/* ---- optim (optim.c), training ---- */
seqcl_status sq_sum_squares(seqcl_ctx *ctx, size_t count, sq_ref x, sq_ref out);
seqcl_status sq_scale(seqcl_ctx *ctx, size_t count, sq_ref x, float s);
seqcl_status sq_adam_update(seqcl_ctx *ctx, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                            float b1, float b2, float eps, float step_size, float bc2_sqrt);

#endif
