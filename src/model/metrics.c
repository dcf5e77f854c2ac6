/* Exact match, token edit rate and corpus BLEU-4 (see metrics.h). BLEU follows
 * NLTK's corpus_bleu with its default weights exactly: clipped n-gram matches
 * and hypothesis n-gram counts are summed over the corpus, each line adding at
 * least 1 to every denominator, and r is the summed reference length. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/metrics.h"

/* One n-gram, unused slots -1, so that n-grams of one order compare as arrays. */
typedef struct gram {
  int32_t t[SQ_BLEU_N];
} gram;

static int gram_cmp(const void *a, const void *b) {
  const gram *x = a, *y = b;
  for (int i = 0; i < SQ_BLEU_N; i++)
    if (x->t[i] != y->t[i]) return x->t[i] < y->t[i] ? -1 : 1;
  return 0;
}

void sq_metrics_init(sq_metrics *m) { memset(m, 0, sizeof *m); }

void sq_metrics_free(sq_metrics *m) {
  if (!m) return;
  free(m->scratch);
  m->scratch = NULL;
  m->scratch_cap = 0;
}

/* Levenshtein distance with unit costs, one row of nr + 1 entries. */
static size_t edit_distance(const int32_t *h, size_t nh, const int32_t *r, size_t nr, size_t *row) {
  for (size_t j = 0; j <= nr; j++) row[j] = j;
  for (size_t i = 1; i <= nh; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nr; j++) {
      size_t up = row[j];
      size_t best = diag + (h[i - 1] != r[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nr];
}

/* The sorted n-grams of order n of s (count = len - n + 1, or 0). */
static size_t grams_of(const int32_t *s, size_t len, int n, gram *out) {
  if (len < (size_t)n) return 0;
  size_t count = len - (size_t)n + 1;
  for (size_t i = 0; i < count; i++) {
    for (int k = 0; k < SQ_BLEU_N; k++) out[i].t[k] = k < n ? s[i + (size_t)k] : -1;
  }
  qsort(out, count, sizeof *out, gram_cmp);
  return count;
}

/* Sum over distinct n-grams of min(count in hyp, count in ref), both sorted. */
static size_t clipped_matches(const gram *h, size_t nh, const gram *r, size_t nr) {
  size_t i = 0, j = 0, matches = 0;
  while (i < nh && j < nr) {
    int c = gram_cmp(&h[i], &r[j]);
    if (c < 0) {
      i++;
    } else if (c > 0) {
      j++;
    } else {
      matches++;
      i++;
      j++;
    }
  }
  return matches;
}

seqcl_status sq_metrics_add(sq_metrics *m, const int32_t *hyp, size_t nh, const int32_t *ref,
                            size_t nr) {
  if (!m || (nh && !hyp) || (nr && !ref))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_metrics_add: NULL argument");
  /* scratch: the edit-distance row, then the hypothesis and reference n-grams */
  size_t row_bytes = (nr + 1) * sizeof(size_t);
  row_bytes = (row_bytes + sizeof(gram) - 1) / sizeof(gram) * sizeof(gram);
  size_t need = row_bytes + (nh + nr) * sizeof(gram);
  if (need > m->scratch_cap) {
    void *p = realloc(m->scratch, need);
    if (!p)
      return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "metrics: out of host memory (%zu bytes)", need);
    m->scratch = p;
    m->scratch_cap = need;
  }
  size_t *row = m->scratch;
  gram *hg = (gram *)((char *)m->scratch + row_bytes), *rg = hg + nh;

  m->lines++;
  m->exact += nh == nr && (nh == 0 || memcmp(hyp, ref, nh * sizeof *hyp) == 0);
  m->edits += edit_distance(hyp, nh, ref, nr, row);
  m->hyp_tokens += nh;
  m->ref_tokens += nr;
  for (int n = 1; n <= SQ_BLEU_N; n++) {
    size_t a = grams_of(hyp, nh, n, hg), b = grams_of(ref, nr, n, rg);
    m->match[n - 1] += clipped_matches(hg, a, rg, b);
    m->total[n - 1] += a ? a : 1;
  }
  return SEQCL_OK;
}

double sq_metrics_exact(const sq_metrics *m) {
  return m->lines ? 100.0 * (double)m->exact / (double)m->lines : 0.0;
}

double sq_metrics_ter(const sq_metrics *m) {
  return m->ref_tokens ? 100.0 * (double)m->edits / (double)m->ref_tokens : NAN;
}

double sq_metrics_brevity(const sq_metrics *m) {
  if (m->hyp_tokens == 0) return 0.0;
  if (m->hyp_tokens > m->ref_tokens) return 1.0;
  return exp(1.0 - (double)m->ref_tokens / (double)m->hyp_tokens);
}

double sq_metrics_bleu(const sq_metrics *m) {
  double log_sum = 0.0;
  for (int n = 0; n < SQ_BLEU_N; n++) {
    /* NLTK returns 0 without unigram matches and about 1e-75 for a zero
     * higher-order precision (it takes the log of the smallest double). */
    if (m->match[n] == 0 || m->total[n] == 0) return 0.0;
    log_sum += log((double)m->match[n] / (double)m->total[n]);
  }
  return 100.0 * sq_metrics_brevity(m) * exp(log_sum / SQ_BLEU_N);
}
