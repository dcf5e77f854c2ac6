/* Which training lines make each batch (batches.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/batches.h"

#define SHUFFLE_SALT 0x5EED0DA7A5EED0DAull

typedef struct keyed {
  int32_t s, t;
  long line;
} keyed;

static int by_length(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return a->line < b->line ? -1 : a->line > b->line; /* a total order: the same batches everywhere */
}

static void permute(sq_trng *rng, long *p, long n) {
  for (long i = n - 1; i > 0; i--) { /* Fisher-Yates */
    long j = sq_trng_below(rng, (int)(i + 1));
    long t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
}

/* The next epoch: its permutation and, bucketed, its batches in their order.
 * keys: scratch for one window (NULL: allocated here). */
static void new_epoch(sq_batcher *b, keyed *keys) {
  b->epoch_rng = b->rng;
  for (long i = 0; i < b->n; i++) b->perm[i] = i;
  permute(&b->rng, b->perm, b->n);
  b->epoch++;
  b->cursor = 0;
  if (!b->window) return;
  const long wlines = (long)b->window * b->B;
  b->nbatches = 0;
  for (long w0 = 0; w0 < b->n; w0 += wlines) {
    const long m = b->n - w0 < wlines ? b->n - w0 : wlines;
    for (long i = 0; i < m; i++) {
      long line = b->perm[w0 + i];
      keys[i] = (keyed){b->src_len[line], b->tgt_len[line], line};
    }
    qsort(keys, (size_t)m, sizeof *keys, by_length);
    long rows = 0;
    int32_t S = 0, T = 0;
    for (long i = 0; i < m; i++) {
      int32_t s = keys[i].s > S ? keys[i].s : S, t = keys[i].t > T ? keys[i].t : T;
      if (rows && (rows == b->B || (b->tokens && (rows + 1) * (long)(s + t) > b->tokens))) {
        rows = 0, s = keys[i].s, t = keys[i].t;
      }
      if (!rows) b->start[b->nbatches++] = w0 + i;
      rows++, S = s, T = t;
      b->perm[w0 + i] = keys[i].line;
    }
  }
  b->start[b->nbatches] = b->n;
  for (long i = 0; i < b->nbatches; i++) b->order[i] = i;
  permute(&b->rng, b->order, b->nbatches);
}

seqcl_status sq_batcher_init(sq_batcher *b, uint64_t seed) {
  b->perm = malloc(sizeof(long) * (size_t)b->n);
  if (b->window) {
    b->start = malloc(sizeof(long) * ((size_t)b->n + 1));
    b->order = malloc(sizeof(long) * (size_t)b->n);
  }
  if (!b->perm || (b->window && (!b->start || !b->order)))
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
  sq_trng_seed(&b->rng, seed ^ SHUFFLE_SALT);
  b->epoch_rng = b->rng;
  b->epoch = 0;
  b->cursor = b->n; /* the first draw starts epoch 1 */
  b->nbatches = 0;
  return SEQCL_OK;
}

static keyed *window_keys(const sq_batcher *b) {
  long m = (long)b->window * b->B;
  return malloc(sizeof(keyed) * (size_t)(m < b->n ? m : b->n));
}

void sq_batcher_restore(sq_batcher *b, const uint64_t epoch_rng[4], long epoch, long cursor) {
  memcpy(b->rng.s, epoch_rng, sizeof b->rng.s);
  b->epoch_rng = b->rng;
  if (epoch > 0) {
    keyed *keys = b->window ? window_keys(b) : NULL;
    if (b->window && !keys) { /* cannot rebuild here: the next draw does */
      b->epoch = epoch - 1;
      b->cursor = b->n;
      return;
    }
    new_epoch(b, keys); /* the same permutation (and batches) again */
    free(keys);
    b->epoch = epoch;
    b->cursor = cursor;
  } else {
    b->epoch = 0;
    b->cursor = b->n;
  }
}

int sq_batcher_next(sq_batcher *b, long *idx) {
  if (!b->window) {
    for (int r = 0; r < b->B; r++) {
      if (b->cursor == b->n) new_epoch(b, NULL);
      idx[r] = b->perm[b->cursor++];
    }
    return b->B;
  }
  if (b->cursor >= b->nbatches) {
    keyed *keys = window_keys(b);
    if (!keys) return 0;
    new_epoch(b, keys);
    free(keys);
  }
  const long k = b->order[b->cursor++];
  int rows = 0;
  for (long i = b->start[k]; i < b->start[k + 1]; i++) idx[rows++] = b->perm[i];
  return rows;
}

long sq_batcher_steps_for(const sq_batcher *b, uint64_t seed, double epochs) {
  if (!b->window) return (long)ceil(epochs * (double)b->n / (double)b->B);
  sq_batcher c = *b;
  c.perm = NULL, c.start = c.order = NULL;
  long steps = -1;
  keyed *keys = window_keys(b);
  if (keys && sq_batcher_init(&c, seed) == SEQCL_OK) {
    steps = 0;
    for (double left = epochs; left > 0; left -= 1.0) {
      new_epoch(&c, keys);
      steps += left >= 1.0 ? c.nbatches : (long)ceil(left * (double)c.nbatches);
    }
  }
  free(keys);
  sq_batcher_free(&c);
  return steps;
}

void sq_batcher_free(sq_batcher *b) {
  free(b->perm);
  free(b->start);
  free(b->order);
  b->perm = NULL, b->start = b->order = NULL;
}
