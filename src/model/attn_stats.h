/* What an alignment matrix says about itself: the mean attention entropy over
 * valid decoder steps, and the numerical invariants of masked attention (each
 * valid step's weights sum to 1, weights at padding positions are 0, every
 * weight is finite). Counts accumulate line by line, so decode, eval, the
 * length sweep and the probe share one definition. */
#ifndef SQ_MODEL_ATTN_STATS_H
#define SQ_MODEL_ATTN_STATS_H

#include <stddef.h>

/* |sum_j alpha - 1| allowed for a valid step: 1e-5 is about 84 float32 ulps of
 * 1, above the 25-55 ulps a sequential float32 sum of 4096 softmax terms was
 * seen to reach, and far below any real masking or normalisation bug (a
 * dropped position moves the sum by its whole weight). */
#define SQ_ATTN_SUM_TOL 1e-5

typedef struct sq_attn_stats {
  size_t steps;          /* valid steps seen */
  double entropy;        /* sum over those steps of -sum_j a_j ln a_j (nats) */
  double entropy_norm;   /* sum of entropy / ln(len); a step over len 1 adds 0 */
  double worst_sum;      /* max over valid steps of |sum_j a_j - 1| */
  double worst_pad;      /* max |a_j| at padding positions j >= len (rows of valid steps) */
  size_t nonfinite;      /* non-finite weights in valid steps */
  /* where the worst sum error is (line as counted by sq_attn_stats_add, 0-based
   * step), for messages */
  size_t worst_sum_line;
  int worst_sum_step;
} sq_attn_stats;

void sq_attn_stats_init(sq_attn_stats *s);
/* Adds one line: a holds steps rows of cols weights (row stride ld >= cols);
 * positions j < len are valid, j in [len, cols) are padding. line is what the
 * worst-sum location records. */
void sq_attn_stats_add(sq_attn_stats *s, const float *a, int steps, int len, int cols, size_t ld,
                       size_t line);
/* Means over valid steps (0 with no step). */
double sq_attn_stats_mean_entropy(const sq_attn_stats *s);
double sq_attn_stats_mean_entropy_norm(const sq_attn_stats *s);
/* 1 when every invariant holds: sums within SQ_ATTN_SUM_TOL, padding exactly
 * 0, all finite. */
int sq_attn_stats_pass(const sq_attn_stats *s);

#endif
