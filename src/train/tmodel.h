/* The trainable model: every parameter lives in one flat float buffer (so that
 * zeroing gradients, clipping and Adam are one call each), with a table giving
 * each tensor's SPEC §2 name, shape and offset. */
#ifndef SQ_TRAIN_TMODEL_H
#define SQ_TRAIN_TMODEL_H

#include <stdint.h>

#include "backend/backend.h"
#include "core/ctx.h"
#include "model/config.h"

/* Stacked encoders train up to this depth (SPEC §2 allows more for decode). */
#define SQ_TRAIN_MAX_LAYERS 4
#define SQ_TPARAM_MAX (8 * SQ_TRAIN_MAX_LAYERS + 16)

typedef enum sq_tinit { SQ_TINIT_NORMAL, SQ_TINIT_UNIFORM } sq_tinit;

typedef struct sq_tparam {
  char name[64];
  int ndim;
  int64_t shape[2];
  size_t off, count;
  sq_tinit init;
  float bound; /* U(-bound, bound) */
} sq_tparam;

typedef struct sq_tlayout {
  sq_config cfg;
  int nparams;
  sq_tparam p[SQ_TPARAM_MAX];
  size_t total;
  /* the vocabularies of a model trained on text (else NULL): saved with the
   * weights as src.vocab / tgt.vocab, in the model folder and the checkpoint;
   * sq_tlayout_make leaves them NULL */
  const struct sq_vocab *vocab[2];
  /* offsets (elements) into the flat buffer; (size_t)-1 when absent */
  size_t enc_emb;
  size_t enc_wih[SQ_TRAIN_MAX_LAYERS][2], enc_whh[SQ_TRAIN_MAX_LAYERS][2];
  size_t enc_bih[SQ_TRAIN_MAX_LAYERS][2], enc_bhh[SQ_TRAIN_MAX_LAYERS][2];
  size_t bridge_w, bridge_b, dec_emb;
  size_t key_w, key_b, query_w, query_b, energy_w, energy_b;
  size_t dec_wih, dec_whh, dec_bih, dec_bhh, out_w, out_b;
} sq_tlayout;

/* Fills the layout for cfg (encoder.num_layers 1..SQ_TRAIN_MAX_LAYERS). */
seqcl_status sq_tlayout_make(seqcl_ctx *ctx, const sq_config *cfg, sq_tlayout *out);
/* Draws every parameter as PyTorch initialises the same modules, from our own
 * seeded generator: embeddings N(0,1); GRU U(-1/sqrt(H), 1/sqrt(H)); Linear
 * weight and bias U(-1/sqrt(in), 1/sqrt(in)). */
void sq_tlayout_init(const sq_tlayout *L, uint64_t seed, float *params);
/* Writes DIR/config.json and DIR/model.safetensors (creating DIR), and the
 * vocabularies when L has them. */
seqcl_status sq_tlayout_save(seqcl_ctx *ctx, const sq_tlayout *L, const float *params,
                             const char *dir);

/* A small seeded generator (splitmix64 seeding xoshiro256**). */
typedef struct sq_trng {
  uint64_t s[4];
} sq_trng;
void sq_trng_seed(sq_trng *r, uint64_t seed);
uint64_t sq_trng_next(sq_trng *r);
double sq_trng_uniform(sq_trng *r); /* [0, 1) */
int sq_trng_below(sq_trng *r, int n); /* [0, n) */
double sq_trng_normal(sq_trng *r);

/* Forward with saved activations and backward over one padded batch. */
typedef struct sq_graph sq_graph;

/* Sizes every buffer once for up to max_n rows, sources of length S and T
 * decoder steps; no allocation happens per step afterwards. */
seqcl_status sq_graph_create(seqcl_ctx *ctx, const sq_tlayout *L, int max_n, int S, int T,
                             sq_graph **out);
void sq_graph_free(sq_graph *g);
/* The flat parameter / gradient buffers (total floats each). */
sq_ref sq_graph_params(sq_graph *g);
sq_ref sq_graph_grads(sq_graph *g);

/* Loads one batch: src [N, S] ids, lens [N], tgt [N, T+1] ids (BOS first); a
 * negative id in tgt past a line's end marks an ignored label. Padding costs
 * no work (the graph packs the real tokens and, per decoder step, the lines
 * with a label then or later); lines ordered by target length, longest
 * first, make that last set exactly the lines still running. */
seqcl_status sq_graph_set_batch(sq_graph *g, int N, const int32_t *src, const int32_t *lens,
                                const int32_t *tgt);
/* The same for a batch padded to its own longest lines: src [N, S], tgt
 * [N, T+1] with S and T at most the graph's (the work then scales with them). */
seqcl_status sq_graph_set_batch_shape(sq_graph *g, int N, int S, int T, const int32_t *src,
                                      const int32_t *lens, const int32_t *tgt);
/* Dropout for the following forward/backward pairs (p = 0: none, the
 * default; greedy decoding never drops). Masks are keyed by (seed, step), so
 * a step's forward and backward see the same masks on every device. */
seqcl_status sq_graph_set_dropout(sq_graph *g, double p, uint64_t seed, uint64_t step);
/* Teacher-forced forward + mean cross-entropy; *loss is read back. */
seqcl_status sq_graph_forward(sq_graph *g, float *loss);
/* Gradients of that loss, accumulated into the gradient buffer (zero it first). */
seqcl_status sq_graph_backward(sq_graph *g);
/* Greedy decoding of the loaded sources (tgt ignored) for T steps; out [N, T]. */
seqcl_status sq_graph_greedy(sq_graph *g, int32_t *out);

#endif
