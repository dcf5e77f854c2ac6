/* seqcl models: loading an attention GRU seq2seq model (SPEC §2), teacher-forced
 * forward passes and greedy / beam decoding (SPEC §1, §4). Include <seqcl/seqcl.h>.
 *
 * Ownership: a model borrows its context (close the model before the context);
 * results are owned by the caller and released with their _free function.
 * Every call returns a seqcl_status; on failure seqcl_last_message() names the
 * file, tensor, key or line concerned, and out-pointers are set to NULL. */
#ifndef SEQCL_MODEL_H
#define SEQCL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct seqcl_model seqcl_model;

typedef enum seqcl_attention_score {
  SEQCL_SCORE_ADDITIVE = 0,  /* Bahdanau: v . tanh(W_k h + b_k + W_q q + b_q) + b_v */
  SEQCL_SCORE_GENERAL = 1,   /* Luong: h . (W_q q + b_q) */
  SEQCL_SCORE_DOT = 2,       /* h . q */
  SEQCL_SCORE_SCALED_DOT = 3, /* h . q / sqrt(H_e) */
  SEQCL_SCORE_NONE = 4        /* no attention: the fixed context c = the top encoder layer's
                                 final state ([fwd ; bwd]) at every step, no alignments */
} seqcl_attention_score;

/* The model's config.json, as numbers. */
typedef struct seqcl_model_config {
  int src_vocab_size, tgt_vocab_size, embed_dim;
  int bos_id, eos_id;
  int pad_id;              /* -1 when null */
  int encoder_hidden;      /* H */
  int encoder_layers;
  int bidirectional;       /* 0 or 1 */
  int encoder_width;       /* H_e: H, or 2H when bidirectional */
  int decoder_hidden;      /* H_d */
  int decoder_init_bridge; /* 0: "zeros", 1: "bridge" */
  seqcl_attention_score score;
  int attention_dim;       /* A (additive only; 0 otherwise) */
  int output_state_context; /* 0: "state", 1: "state_context" */
  int decoder_init;        /* 0: "zeros", 1: "bridge", 2: "final" (s_0 = the encoder's
                            * final state; decoder_init_bridge is 0 then) */
} seqcl_model_config;

/* Loads DIR/config.json and DIR/model.safetensors. Both are parsed and checked
 * completely (every required tensor present, no unknown name, every shape
 * against the config) before anything touches the device; then the weights
 * are uploaded once, as float32. Errors: SEQCL_ERR_IO (unreadable file),
 * SEQCL_ERR_BAD_MODEL (malformed config/file, missing/unknown tensor, wrong
 * shape; the message names the file and tensor or key). */
seqcl_status seqcl_model_load(seqcl_ctx *ctx, const char *dir, seqcl_model **out);
void seqcl_model_free(seqcl_model *model); /* accepts NULL */

/* The width of the weights a model computes with. F32 (the default) keeps
 * SPEC §5's agreement with PyTorch. BF16 and F16 are opt-in, for batch-1
 * latency: every weight is rounded to that width once, at load (round to
 * nearest even, as PyTorch's .to(torch.bfloat16) / .half()), the products read
 * a 16-bit copy of the weights (half the bytes per decoder step) and all
 * arithmetic stays float32. So the result is the float32 result of the model
 * with rounded weights. Available on the host path where the CPU has
 * AVX-512F (its own product kernel); elsewhere loading with it fails with
 * SEQCL_ERR_UNSUPPORTED. */
typedef enum seqcl_precision {
  SEQCL_PRECISION_F32 = 0,
  SEQCL_PRECISION_BF16 = 1,
  SEQCL_PRECISION_F16 = 2
} seqcl_precision;

/* "f32", "bf16", "f16" (NULL for a value outside the enum). */
const char *seqcl_precision_name(seqcl_precision p);
/* The inverse; SEQCL_ERR_INVALID_ARGUMENT naming the accepted values. */
seqcl_status seqcl_precision_parse(const char *name, seqcl_precision *out);

typedef struct seqcl_model_options {
  seqcl_precision precision; /* default SEQCL_PRECISION_F32 */
} seqcl_model_options;
void seqcl_model_options_init(seqcl_model_options *opts);

