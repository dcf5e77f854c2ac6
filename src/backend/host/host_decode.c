/* The greedy decode family on the host: the argmax of the logits and the
 * EOS bookkeeping of a greedy step. */
#include <math.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

typedef struct argmax_job {
  int V, ld;
  const float *x, *b;
  int32_t *out;
} argmax_job;

/* argmax_v (xr[v] + b[v]) as torch.argmax and decode.cl: the first NaN if
 * there is one, else the first index of the maximum; 0 for a row of -inf.
 * W lanes each keep the first index of their own maximum (strictly greater
 * replaces), so the lowest index among the lanes holding the maximum is the
 * row's first; NaN never replaces (x > m is false), so a row with a NaN is
 * searched again for its first one, which only a broken model produces. The
 * answer is an index, the same at any W: compiled per width (host_math.h,
 * SQ_HOT_BY_WIDTH), W = 16, 8 or 4. The scalar loop this replaced spent 7 %
 * of a batch-64 decode here: a compare and a branch per logit, one after the
 * other. */
#define ROW_ARGMAX_DEFINE(SUF, ATTR, VF, VI, W, P)                                         \
  ATTR static int row_argmax_##SUF(const float *xr, const float *b, int V) {               \
    VF m = (VF){0} - INFINITY;                                                             \
    VI at = (VI){0} - 1, nan = {0}, lane;                                                  \
    for (int i = 0; i < (W); i++) lane[i] = i;                                             \
    int v = 0;                                                                             \
    for (; v + (W) <= V; v += (W)) {                                                       \
      VF x = SQ_HOT_CAT(P, loadu)(xr + v);                                                 \
      if (b) x += SQ_HOT_CAT(P, loadu)(b + v);                                             \
      const VI gt = x > m;                                                                 \
      m = SQ_HOT_CAT(P, select)(gt, x, m);                                                 \
      at = (gt & (lane + v)) | (~gt & at);                                                 \
      nan |= x != x;                                                                       \
    }                                                                                      \
    int best = -1, any_nan = 0;                                                            \
    float bestv = -INFINITY;                                                               \
    for (int i = 0; i < (W); i++) {                                                        \
      any_nan |= nan[i] != 0;                                                              \
      if (at[i] >= 0 && (m[i] > bestv || (m[i] == bestv && at[i] < best))) {              \
        bestv = m[i];                                                                      \
        best = at[i];                                                                      \
      }                                                                                    \
    }                                                                                      \
    for (; v < V; v++) { /* after every lane's index: strictly greater */                  \
      const float val = b ? xr[v] + b[v] : xr[v];                                          \
      any_nan |= val != val;                                                               \
      if (val > bestv) {                                                                   \
        bestv = val;                                                                       \
        best = v;                                                                          \
      }                                                                                    \
    }                                                                                      \
    if (any_nan)                                                                           \
      for (v = 0; v < V; v++) {                                                            \
        const float val = b ? xr[v] + b[v] : xr[v];                                        \
        if (val != val) return v;                                                          \
      }                                                                                    \
    return best < 0 ? 0 : best;                                                            \
  }

SQ_HOT_WIDTHS(ROW_ARGMAX_DEFINE)

static void argmax_rows(void *arg, int lo, int hi) {
  const argmax_job *j = arg;
  for (int n = lo; n < hi; n++)
    j->out[n] = SQ_HOT_PICK(row_argmax)(j->x + (size_t)n * (size_t)j->ld, j->b, j->V);
}

seqcl_status sq_host_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                            sq_ref ids) {
  (void)be;
  argmax_job j = {.V = V, .ld = ld, .x = sq_host_f32(x), .b = sq_host_f32_opt(bias),
                  .out = sq_host_i32(ids)};
  sq_pool_for(be, N, 4.0 * N * V, argmax_rows, &j); /* a compare and an add per logit */
  return SEQCL_OK;
}


seqcl_status sq_host_greedy_update(sq_backend *be, int N, sq_ref ids, sq_ref finished, int eos,
                                   sq_ref hist) {
  (void)be;
  int32_t *id = sq_host_i32(ids);
  int32_t *fin = sq_host_i32(finished);
  int32_t *h = sq_host_i32_opt(hist);
  for (int n = 0; n < N; n++) {
    int32_t v = fin[n] ? eos : id[n];
    id[n] = v;
    if (h) h[n] = v;
    fin[n] = v == eos;
  }
  return SEQCL_OK;
}
