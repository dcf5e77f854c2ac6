/* Internals of the seq2seq model shared by model.c, encoder.c, decoder.c,
 * forward.c, greedy.c and beam.c. */
#ifndef SQ_MODEL_SEQ2SEQ_H
#define SQ_MODEL_SEQ2SEQ_H

#include <seqcl/seqcl.h>

#include "model/config.h"
#include "ops/ops.h"

static inline size_t sq_seq_len_of(const seqcl_seqs *s, size_t i) {
  return s->offsets[i + 1] - s->offsets[i];
}

/* One GRU direction's parameters (refs into the model's weight buffer). */
typedef struct sq_gru_params {
  sq_ref w_ih, w_hh, b_ih, b_hh;
} sq_gru_params;

struct seqcl_model {
  seqcl_ctx *ctx;
  sq_config cfg;
  int He;             /* encoder output width */
  sq_buf *weights;    /* every tensor, float32, one upload */
  sq_ref enc_emb;
  sq_gru_params *enc; /* [layers][directions], index l * dirs + d */
  sq_ref bridge_w, bridge_b;
  sq_ref dec_emb;
  sq_ref key_w, key_b, query_w, query_b, energy_w, energy_b; /* absent biases: sq_none() */
  sq_gru_params dec;
  sq_ref out_w, out_b;
  /* output "state_context" only: W_ih with its [embedding | context] column
   * blocks swapped to [context | embedding] (model.c), else sq_none() */
  sq_ref dec_w_ih_ce;
  /* [W_hh ; W_q] ([3H_d + q, H_d], q = sq_dec_query_width): both products
   * that read s_{t-1} as one GEMM (decoder.c), derived at load like W_ih_ce */
  sq_ref dec_w_hhq;
  /* T = E W_ih[:, :D]^T [V, 3H_d], the embedding's share of the decoder's
   * input product per token (dec_table.c), in a buffer of its own; NULL for
   * a vocabulary too large for it */
  sq_buf *dec_table;
  /* W_ih[:, D:] [3H_d, He], contiguous (model.c), where the table fits */
  sq_ref dec_w_ih_c;
  seqcl_progress_fn progress; /* seqcl_model_set_progress (NULL: none) */
  void *progress_user;
  seqcl_precision precision; /* the weights' width (precision.c) */
};

/* Reduced precision (precision.c). Whether ctx's device runs precision p
 * (SEQCL_ERR_UNSUPPORTED naming the device otherwise; F32 always runs). */
seqcl_status sq_model_precision_usable(seqcl_ctx *ctx, seqcl_precision p, const char *dir);
/* Rounds n weights of tensor `tensor` (of file `path`) to the model's width in
 * place; SEQCL_ERR_BAD_MODEL naming the tensor and element when one is beyond
 * the width's range. Nothing to do at F32. */
seqcl_status sq_model_round_weights(const seqcl_model *m, const char *path, const char *tensor,
                                    float *w, size_t n);
/* Gives buf (holding rounded weights) its 16-bit copy for the products. */
seqcl_status sq_model_halfwidth_copy(const seqcl_model *m, sq_buf *buf);

/* Builds m->dec_table from the uploaded weights (dec_table.c), or leaves it
 * NULL when it would be too large. */
seqcl_status sq_dec_table_build(seqcl_model *m);
/* Whether m's vocabulary is small enough for the table. */
int sq_dec_table_fits(const seqcl_model *m);
/* Whether a decoder step of m gathers from the table (it exists, and neither
 * it nor the stacked GEMM it goes with is ablated): the input product then
 * multiplies the context only. */
int sq_dec_uses_table(const seqcl_model *m);

/* Calls the model's progress hook; SEQCL_ERR_CANCELLED when it asks to stop. */
seqcl_status sq_model_progress(seqcl_model *m, size_t done, size_t total);

/* A batch of n source sequences, padded to S, encoded on the device. */
typedef struct sq_encoded {
  int n, S;
  /* decoder rows per source (0 reads as 1; sq_encoded_group): row r reads
   * source r / group's keys, lengths and mask; s0 (and rows) have n * group
   * rows */
  int group;
  int32_t *lens_host; /* [n] */
  sq_buf *lens;       /* int32 [n] */
  sq_buf *keys;       /* encoder outputs H [n, S, He], exactly 0 past each length */
  sq_buf *pkeys;      /* additive: W_k H + b_k [n, S, A], else NULL */
  sq_buf *s0;         /* decoder initial state [n, H_d] */
  /* score "none": the fixed context c = [h_fwd_final ; h_bwd_final] of the top
   * layer [n, He], and rows = int32 0..n-1, the gather index that copies it
   * into the decoder's input once per batch (sq_dec_start); else NULL */
  sq_buf *fixed, *rows;
  /* optional int32 [n, S] and its host copy: 0 hides a position from the
   * attention as padding is hidden (seqcl_model_forward_masked); NULL = none */
  sq_buf *mask;
  int32_t *mask_host;
} sq_encoded;

/* Encodes sequences first..first+n-1 of src (lengths >= 1 already checked). */
seqcl_status sq_encode(seqcl_model *m, const seqcl_seqs *src, size_t first, int n,
                       sq_encoded *out);
/* Repeats every row of e k times (row i becomes rows i*k .. i*k+k-1): beam search
 * runs k hypotheses per sentence against the same source. */
seqcl_status sq_encoded_repeat(seqcl_model *m, const sq_encoded *e, int k, sq_encoded *out);
/* The same for k decoder rows per sentence without copying the encoding: s0
 * (and score "none"'s gather index) get n k rows, the attention reads each
 * sentence's keys once for its k rows (sq_attn_args.group). The fused
 * attention only: the unfused ablation's softmax and context take one source
 * per row (sq_encoded_repeat). */