/* seqcl_model_load with options (NULL: the defaults). Reduced precision adds
 * two errors, both before anything is uploaded: SEQCL_ERR_UNSUPPORTED when the
 * device cannot run it, and SEQCL_ERR_BAD_MODEL naming the tensor and element
 * when a weight is beyond the width's range (binary16: |w| > 65504). */
seqcl_status seqcl_model_load_with(seqcl_ctx *ctx, const char *dir,
                                   const seqcl_model_options *opts, seqcl_model **out);
/* The precision the model was loaded with. */
seqcl_precision seqcl_model_precision(const seqcl_model *model);

/* Config getters. */
seqcl_status seqcl_model_get_config(const seqcl_model *model, seqcl_model_config *out);
int seqcl_model_src_vocab_size(const seqcl_model *model);
int seqcl_model_tgt_vocab_size(const seqcl_model *model);
int seqcl_model_bos_id(const seqcl_model *model);
int seqcl_model_eos_id(const seqcl_model *model);
seqcl_ctx *seqcl_model_ctx(const seqcl_model *model);

/* Ragged sequences stored flat: sequence i is ids[offsets[i] .. offsets[i+1]).
 * The arrays are borrowed for the duration of a call. */
typedef struct seqcl_seqs {
  size_t count;
  const int32_t *ids;
  const size_t *offsets; /* count + 1 entries, offsets[0] == 0 */
} seqcl_seqs;

/* ---- progress ---- */

/* Long calls report how far they are: seqcl_model_forward after each decoder
 * step of each batch, seqcl_model_decode after each batch, as fn(user, lines
 * done, lines in the call). Returning nonzero stops the call with
 * SEQCL_ERR_CANCELLED. fn NULL (the default) reports nothing. */
typedef int (*seqcl_progress_fn)(void *user, size_t done, size_t total);
void seqcl_model_set_progress(seqcl_model *model, seqcl_progress_fn fn, void *user);

/* ---- teacher forcing ---- */

/* N = lines, S = longest source, T = longest target - 1 (decoder steps).
 * Line n has steps[n] = len(target n) - 1; logits and alignments at steps
 * t >= steps[n] are 0, and alignments at source positions j >= len(source n)
 * are 0. */
typedef struct seqcl_forward_result {
  size_t N;
  int T, S, V;
  int *steps;        /* [N] */
  float *logits;     /* [N, T, V] */
  float *alignments; /* [N, T, S]; NULL for a model with score "none" (no alignments) */
  float loss;        /* mean cross-entropy over every label of every line */
  size_t labels;     /* how many labels the mean is over */
} seqcl_forward_result;

/* src and tgt must have the same number of lines; every source line needs at
 * least 1 token and every target line at least 2 (BOS and one label):
 * SEQCL_ERR_EMPTY_SEQUENCE otherwise, naming the line (1-based). Ids must be in
 * range (SEQCL_ERR_INVALID_ARGUMENT). batch_size (0 = all lines at once) only
 * splits the work: results do not depend on it beyond float rounding. */
seqcl_status seqcl_model_forward(seqcl_model *model, const seqcl_seqs *src, const seqcl_seqs *tgt,
                                 int batch_size, seqcl_forward_result **out);
void seqcl_forward_result_free(seqcl_forward_result *r); /* accepts NULL */

/* seqcl_model_forward with source positions hidden from the attention (seed
 * 000 §08's "force-mask its position"): keep holds one byte per source token,
 * parallel to src->ids; 0 gives that position an energy of -inf before the
 * softmax, so its weight is exactly 0 and it adds nothing to the context,
 * as padding does. The encoder still reads every token. Every line must keep
 * at least one position (SEQCL_ERR_EMPTY_SEQUENCE naming the line); keep NULL
 * is seqcl_model_forward. Alignments are returned as usual (0 where masked). */
seqcl_status seqcl_model_forward_masked(seqcl_model *model, const seqcl_seqs *src,
                                        const uint8_t *keep, const seqcl_seqs *tgt,
                                        int batch_size, seqcl_forward_result **out);

