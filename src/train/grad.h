/* Backward slots for training: one table per backend (sq_backend_ops.grad), in
 * the same conventions as the forward table in backend/backend.h (row-major,
 * float32/int32, sq_ref offsets in 4-byte elements, shapes validated by the
 * caller, work enqueued in order). Linear layers need no slot of their own:
 * their backward is three GEMMs plus bias_grad (see sq_linear_bwd).
 *
 * The fronts below (sq_grad_*) fail with SEQCL_ERR_UNSUPPORTED when the
 * context's backend has no such slot; training code calls them, never the
 * table directly. */
#ifndef SQ_TRAIN_GRAD_H
#define SQ_TRAIN_GRAD_H

#include "backend/backend.h"
#include "core/ctx.h"

/* Backward of one GRU time step (the step sq_gru_args describes), PyTorch's
 * reset-after form. The gates are recomputed from gi, gh, the biases and h_prev,
 * so the forward pass only keeps gi, gh and the states.
 *
 * Row n is active iff lens is absent or step < lens[n]; its time index is t =
 * step, or lens[n] - 1 - step when reverse. For an active row:
 *   dh[n] += dout[n*dout_sn + t*dout_st]        (when dout is present)
 *   dgi[n*gi_sn + t*gi_st] = d(pre-activations, input side)   [3H]
 *   dgh[n*ld_dgh]          = d(pre-activations, hidden side)  [3H]
 *   dh[n] = dh[n] * z       (the direct path; the caller adds dgh W_hh)
 * For an inactive row dgi and dgh are written as 0 and dh is unchanged (its
 * state passed through). The bias gradients are the column sums of dgi and dgh. */
typedef struct sq_gru_bwd_args {
  int N, H;
  sq_ref gi;
  size_t gi_sn, gi_st;
  sq_ref gh;
  int ld_gh;
  sq_ref b_ih, b_hh; /* optional */
  sq_ref h_prev;     /* [N, H] the state before this step */
  sq_ref dh;         /* [N, H] in: dL/dh', out: direct part of dL/dh_prev */
  sq_ref dout;       /* optional: dL/d(layer output) */
  size_t dout_sn, dout_st;
  sq_ref dgi;        /* laid out like gi (same strides) */
  sq_ref dgh;
  int ld_dgh;
  sq_ref lens; /* optional int32 [N] */
  int step;
  int reverse;
  /* optional: the gates gru_fwd kept (r, z, n, W_hn h + b_hn per row, 4H),
   * at saved + n*sv_sn + t*sv_st; when absent they are recomputed */
  sq_ref saved;
  size_t sv_sn, sv_st;
} sq_gru_bwd_args;

