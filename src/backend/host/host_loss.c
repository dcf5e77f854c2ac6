/* Row-wise host slots: bias, embedding gather, argmax, log-softmax and the
 * cross-entropy loss. The exp sums of the softmax family are accumulated in
 * double (V can be tens of thousands; the wider sum costs nothing next to expf). */
#include <math.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/pool.h"

seqcl_status sq_host_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias) {
  (void)be;
  float *ys = sq_host_f32(y);
  const float *restrict b = sq_host_f32(bias);
  for (int r = 0; r < rows; r++) {
    float *restrict yr = ys + (size_t)r * (size_t)ld;
    for (int c = 0; c < cols; c++) yr[c] += b[c];
  }
  return SEQCL_OK;
}

seqcl_status sq_host_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                               int ld_out) {
  (void)be;
  const int32_t *id = sq_host_i32(ids);
  const float *tab = sq_host_f32(table);
  float *o = sq_host_f32(out);
  for (int n = 0; n < N; n++)
    memcpy(o + (size_t)n * (size_t)ld_out, tab + (size_t)id[n] * (size_t)D,
           (size_t)D * sizeof(float));
  return SEQCL_OK;
}

typedef struct argmax_job {
  int V, ld;
  const float *x, *b;
  int32_t *out;
} argmax_job;

static void argmax_rows(void *arg, int lo, int hi) {
  const argmax_job *j = arg;
  for (int n = lo; n < hi; n++) {
    const float *xr = j->x + (size_t)n * (size_t)j->ld;
    const float *b = j->b;
    int best = 0;
    float bestv = b ? xr[0] + b[0] : xr[0];
    /* strictly greater: the lowest index wins a tie */
    for (int v = 1; v < j->V; v++) {
      float val = b ? xr[v] + b[v] : xr[v];
      if (val > bestv) {
        bestv = val;
        best = v;
      }
    }
    j->out[n] = best;
  }
}

seqcl_status sq_host_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                            sq_ref ids) {
  (void)be;
  argmax_job j = {.V = V, .ld = ld, .x = sq_host_f32(x), .b = sq_host_f32_opt(bias),
                  .out = sq_host_i32(ids)};
  sq_pool_for(be, N, 4.0 * N * V, argmax_rows, &j); /* a compare and an add per logit */
  return SEQCL_OK;
}

/* log(sum_v exp(x_v)) of one row, max-subtracted. */
static double log_sum_exp(int V, const float *restrict x) {
  float mx = x[0];
  for (int v = 1; v < V; v++) mx = x[v] > mx ? x[v] : mx;
  double sum = 0.0;
  for (int v = 0; v < V; v++) sum += (double)expf(x[v] - mx);
  return (double)mx + log(sum);
}

seqcl_status sq_host_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y) {
  (void)be;
  const float *xs = sq_host_f32(x);
  float *ys = sq_host_f32(y);
  for (int n = 0; n < N; n++) {
    const float *xr = xs + (size_t)n * (size_t)V;
    float *yr = ys + (size_t)n * (size_t)V; /* may be xr: each element is read before written */
    const double lse = log_sum_exp(V, xr);
    for (int v = 0; v < V; v++) yr[v] = (float)((double)xr[v] - lse);
  }
  return SEQCL_OK;
}

seqcl_status sq_host_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                   sq_ref loss) {
  (void)be;
  const float *xs = sq_host_f32(x);
  const int32_t *lab = sq_host_i32(labels);
  double total = 0.0;
  int count = 0;
  for (int n = 0; n < N; n++) {
    if (lab[n] < 0) continue; /* ignored position */
    const float *xr = xs + (size_t)n * (size_t)V;
    total += log_sum_exp(V, xr) - (double)xr[lab[n]];
    count++;
  }
  sq_host_f32(loss)[0] = count ? (float)(total / count) : 0.0f;
  return SEQCL_OK;
}