/* ---- decoding ---- */

typedef struct seqcl_hypothesis {
  int32_t *ids;   /* produced ids after BOS and before EOS */
  size_t len;
  int finished;   /* 1 when it ended with EOS */
  int steps;      /* decoder steps: len + 1 when finished */
  double logprob; /* sum of log p over its steps (EOS included) */
  double score;   /* logprob / steps^A */
} seqcl_hypothesis;

typedef struct seqcl_decode_options {
  int max_steps;         /* 0: 2 x the longest source line + 10 */
  int beam;              /* 1 <= K <= 16; 1 = greedy (the device-resident greedy loop) */
  double length_penalty; /* A in score = sum log p / L^A (beam search) */
  int nbest;             /* hypotheses kept per line (<= beam); 0 = 1. With nbest
                          * >= 1 given explicitly the beam path runs even for
                          * K = 1 so that scores are computed. */
  int batch_size;        /* sentences decoded together; 0 = 64 */
  int want_alignments;   /* fill seqcl_decode_result.alignments (SEQCL_ERR_INVALID_ARGUMENT
                          * for a model with score "none", which has none) */
  /* Called after each batch, in input order (may be NULL): lines [first,
   * first + n) are final, their hypotheses hyps[i * nbest + k] (i from 0 for
   * line first, k < hyp_counts[i], best first), so a caller can write them out
   * before the call returns. Returning nonzero stops the call with
   * SEQCL_ERR_CANCELLED. */
  int (*on_lines)(void *user, size_t first, size_t n, const seqcl_hypothesis *hyps,
                  const int *hyp_counts, int nbest);
  void *user;
} seqcl_decode_options;

/* beam 1, length penalty 0, nbest 0, batch 64, max_steps 0, no alignments. */
void seqcl_decode_options_init(seqcl_decode_options *opts);

typedef struct seqcl_decode_result {
  size_t count;       /* lines */
  int32_t *ids;       /* best output of every line, flat */
  size_t *offsets;    /* line i is ids[offsets[i] .. offsets[i+1]) */
  int *steps;         /* decoder steps line i took (the EOS step included) */
  double *scores;     /* score of the best hypothesis; NAN on the greedy path */
  int nbest;          /* hypothesis slots per line (1 on the greedy path) */
  int *hyp_counts;    /* [count]: hypotheses stored for line i (<= nbest) */
  seqcl_hypothesis *hyps; /* [count * nbest], best first */
  int T, S;           /* alignments: T = most steps of any line, S = longest source */
  float *alignments;  /* [count, T, S] when asked for, else NULL; rows at t >= steps[i] are 0 */
} seqcl_decode_result;

seqcl_status seqcl_model_decode(seqcl_model *model, const seqcl_seqs *src,
                                const seqcl_decode_options *opts, seqcl_decode_result **out);
void seqcl_decode_result_free(seqcl_decode_result *r); /* accepts NULL */

#define SEQCL_ENSEMBLE_MAX 16 /* models one ensemble decode takes */

/* Decoding with an ensemble: models[0..count) (1 <= count <= 16, loaded on
 * one context) read the same source ids and score the same hypotheses; each
 * step chooses (greedy) or ranks (beam) by the log of the mean of the
 * models' probabilities, log((1/count) sum_j softmax(logits_j)), so beam
 * scores are log-probabilities of that mixture. Every model must have the
 * first one's vocabulary sizes, bos_id and eos_id (SEQCL_ERR_INVALID_ARGUMENT
 * naming the model otherwise); the widths, layers, attention and precision
 * may differ. Alignments are refused for count > 1 (each model has its own).
 * count 1 is seqcl_model_decode. Each step reads every model's logits back
 * to the host, so a count-model ensemble costs a little more than count
 * decodes. Progress is reported through models[0]'s hook. */
seqcl_status seqcl_ensemble_decode(seqcl_model *const *models, int count, const seqcl_seqs *src,
                                   const seqcl_decode_options *opts, seqcl_decode_result **out);

#ifdef __cplusplus
}
#endif
#endif