struct sq_grad_ops {
  /* dx[n, :] = scale * (softmax(x[n, :]) - onehot(labels[n])) for labels[n] >= 0,
   * 0 for ignored rows (labels[n] < 0). scale is 1 / (number of valid rows). */
  seqcl_status (*cross_entropy_bwd)(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                    float scale, sq_ref dx);
  /* db[c] += sum over r < rows of dy[r * ld + c]. */
  seqcl_status (*bias_grad)(sq_backend *be, int rows, int cols, sq_ref dy, int ld, sq_ref db);
  /* dx[i] = dy[i] * (1 - y[i]^2) where y = tanh(.) of the forward pass. */
  seqcl_status (*tanh_bwd)(sq_backend *be, size_t count, sq_ref y, sq_ref dy, sq_ref dx);
  seqcl_status (*gru_gates_bwd)(sq_backend *be, const sq_gru_bwd_args *g);
  /* The GRU step of training: gru_gates of the forward table, which also keeps
   * r, z, n and W_hn h + b_hn of each active row at saved + n*sv_sn + t*sv_st. */
  seqcl_status (*gru_fwd)(sq_backend *be, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                          size_t sv_st);
  /* Backward of scores + masked softmax + context for the step a describes,
   * given alpha [N, S] of the forward pass and dc [N, He] (row stride ld_dc):
   *   u: the additive activations attn_fwd kept (optional: recomputed when absent);
   *   dqp [N, *] (row stride ld_dqp) is accumulated (+=), so that for dot scores
   *   it can be the gradient of the decoder state itself;
   *   dkeys [N, S, He] is accumulated (+=) with both the context and score paths;
   *   additive: dpkeys [N, S, A] is accumulated, dv [A] and dbv [1] (optional)
   *   are accumulated. Invalid positions contribute nothing. */
  seqcl_status (*attn_bwd)(sq_backend *be, const sq_attn_args *a, sq_ref alpha, sq_ref u,
                           sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                           sq_ref dpkeys, sq_ref dv, sq_ref dbv);
  /* The attention forward of training: scores + masked softmax + context like
   * attn_fused (c row stride ld_c, alpha [N, S] written, 0 at invalid
   * positions), and for additive scores it also keeps u = tanh(pkeys + qp)
   * [N, S, A] (rows j >= len untouched) so that attn_bwd need not recompute it. */
  seqcl_status (*attn_fwd)(sq_backend *be, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                           sq_ref alpha);
  /* dtable[ids[n], :] += dy[n * ld_dy, :D] for every n with ids[n] != pad_id
   * (pad_id < 0: none); rows are added in order n = 0, 1, ... */
  seqcl_status (*embedding_bwd)(sq_backend *be, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                                int pad_id, sq_ref dtable);
  /* out[0] = sum of x[i]^2, accumulated in double. */
  seqcl_status (*sum_squares)(sq_backend *be, size_t count, sq_ref x, sq_ref out);
  /* x[i] *= s */
  seqcl_status (*scale)(sq_backend *be, size_t count, sq_ref x, float s);
  /* torch.optim.Adam without weight decay, step already bias-corrected by the
   * caller: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
   * p -= step_size * m / (sqrt(v) / bc2_sqrt + eps). */
  seqcl_status (*adam)(sq_backend *be, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                       float b1, float b2, float eps, float step_size, float bc2_sqrt);
};

/* The host implementation (src/train/host_grad.c). */
const struct sq_grad_ops *sq_host_grad_ops(void);
/* The backward table of a backend: its own, else the host table when the
 * backend is the host one (whose forward table does not name it), else NULL. */
const struct sq_grad_ops *sq_grad_table(const sq_backend *be);

/* Fronts. */
seqcl_status sq_grad_cross_entropy(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                                   float scale, sq_ref dx);
seqcl_status sq_grad_bias(seqcl_ctx *ctx, int rows, int cols, sq_ref dy, int ld, sq_ref db);
seqcl_status sq_grad_tanh(seqcl_ctx *ctx, size_t count, sq_ref y, sq_ref dy, sq_ref dx);
seqcl_status sq_grad_gru_gates(seqcl_ctx *ctx, const sq_gru_bwd_args *g);
seqcl_status sq_grad_gru_fwd(seqcl_ctx *ctx, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                             size_t sv_st);
seqcl_status sq_grad_attn_fwd(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                              sq_ref alpha);
seqcl_status sq_grad_attn(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref alpha, sq_ref u, sq_ref dc,
                          int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys, sq_ref dpkeys,
                          sq_ref dv, sq_ref dbv);
seqcl_status sq_grad_embedding(seqcl_ctx *ctx, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                               int pad_id, sq_ref dtable);
seqcl_status sq_grad_sum_squares(seqcl_ctx *ctx, size_t count, sq_ref x, sq_ref out);
seqcl_status sq_grad_scale(seqcl_ctx *ctx, size_t count, sq_ref x, float s);
seqcl_status sq_grad_adam(seqcl_ctx *ctx, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                          float b1, float b2, float eps, float step_size, float bc2_sqrt);

/* Backward of y = x W^T + b (nn.Linear) over rows: dx (optional) gets
 * beta_dx * dx + dy W; dW += dy^T x; db (optional) += column sums of dy. */
seqcl_status sq_linear_bwd(seqcl_ctx *ctx, int rows, int in, int out, sq_ref x, int ldx, sq_ref W,
                           sq_ref dy, int lddy, sq_ref dx, int lddx, float beta_dx, sq_ref dW,
                           sq_ref db);

#endif
