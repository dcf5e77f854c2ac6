/* The softmax rules the host's attention rows share (host_attention.c for
 * decoding, host_attention_train.c for training): the NaN-aware row maximum
 * and what a row without a softmax gives. The kernels (attention.cl) use the
 * same rules. */
#ifndef SQ_BACKEND_HOST_SOFTMAX_H
#define SQ_BACKEND_HOST_SOFTMAX_H

#include <float.h>
#include <math.h>
#include <stdint.h>

/* The row maximum m after valid score x, NaN once any score is NaN (a plain
 * comparison skipped a NaN score, so a row of them gave a zero context); a
 * valid -inf counts as -FLT_MAX, so that m stays -INFINITY only for a row
 * without valid positions. The kernels (attention.cl) use the same rule. */
static inline float max_score(float m, float x) {
  if (isnan(m) || isnan(x)) return NAN;
  if (x < -FLT_MAX) x = -FLT_MAX;
  return x > m ? x : m;
}

/* A row that has valid positions but no softmax: a NaN or +inf score (m), or
 * valid scores all -inf (the sum of exp(x - m) is 0). Its weights at valid
 * positions and its context are NaN, as PyTorch's softmax gives, on every
 * device alike; the decoders then report the non-finite logits. */
static inline int no_softmax(float m, double sum) {
  return isnan(m) || m == INFINITY || (m != -INFINITY && !(sum > 0.0));
}

/* Weights of a row without softmax: NaN at the valid positions, 0 elsewhere. */
static inline void nan_row(int S, int len, const int32_t *restrict mask, float *y) {
  for (int j = 0; j < S; j++) y[j] = j < len && (!mask || mask[j]) ? NAN : 0.0f;
}

#endif
