/* The backend table: one struct of function pointers per backend (host, OpenCL),
 * in the manner of ggml's ggml-backend-impl.h. Adding a backend means one new
 * table, not edits everywhere.
 *
 * Conventions for every slot:
 *  - all tensors are row-major, float32 or int32 (4-byte elements);
 *  - a sq_ref is a buffer plus an offset counted in 4-byte elements;
 *    a "null" ref (buf == NULL) means "absent" where a slot says optional;
 *  - shapes and lengths were validated by the caller (src/ops/ fronts): a
 *    slot may assume N, S, H ... >= 1, every len in [1, S], ids in range;
 *  - work is enqueued in order on the backend's one queue; a slot returns as
 *    soon as its work is enqueued (the host backend simply runs it). Only
 *    read() and finish() wait;
 *  - failures return a status after sq_fail(...) recorded the message. */
#ifndef SQ_BACKEND_H
#define SQ_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <seqcl/seqcl.h>

typedef struct sq_backend sq_backend;

/* Device (or host) memory owned by exactly one backend. */
typedef struct sq_buf {
  sq_backend *be;
  size_t bytes;
  void *ptr; /* host: the memory itself; OpenCL: the cl_mem */
  /* host only, reduced precision: the floats again as 16-bit values
   * (halfwidth_copy below; width a core/halfwidth.h sq_halfwidth), else NULL */
  uint16_t *half;
  int half_width;
  /* host only: floats [weights_lo, weights_hi) hold weights (the freeze slot:
   * a loaded model's, or a training graph's parameters, see train/graph.c);
   * the host keeps packed copies
   * of the matrices its products read from there (host_packed.c), in `packed` */
  size_t weights_lo, weights_hi;
  struct sq_host_packed *packed;
  /* host only: what ptr really holds (a kept block reused, or a huge page's
   * rounding, can be more than bytes), handed back with it (host_blocks.h) */
  size_t capacity;
} sq_buf;

typedef struct sq_ref {
  sq_buf *buf;
  size_t off; /* in 4-byte elements */
} sq_ref;

static inline sq_ref sq_at(sq_buf *buf, size_t off) {
  sq_ref r = {buf, off};
  return r;
}
static inline sq_ref sq_ref_add(sq_ref r, size_t off) {
  r.off += off;
  return r;
}
static inline sq_ref sq_none(void) {
  sq_ref r = {NULL, 0};
  return r;
}

/* The attention score: the public enum itself (seqcl/model.h), under the
 * short names the library uses, and its one name table (config.json's
 * attention.score, `--score`, messages):
 *   additive:   v . tanh(W_k h + b_k + W_q q + b_q) + b_v   (Bahdanau)
 *   general:    h . (W_q q + b_q)                           (Luong)
 *   dot:        h . q
 *   scaled_dot: h . q / sqrt(H_e)
 *   none:       no scores; the context is the top encoder layer's final state
 *               (model code only: the attention ops never see this kind) */
typedef seqcl_attention_score sq_score;
#define SQ_SCORE_ADDITIVE SEQCL_SCORE_ADDITIVE
#define SQ_SCORE_GENERAL SEQCL_SCORE_GENERAL
#define SQ_SCORE_DOT SEQCL_SCORE_DOT
#define SQ_SCORE_SCALED_DOT SEQCL_SCORE_SCALED_DOT
#define SQ_SCORE_NONE SEQCL_SCORE_NONE
#define SQ_SCORE_TABLE(X)                                                                   \
  X(SQ_SCORE_ADDITIVE, "additive")                                                          \
  X(SQ_SCORE_GENERAL, "general") X(SQ_SCORE_DOT, "dot") X(SQ_SCORE_SCALED_DOT, "scaled_dot") \
  X(SQ_SCORE_NONE, "none")
#define SQ_SCORE_COUNT 5
/* sq_score_names[kind] (backend/score.c). */
extern const char *const sq_score_names[SQ_SCORE_COUNT];
/* "additive, general, dot, scaled_dot, none", for messages. */
#define SQ_SCORE_CHOICE_(kind, name) ", " name
#define SQ_SCORE_CHOICES (&(SQ_SCORE_TABLE(SQ_SCORE_CHOICE_))[2]) /* past the first ", " */
/* 0 with *out set when name is one of the names, else -1 (*out untouched). */
int sq_score_parse(const char *name, sq_score *out);

