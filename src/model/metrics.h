/* Accuracy of produced token sequences against references: exact match, token
 * edit rate and corpus BLEU-4. Counts are accumulated line by line, so a
 * caller (the eval command, validation during training) can feed lines as it
 * produces them and read the metrics at any point. */
#ifndef SQ_MODEL_METRICS_H
#define SQ_MODEL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <seqcl/seqcl.h>

#define SQ_BLEU_N 4

typedef struct sq_metrics {
  size_t lines;
  size_t exact;                 /* lines whose hypothesis equals the reference */
  size_t edits;                 /* Levenshtein distance over tokens, summed */
  size_t hyp_tokens, ref_tokens;
  /* corpus BLEU: clipped n-gram matches and hypothesis n-gram counts, n = 1..4;
   * each line counts at least 1 in every denominator (NLTK's rule). */
  size_t match[SQ_BLEU_N], total[SQ_BLEU_N];
  /* private scratch, grown as needed */
  void *scratch;
  size_t scratch_cap;
} sq_metrics;

void sq_metrics_init(sq_metrics *m);
void sq_metrics_free(sq_metrics *m); /* frees the scratch; the counts stay */
/* Adds one line: hyp[0..nh) against ref[0..nr). Fails only when host memory
 * runs out (SEQCL_ERR_OUT_OF_MEMORY). */
seqcl_status sq_metrics_add(sq_metrics *m, const int32_t *hyp, size_t nh, const int32_t *ref,
                            size_t nr);

/* Percent of lines matched exactly (0 with no lines). 100 minus it is the word
 * error rate of grapheme-to-phoneme work. */
double sq_metrics_exact(const sq_metrics *m);
/* Token edit rate in percent: edits / reference tokens (the phoneme error rate
 * of G2P); NAN when the references hold no token. */
double sq_metrics_ter(const sq_metrics *m);
/* Corpus BLEU-4, 0..100: 100 * BP * exp(mean log p_n), no smoothing; 0 when any
 * p_n is 0 or there is no hypothesis token; BP = exp(1 - r/c) when c <= r. */
double sq_metrics_bleu(const sq_metrics *m);
/* The brevity penalty of sq_metrics_bleu (0 with no hypothesis token). */
double sq_metrics_brevity(const sq_metrics *m);

#endif
