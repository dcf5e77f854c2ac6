/* Which training lines make each batch. Two streams, both seeded and both
 * resumable from (generator state before the epoch, epoch, cursor):
 *   - plain: a fresh permutation of the lines each epoch, B lines at a time
 *     (a batch may straddle two epochs); cursor counts lines;
 *   - bucketed: the epoch's permutation cut into windows of `window` batches,
 *     each window sorted by length (source, then target) and cut into batches
 *     of at most B lines and, with `tokens`, at most that many padded tokens
 *     (lines x (longest source + longest target)); then the batches of the
 *     epoch are shuffled. Lines of similar length share a batch, so little
 *     of each batch is padding. cursor counts batches. */
#ifndef SQ_TRAIN_BATCHES_H
#define SQ_TRAIN_BATCHES_H

#include "train/tmodel.h"

typedef struct sq_batcher {
  /* settings */
  long n;                       /* lines */
  int B;                        /* lines per batch, at most */
  int window;                   /* 0: plain; else batches per sorted window */
  long tokens;                  /* bucketed: padded tokens per batch, at most (0: no limit) */
  const int32_t *src_len, *tgt_len; /* per line; tgt_len counts the decoder steps */
  /* state */
  sq_trng rng, epoch_rng;       /* epoch_rng: rng before this epoch's permutation */
  long epoch, cursor;
  /* this epoch (owned) */
  long *perm;                   /* n lines */
  long *start, *order;          /* bucketed: batch b is perm[start[b] .. start[b + 1]); order: the shuffled batches */
  long nbatches;
} sq_batcher;

/* Allocates for the settings already filled in b; the stream starts with
 * epoch 1 seeded by seed. SEQCL_ERR_OUT_OF_MEMORY on failure. */
seqcl_status sq_batcher_init(sq_batcher *b, uint64_t seed);
/* Puts the stream where a checkpoint left it. */
void sq_batcher_restore(sq_batcher *b, const uint64_t epoch_rng[4], long epoch, long cursor);
/* The next batch's lines into idx (at most B); returns their count. */
int sq_batcher_next(sq_batcher *b, long *idx);
/* The number of batches (steps) that `epochs` passes over the lines take from
 * the start of the stream (a fraction of the last epoch rounded up). */
long sq_batcher_steps_for(const sq_batcher *b, uint64_t seed, double epochs);
void sq_batcher_free(sq_batcher *b);

#endif