/* Everything an attention step reads. The query projection is done beforehand
 * by a GEMM, so the kernels see the projected query qp:
 *   additive: qp = W_q q + b_q  [N, A]      general: qp = W_q q + b_q  [N, H_e]
 *   dot, scaled_dot: qp = q     [N, H_e]  */
typedef struct sq_attn_args {
  sq_score kind;
  int N, S, He, A; /* A only for additive */
  sq_ref qp;
  int ld_qp;       /* row stride of qp in elements */
  sq_ref keys;     /* H: encoder outputs [N, S, He] */
  sq_ref pkeys;    /* additive only: W_k H + b_k [N, S, A], computed once per source batch */
  sq_ref v;        /* additive only: energy weight [A] */
  sq_ref bv;       /* additive only, optional: energy bias [1] */
  float scale;     /* multiplies the score: 1/sqrt(He) for scaled_dot, else 1 */
  sq_ref lens;     /* int32 [N], each in [1, S] */
  sq_ref mask;     /* optional int32 [N, S]: 0 = invalid; ANDed with lens */
  /* Rows per source (0 reads as 1): row n's query attends to source n / group,
   * so keys, pkeys, lens and mask hold N / group sources (the shapes above
   * with N / group for N) while qp, the context and the weights keep N rows.
   * Beam search's K hypotheses of a sentence read its one encoding this way.
   * attn_scores and attn_fused take it; the training slots require 1. */
  int group;
} sq_attn_args;

/* a->group as a divisor (>= 1). */
static inline int sq_attn_group(const sq_attn_args *a) { return a->group > 1 ? a->group : 1; }

/* One GRU time step over N rows with hidden size H, PyTorch's reset-after form:
 *   r = s(gi_r + b_ir + gh_r + b_hr), z = s(gi_z + b_iz + gh_z + b_hz)
 *   n = tanh(gi_n + b_in + r * (gh_n + b_hn)), h' = (1 - z) * n + z * h
 * gi = W_ih x (no bias) and gh = W_hh h (no bias) were computed by GEMMs.
 * Row n is active at this step iff lens is absent or step < lens[n]; its time
 * index is t = step, or lens[n] - 1 - step when reverse (pack_padded_sequence).
 * Active rows read gi at gi + n*gi_sn + t*gi_st, update h in place and, when
 * out is present, write h' to out + n*out_sn + t*out_st. Inactive rows leave h
 * and out untouched. */
typedef struct sq_gru_args {
  int N, H;
  sq_ref gi;
  size_t gi_sn, gi_st;
  sq_ref gh;
  int ld_gh;       /* row stride of gh (>= 3H) */
  sq_ref b_ih, b_hh; /* [3H] each, optional */
  sq_ref h;        /* [N, H] in/out, row stride H */
  sq_ref out;      /* optional */
  size_t out_sn, out_st;
  sq_ref lens;     /* optional int32 [N] */
  int step;
  int reverse;
} sq_gru_args;

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

/* Beam search slots. K hypotheses per sentence, R = n K rows, row s K + i is
 * hypothesis i of sentence s. K is at most SQ_BEAM_MAX_K (private arrays).
 *
 * beam_topk: for each row r < N, the K best tokens of x[r, :V] (row stride ld)
 *   ranked by x itself (log_softmax only shifts a row; ranking before the shift
 *   keeps K = 1 identical to argmax), ties to the lower id, NaN below every
 *   number: ids[r K + i] = token, vals[r K + i] = x[r, token] - logsumexp(x[r, :]).
 *   When V < K the missing entries get id -1 and value -inf.
 *
 * beam_select: one beam step (tests/golden/README.md, "Beam search") for every
 *   sentence s with done[s] == 0; a done sentence only sets parent[r] = r.
 *   Candidates: every live row k of s times its K tokens, scored cum[r] + vals;
 *   ranked by score (NaN last), then lower token id, then lower k. With F =
 *   fin_count[s], the best K - F are kept in rank order: EOS candidates are
 *   appended to the finished table (fin_lp, fin_step = step, fin_par = the
 *   parent row), the others become rows s K + 0.. (live = 1, cum = score,
 *   parent = the parent row, tok_hist/par_hist[step R + r] = token/parent row,
 *   ids = token); the remaining rows get live = 0, ids = eos, parent = r.
 *   done[s] = 1 when F reaches K, no live row is left or step + 1 >= max_steps
 *   (then ids of s are eos; the live rows and their history stay for reading).
 *
 * gather_rows: dst[r, :D] = src[idx[r], :D] for r < N (idx in [0, N)). */
