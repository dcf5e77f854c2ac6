/* The loss family on the host: log-softmax, the cross-entropy loss and its
 * backward. The exp sums are accumulated in double (V can be tens of
 * thousands; the wider sum costs nothing next to expf). */
#include <math.h>
#include <string.h>

#include "backend/host/host.h"

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

seqcl_status sq_host_cross_entropy_bwd(sq_backend *be, int N, int V, sq_ref xr, sq_ref lr,
                                        float scale, sq_ref dxr) {
  (void)be;
  const float *x = sq_host_f32(xr);
  const int32_t *labels = sq_host_i32(lr);
  float *dx = sq_host_f32(dxr);
  for (int n = 0; n < N; n++) {
    const float *row = x + (size_t)n * V;
    float *d = dx + (size_t)n * V;
    if (labels[n] < 0) {
      memset(d, 0, sizeof(float) * (size_t)V);
      continue;
    }
    float mx = row[0];
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
      d[v] = expf(row[v] - mx);
      sum += d[v];
    }
    float inv = (float)(scale / sum);
    for (int v = 0; v < V; v++) d[v] *= inv;
    d[labels[n]] -= scale;
  }
  return SEQCL_OK;
}