seqcl_status sq_encoded_group(seqcl_model *m, sq_encoded *e, int k);
void sq_encoded_free(sq_encoded *e);

/* Decoder workspace for n rows, allocated once per batch. */
typedef struct sq_dec_ws {
  int n;
  sq_buf *h;      /* state s [n, H_d] */
  sq_buf *xin;    /* GRU input [n, D + He]: embedding at 0, context at D */
  sq_buf *qp;     /* projected query [n, A or He] (general/additive) */
  sq_buf *gru_ws; /* 6 n H_d */
  /* Both GEMMs that read s_{t-1} as one: the model's [W_hh ; W_q] (W_hh's 3H_d
   * rows over W_q's q, additive/general; sq_none() when SQ_ABL_STACK_QUERY
   * turns it off); ghq [n, 3H_d + q] receives W_hh s (for the gates) and the
   * projected query side by side. */
  sq_ref wstack; /* = m->dec_w_hhq, or sq_none() */
  sq_buf *ghq;   /* [n, 3H_d + q] */
  sq_buf *abl_scores, *abl_alpha; /* [n, S]: only with SQ_ABL_FUSED_ATTN */
  /* output "state_context" with the stacked GEMM: the step's row [s | c | e]
   * [n, H_d + He + D] in place of xin, so that the output product reads
   * [s ; c] and the GRU input product [c ; e] (W_ih_ce) each as one operand */
  sq_buf *sce;
} sq_dec_ws;

seqcl_status sq_dec_ws_init(seqcl_model *m, int n, sq_dec_ws *ws);
/* Rows of W_q the decoder projects s_{t-1} with: A (additive), H_e (general),
 * 0 for the dot scores (they read s itself) and "none". */
int sq_dec_query_width(const seqcl_model *m);
void sq_dec_ws_free(sq_dec_ws *ws);
/* ws->h = e->s0; score "none": the context columns of ws->xin = e->fixed, which
 * no step overwrites, so a step costs no attention at all. */
seqcl_status sq_dec_start(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws);

/* One decoder step for every row: reads y_{t-1} from ids (int32 [n]; ids_host,
 * when not NULL, is its host copy for validation), s_{t-1} from ws->h.
 * Writes alpha_t [n, S] (optional; must be absent for score "none"), updates ws->h to s_t and writes logits_t
 * [n, V_tgt] (without the output bias unless with_bias). Launches: embedding 1,
 * s_{t-1} [W_hh ; W_q]^T 1 (+1 for general's query bias), attention 1, the
 * GRU's input GEMM and gates 2, output 1-3 (decoder.c). */
seqcl_status sq_dec_step(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws, sq_ref ids,
                         const int32_t *ids_host, sq_ref alpha, sq_ref logits, int with_bias);
/* The decode loops' one wait for the device, every few steps: reads the n
 * int32 finished flags at flags into host[0..n) and sets *all to whether every
 * one is set. */
seqcl_status sq_dec_all_finished(seqcl_ctx *ctx, sq_ref flags, int32_t *host, int n, int *all);

/* Checks every sequence has >= min_len tokens and ids < vocab ("what" names
 * the input in messages: "source", "target"). */
seqcl_status sq_check_seqs(seqcl_ctx *ctx, const seqcl_seqs *s, int vocab, size_t min_len,
                           const char *what);

/* greedy.c / beam.c: decode lines first..first+n-1 of src. Line i (0-based
 * within the batch) gets its hypotheses at hyps[i * slots ...] (best first,
 * hyp_counts[i] of them; greedy: exactly one, slots = 1) and, when line_align
 * is not NULL, line_align[i] = malloc'd alignments [steps, len_i] of its best
 * hypothesis (row stride = its own source length). */
seqcl_status sq_decode_greedy(seqcl_model *m, const seqcl_seqs *src, size_t first, int n,
                              int max_steps, seqcl_hypothesis *hyps, float **line_align);
/* Beam search over M models at once (M = 1: one model; M > 1: an ensemble,
 * ensemble.c, which takes no alignments). */
seqcl_status sq_decode_beam(seqcl_model *const *ms, int M, const seqcl_seqs *src, size_t first,
                            int n, int K, double length_penalty, int max_steps, int slots,
                            seqcl_hypothesis *hyps, int *hyp_counts, float **line_align);
/* Line i's hypothesis of a greedy batch of n rows from the token history hist
 * [ran, n] (row-major by step): the tokens up to its first EOS. */
seqcl_status sq_greedy_hypothesis(seqcl_ctx *ctx, const int32_t *hist, int ran, int n, int i,
                                  int eos, seqcl_hypothesis *h);

/* Reads the logits [R, V] of each of the M models (logits[j], with the output
 * bias) into scratch [M, R, V] and writes out [R, V] = the log of the mean of
 * their probabilities (in double; work holds M V doubles). SEQCL_ERR_NON_FINITE
 * names the model, line (first + r / K, counted from 1), step and id of a
 * logit that is not finite. */
seqcl_status sq_ensemble_combine(seqcl_ctx *ctx, int M, sq_buf *const *logits, int R, int V,
                                 float *scratch, double *work, float *out, size_t first, int K,
                                 int step);
/* Greedy decoding of lines first..first+n-1 with the M (>= 2) models of an
 * ensemble, each step's token the argmax of the combination, on the host. */
seqcl_status sq_decode_ensemble_greedy(seqcl_model *const *ms, int M, const seqcl_seqs *src,
                                       size_t first, int n, int max_steps,
                                       seqcl_hypothesis *hyps);

#endif