#define SQ_BEAM_MAX_K 16
typedef struct sq_beam_args {
  int n, K, step, max_steps, eos;
  sq_ref vals, tok;            /* beam_topk's output [R, K] */
  sq_ref cum;                  /* float [R] in/out: Σ log p of each row */
  sq_ref live;                 /* int [R] in/out */
  sq_ref ids, parent;          /* int [R] out */
  sq_ref tok_hist, par_hist;   /* int [max_steps, R] */
  sq_ref fin_lp;               /* float [n, K] */
  sq_ref fin_step, fin_par;    /* int [n, K] */
  sq_ref fin_count, done;      /* int [n] in/out */
} sq_beam_args;

/* What a backend is: the registry (registry.c) creates backends by kind, and
 * code that must treat one kind differently asks the kind, never the name. */
typedef enum sq_backend_kind {
  SQ_BACKEND_HOST = 0,   /* C loops + OpenBLAS on the host (backend/host/) */
  SQ_BACKEND_OPENCL = 1, /* any OpenCL device (backend/opencl/) */
  SQ_BACKEND_KINDS_ = 2
} sq_backend_kind;

/* Capabilities beyond the slots (a slot's capability is the slot being set). */
typedef enum sq_backend_cap {
  /* an own GEMM kernel beside the BLAS library's, chosen per product
   * (SQ_ABL_SMALL_GEMM switches it off, SQ_FORCE_SMALL_GEMM on where it can) */
  SQ_CAP_OWN_GEMM = 0,
  /* work split across host threads (SQ_ABL_THREADS keeps it on one) */
  SQ_CAP_THREADS = 1,
  /* halfwidth_copy below works (the host's own product kernel runs here) */
  SQ_CAP_HALFWIDTH = 2
} sq_backend_cap;

/* Work counters of a backend that counts (the OpenCL backend). */
typedef struct sq_backend_counts {
  unsigned long long launches, blas_calls, syncs;
} sq_backend_counts;

/* Inverted dropout over a [rows, cols] tensor: y = x * scale where element
 * e = r * cols + c is kept, 0 where it is dropped (y may be x: in place).
 * Element e is kept iff word e % 4 of Philox4x32-10 (Salmon et al. 2011, 10
 * rounds) at counter {e / 4, ctr[0], ctr[1], ctr[2]} and key {key[0], key[1]}
 * is >= threshold. Integer arithmetic only, so every backend draws the same
 * mask; the one float operation is the product x * scale. Its backward is
 * the same op on dy. src/ops/dropout.c fills the key words. */
typedef struct sq_dropout_args {
  int rows, cols;
  sq_ref x;
  int ldx;
  sq_ref y;
  int ldy;
  uint32_t key[2], ctr[3];
  uint32_t threshold;
  float scale;
} sq_dropout_args;

/* The table. Slots are grouped by op family; each family lives in
 * src/ops/<family>.c (the front), backend/host/host_<family>.c,
 * backend/opencl/ops_<family>.c, kernels/<family>.cl and
 * check/ops_<family>.c. A slot marked "optional" may be NULL: its front
 * then falls back to other slots or fails with SEQCL_ERR_UNSUPPORTED naming
 * the backend; every other slot is filled by every backend. */
