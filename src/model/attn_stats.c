/* Attention entropy and the masked-attention invariants (see attn_stats.h).
 * Everything is accumulated in double so that the checks measure the weights,
 * not this code's rounding. */
#include <math.h>
#include <string.h>

#include "model/attn_stats.h"

void sq_attn_stats_init(sq_attn_stats *s) { memset(s, 0, sizeof *s); }

void sq_attn_stats_add(sq_attn_stats *s, const float *a, int steps, int len, int cols, size_t ld,
                       size_t line) {
  /* ln(len) of a one-position source is 0: its only weight is 1 and its
   * entropy 0, so the normalised entropy is defined as 0 there */
  const double lognorm = len > 1 ? log((double)len) : 0.0;
  for (int t = 0; t < steps; t++) {
    const float *row = a + (size_t)t * ld;
    double sum = 0.0, h = 0.0;
    int finite = 1;
    for (int j = 0; j < cols; j++) {
      const double w = row[j];
      if (!isfinite(w)) {
        s->nonfinite++;
        finite = 0;
        continue;
      }
      if (j >= len) {
        if (fabs(w) > s->worst_pad) s->worst_pad = fabs(w);
        continue;
      }
      sum += w;
      /* 0 ln 0 = 0 (the limit); a negative weight is an invariant failure the
       * sum check catches, not an entropy term */
      if (w > 0.0) h -= w * log(w);
    }
    s->steps++;
    if (!finite) continue;
    const double err = fabs(sum - 1.0);
    if (err > s->worst_sum || s->steps == 1) {
      if (err > s->worst_sum) s->worst_sum = err;
      s->worst_sum_line = line;
      s->worst_sum_step = t;
    }
    s->entropy += h;
    if (lognorm > 0.0) s->entropy_norm += h / lognorm;
  }
}

double sq_attn_stats_mean_entropy(const sq_attn_stats *s) {
  return s->steps ? s->entropy / (double)s->steps : 0.0;
}

double sq_attn_stats_mean_entropy_norm(const sq_attn_stats *s) {
  return s->steps ? s->entropy_norm / (double)s->steps : 0.0;
}

int sq_attn_stats_pass(const sq_attn_stats *s) {
  return s->nonfinite == 0 && s->worst_sum <= SQ_ATTN_SUM_TOL && s->worst_pad == 0.0;
}
