/* Attention of training on the host: the forward pass that keeps its
 * activations (attn_fwd) and the backward (attn_bwd), rows split across the
 * host pool. The inner loops run 16 lanes at a time (compiled per vector
 * width, host_attention_train_hot.h), with the vector tanh of host_math.h, so the
 * additive energies and the u they keep are the same bits as decoding's
 * (host_attention.c, additive_energies: one float partial sum per lane, the
 * lanes added in order). Accumulation:
 *  - dot-type energies and dalpha_j = dc . h_j: 16 float partial sums, then
 *    the lanes in order (inside the He-term dot product bound);
 *  - the softmax denominator and sum_j alpha_j dalpha_j in double;
 *  - dv and dbv (shared by every row) are summed per row into a buffer of
 *    their own, then the rows are added in row order after the split, so the
 *    bits do not depend on how many threads ran. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/host_softmax.h"
#include "backend/host/pool.h"
#include "core/error.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* Lanes of a 16-lane step starting at k of n: 16, or what is left. */
static inline __attribute__((always_inline)) int width(int k, int n) {
  return n - k < 16 ? n - k : 16;
}

/* The jobs of the forward and backward rows (host_attention_train_hot.h). */
typedef struct attn_fwd_job {
  const sq_attn_args *a;
  sq_ref u, c, alpha;
  int ld_c;
} attn_fwd_job;

static int valid_at(const int32_t *mask, int n, int S, int j) {
  return !mask || mask[(size_t)n * S + j];
}

typedef struct attn_bwd_job {
  const sq_attn_args *a;
  sq_ref alpha, u, dc, dqp, dkeys, dpkeys;
  int ld_dc, ld_dqp;
  float *dv_rows; /* additive: [N, A + 1], row n's share of dv and then of dbv */
} attn_bwd_job;

/* dalpha for the first DALPHA_KEPT positions of a row is kept; longer rows
 * compute the rest again. */
enum { DALPHA_KEPT = 1024 };

/* The rows per width (host_attention_train_hot.h): 16 lanes with AVX-512,
 * two 8-lane halves with AVX2, four 4-lane quarters otherwise. */
#define SQ_HOT_TEMPLATE "backend/host/host_attention_train_hot.h"
#include "backend/host/host_widths.h"

static void attn_fwd_rows(void *arg, int lo, int hi) {
  for (int n = lo; n < hi; n++) SQ_HOT_PICK(attn_fwd_row)(arg, n);
}

seqcl_status sq_host_attn_fwd(sq_backend *be, const sq_attn_args *a, sq_ref ur, sq_ref cr,
                              int ld_c, sq_ref alphar) {
  attn_fwd_job job = {a, ur, cr, alphar, ld_c};
  const double per_pos = a->kind == SQ_SCORE_ADDITIVE ? 20.0 * a->A + a->He : 2.0 * a->He;
  sq_pool_for(be, a->N, (double)a->N * a->S * per_pos, attn_fwd_rows, &job);
  return SEQCL_OK;
}

static void attn_bwd_rows(void *arg, int lo, int hi) {
  for (int n = lo; n < hi; n++) SQ_HOT_PICK(attn_bwd_row)(arg, n);
}

seqcl_status sq_host_attn_bwd(sq_backend *be, const sq_attn_args *a, sq_ref alphar, sq_ref ur,
                              sq_ref dcr, int ld_dc, sq_ref dqpr, int ld_dqp, sq_ref dkeysr,
                              sq_ref dpkeysr, sq_ref dvr, sq_ref dbvr) {
  const int N = a->N, A = a->A, additive = a->kind == SQ_SCORE_ADDITIVE;
  attn_bwd_job job = {.a = a, .alpha = alphar, .u = ur, .dc = dcr, .dqp = dqpr, .dkeys = dkeysr,
                      .dpkeys = dpkeysr, .ld_dc = ld_dc, .ld_dqp = ld_dqp};
  if (additive && !(job.dv_rows = calloc((size_t)N * (size_t)(A + 1), sizeof(float))))
    return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "attn_bwd (host): no memory for the per-row energy gradients of %d rows", N);
  const double per_pos = 4.0 * a->He + (additive ? 30.0 * A : 2.0 * a->He);
  sq_pool_for(be, N, (double)N * a->S * per_pos, attn_bwd_rows, &job);
  if (!additive) return SEQCL_OK;
  float *dv = sq_host_f32(dvr), *dbv = sq_host_f32_opt(dbvr);
  for (int n = 0; n < N; n++) {
    const float *row = job.dv_rows + (size_t)n * (A + 1);
    for (int k = 0; k < A; k++) dv[k] += row[k];
    if (dbv) dbv[0] += row[A];
  }
  free(job.dv_rows);
  return SEQCL_OK;
}