typedef struct sq_backend_ops {
  sq_backend_kind kind;
  const char *name; /* "host", "opencl": for messages only */
  const char *blas; /* the library behind gemm, for reports: "OpenBLAS", "CLBlast" */
  /* 1 when the backend has capability cap (optional: NULL means none) */
  int (*supports)(const sq_backend *be, sq_backend_cap cap);
  /* Optional: kernels seqcl enqueued, BLAS calls, blocking waits so far. */
  void (*counters)(const sq_backend *be, sq_backend_counts *out);
  /* Optional: a copy through the backend's own streaming kernel, for the
   * benchmark's bandwidth figure (NULL: the copy slot is that already). */
  seqcl_status (*stream_copy)(sq_backend *be, sq_ref dst, sq_ref src, size_t count);
  /* Optional: runs fn(arg, i) for every i < n, at the same time where the
   * backend can, and returns when all have returned (NULL: the caller runs
   * them in order). For independent chains of slot calls (the encoder's two
   * directions): the host runs them on its threads when it has exactly n, each
   * chain's slots then on its thread alone. fn must not fail. */
  void (*run_tasks)(sq_backend *be, int n, void (*fn)(void *arg, int task), void *arg);
  /* Optional: how many chains run_tasks runs at the same time now (NULL: 1;
   * 1 inside a task). */
  int (*task_threads)(const sq_backend *be);

  /* ---- memory (the backend's own file) ---- */
  seqcl_status (*buf_alloc)(sq_backend *be, size_t bytes, sq_buf **out);
  void (*buf_free)(sq_backend *be, sq_buf *buf); /* accepts NULL */
  seqcl_status (*write)(sq_backend *be, sq_ref dst, const void *src, size_t bytes);
  seqcl_status (*read)(sq_backend *be, sq_ref src, void *dst, size_t bytes); /* waits */
  seqcl_status (*copy)(sq_backend *be, sq_ref dst, sq_ref src, size_t count);
  seqcl_status (*fill)(sq_backend *be, sq_ref dst, size_t count, float value);
  seqcl_status (*fill_i32)(sq_backend *be, sq_ref dst, size_t count, int32_t value);
  seqcl_status (*finish)(sq_backend *be); /* waits for all enqueued work */
  /* Optional (reduced precision, where SQ_CAP_HALFWIDTH): gives buf a 16-bit
   * copy (sq_halfwidth `width`) of all its floats, which must already be
   * representable in that width (so the copy is exact); gemm then reads B
   * from the copy when B lies in buf: the same values, half the bytes. A
   * write, copy or fill into buf drops the copy; other slots must not write
   * into such a buffer (the model's weights, which nothing writes). */
  seqcl_status (*halfwidth_copy)(sq_backend *be, sq_buf *buf, int width);
  /* Optional: the count floats at `at` hold weights, which change only through
   * write, copy, fill and the adam slot (a loaded model's weights never do),
   * so the backend may keep derived
   * copies of them, e.g. the host's weights packed for its products. Those
   * four drop the copies of what they write; no other slot may write there.
   * One range per buffer: a second call replaces the first. */
  void (*freeze)(sq_backend *be, sq_ref at, size_t count);
  /* Optional: buf's floats in host memory, where the host may fill them
   * directly instead of staging them for write (the host backend: the buffer
   * is that memory). Only for a buffer that nothing has written, copied,
   * frozen or read through a product yet: the writer keeps no derived copies
   * up to date. NULL from a backend whose memory is elsewhere. */
  float *(*host_view)(sq_backend *be, sq_buf *buf);

  /* ---- linear ---- */
  /* C = alpha * op(A) op(B) + beta * C, row-major, op = transpose when ta/tb;
   * op(A) is [M,K], op(B) is [K,N]; batch >= 1 GEMMs with element strides sa,sb,sc. */
  seqcl_status (*gemm)(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                       sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta,
                       sq_ref C, int ldc, size_t sc, int batch);
  /* Optional, for the self-check: where the GEMM changes the code it runs.
   * *side = s > 0 when products with M*N*K >= s^3 take other kernels than
   * smaller ones (CLBlast's indirect path), else 0. force = 1 makes every
   * product take the large-product kernels until force = 0 restores the
   * library's own choice; force < 0 only asks. */
  seqcl_status (*gemm_paths)(sq_backend *be, int force, size_t *side);

  /* y[r, c] += bias[c] for r < rows, c < cols; row stride ld. */
  seqcl_status (*add_bias)(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias);
  /* Optional (training). db[c] += sum over r < rows of dy[r * ld + c]. */
  seqcl_status (*bias_grad)(sq_backend *be, int rows, int cols, sq_ref dy, int ld, sq_ref db);
  /* x[i] = tanh(x[i]) for i < count (the decoder's combining layer). */
  seqcl_status (*tanh_inplace)(sq_backend *be, size_t count, sq_ref x);
  /* Optional (training). dx[i] = dy[i] * (1 - y[i]^2) where y = tanh(.) of the forward pass. */
  seqcl_status (*tanh_bwd)(sq_backend *be, size_t count, sq_ref y, sq_ref dy, sq_ref dx);

  /* ---- attention ---- */
  /* Raw energies e[N, S] (no mask; positions j >= len may hold anything finite). */
  seqcl_status (*attn_scores)(sq_backend *be, const sq_attn_args *a, sq_ref scores);
  /* y = softmax over j of x[n, j] with invalid positions at -inf; y = 0 exactly at
   * invalid positions; max-subtracted. lens int32 [N]; mask optional int32 [N,S]. */
  seqcl_status (*masked_softmax)(sq_backend *be, int N, int S, sq_ref x, sq_ref lens, sq_ref mask,
                                 sq_ref y);
  /* c[n, :] = sum_j alpha[n, j] h[n, j, :]; c row stride ld_c. */
  seqcl_status (*context)(sq_backend *be, int N, int S, int He, sq_ref alpha, sq_ref keys, sq_ref c,
                          int ld_c);
  /* scores + mask + softmax + context in one pass; alpha [N, S] optional. */
  seqcl_status (*attn_fused)(sq_backend *be, const sq_attn_args *a, sq_ref c, int ld_c,
                             sq_ref alpha);
  /* Optional (training). The attention forward of training: scores + masked
   * softmax + context like attn_fused (c row stride ld_c, alpha [N, S]
   * written, 0 at invalid positions), and for additive scores it also keeps
   * u = tanh(pkeys + qp) [N, S, A] (rows j >= len untouched) so that attn_bwd
   * need not recompute it. */
  seqcl_status (*attn_fwd)(sq_backend *be, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                           sq_ref alpha);
  /* Optional (training). Backward of scores + masked softmax + context for the
   * step a describes, given alpha [N, S] of the forward pass and dc [N, He]
   * (row stride ld_dc):
   *   u: the additive activations attn_fwd kept (optional: recomputed when absent);
   *   dqp [N, *] (row stride ld_dqp) is accumulated (+=), so that for dot scores
   *   it can be the gradient of the decoder state itself;
   *   dkeys [N, S, He] is accumulated (+=) with both the context and score paths;
   *   additive: dpkeys [N, S, A] is accumulated, dv [A] and dbv [1] (optional)
   *   are accumulated. Invalid positions contribute nothing. */
  seqcl_status (*attn_bwd)(sq_backend *be, const sq_attn_args *a, sq_ref alpha, sq_ref u,
                           sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                           sq_ref dpkeys, sq_ref dv, sq_ref dbv);

  /* ---- gru ---- */
  seqcl_status (*gru_gates)(sq_backend *be, const sq_gru_args *g);
  /* Optional (training). gru_gates, which also keeps r, z, n and W_hn h + b_hn
   * of each active row at saved + n*sv_sn + t*sv_st. */
  seqcl_status (*gru_fwd)(sq_backend *be, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                          size_t sv_st);
  /* Optional (training). See sq_gru_bwd_args. */
  seqcl_status (*gru_gates_bwd)(sq_backend *be, const sq_gru_bwd_args *g);

  /* ---- embedding ---- */
  /* out[n, :D] = table[ids[n], :]; out row stride ld_out; ids int32 [N] in [0, V). */
  seqcl_status (*embedding)(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                            int ld_out);
  /* Optional (training). dtable[ids[n], :] += dy[n * ld_dy, :D] for every n
   * with ids[n] != pad_id (pad_id < 0: none); rows are added in order n = 0, 1, ... */
  seqcl_status (*embedding_bwd)(sq_backend *be, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                                int pad_id, sq_ref dtable);

  /* ---- loss ---- */
  /* y[n, :] = log_softmax(x[n, :]) */
  seqcl_status (*log_softmax)(sq_backend *be, int N, int V, sq_ref x, sq_ref y);
  /* loss[0] = mean over rows with labels[n] >= 0 of -log_softmax(x[n])[labels[n]];
   * 0 when no row is valid. labels int32 [N], each < V or negative (ignored). */
  seqcl_status (*cross_entropy)(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                sq_ref loss);
  /* Optional (training). dx[n, :] = scale * (softmax(x[n, :]) - onehot(labels[n]))
   * for labels[n] >= 0, 0 for ignored rows (labels[n] < 0). scale is 1 / (number
   * of valid rows). */
  seqcl_status (*cross_entropy_bwd)(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                    float scale, sq_ref dx);

  /* ---- decode (greedy) ---- */
  /* ids[n] = argmax_v (x[n, v] + bias[v]) (bias optional), lowest index on ties. */
  seqcl_status (*argmax)(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias, sq_ref ids);
  /* Greedy step over N rows: id = finished[n] ? eos : ids[n]; ids[n] = id;
   * hist[n] = id when hist is present; finished[n] = (id == eos). All int32. */
  seqcl_status (*greedy_update)(sq_backend *be, int N, sq_ref ids, sq_ref finished, int eos,
                                sq_ref hist);
  /* Optional: argmax (with bias) then greedy_update in one pass, the same
   * results as the two slots in sequence (a launch fewer per greedy step);
   * the front falls back to the two slots when NULL. */
  seqcl_status (*argmax_greedy)(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                                sq_ref ids, sq_ref finished, int eos, sq_ref hist);

  /* ---- beam (optional, all three: see "Beam search slots") ---- */
  seqcl_status (*beam_topk)(sq_backend *be, int N, int V, sq_ref x, int ld, int K, sq_ref vals,
                            sq_ref ids);
  seqcl_status (*beam_select)(sq_backend *be, const struct sq_beam_args *a);
  seqcl_status (*gather_rows)(sq_backend *be, int N, int D, sq_ref src, sq_ref idx, sq_ref dst);

  /* ---- optim (optional, training) ---- */
  /* out[0] = sum of x[i]^2, accumulated in double. */
  seqcl_status (*sum_squares)(sq_backend *be, size_t count, sq_ref x, sq_ref out);
  /* x[i] *= s */
  seqcl_status (*scale)(sq_backend *be, size_t count, sq_ref x, float s);
  /* torch.optim.Adam without weight decay, step already bias-corrected by the
   * caller: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
   * p -= step_size * m / (sqrt(v) / bc2_sqrt + eps). */
  seqcl_status (*adam)(sq_backend *be, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                       float b1, float b2, float eps, float step_size, float bc2_sqrt);

  /* ---- dropout (optional, training) ---- */
  seqcl_status (*dropout)(sq_backend *be, const sq_dropout_args *a);

  void (*destroy)(sq_backend *be);
} sq_backend_ops;

struct sq_backend {
  const sq_backend_ops *ops;
  seqcl_ctx *ctx; /* for error messages */
  void *impl;     /* the backend's private state */
};

/* What every constructor starts with: a backend of ops for ctx whose impl is a
 * zeroed block of impl_bytes (the backend's destroy frees both); NULL, with
 * nothing left allocated, when out of host memory. registry.c. */
sq_backend *sq_backend_new(seqcl_ctx *ctx, const sq_backend_ops *ops, size_t impl_bytes);

/* Constructors (ctx->info says which device); the library calls them only
 * through the registry (sq_backend_create, registry.h). */
seqcl_status sq_host_backend_create(seqcl_ctx *ctx, sq_backend **out);
/* The host table itself, for tests that call its slots on a bare sq_backend. */
const sq_backend_ops *sq_host_backend_ops(void);
#ifdef SEQCL_HAVE_OPENCL
seqcl_status sq_opencl_backend_create(seqcl_ctx *ctx, sq_backend **out);
#endif

#endif
