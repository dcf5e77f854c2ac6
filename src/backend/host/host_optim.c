/* The optimiser's slots on the host: the squared norm (gradient clipping),
 * scaling and the Adam step, split across the host pool where they are long. */
#include <limits.h>
#include <math.h>

#include "backend/host/host.h"
#include "backend/host/pool.h"

seqcl_status sq_host_sum_squares(sq_backend *be, size_t count, sq_ref xr, sq_ref out) {
  (void)be;
  const float *x = sq_host_f32(xr);
  double s = 0.0;
  for (size_t i = 0; i < count; i++) s += (double)x[i] * x[i];
  sq_host_f32(out)[0] = (float)s;
  return SEQCL_OK;
}

seqcl_status sq_host_scale(sq_backend *be, size_t count, sq_ref xr, float s) {
  (void)be;
  float *x = sq_host_f32(xr);
  for (size_t i = 0; i < count; i++) x[i] *= s;
  return SEQCL_OK;
}

typedef struct adam_job {
  float *p, *m, *v;
  const float *g;
  float b1, b2, eps, step_size, bc2_sqrt;
} adam_job;

static void adam_range(void *arg, int lo, int hi) {
  const adam_job *j = arg;
  float *p = j->p, *m = j->m, *v = j->v;
  const float *g = j->g;
  const float b1 = j->b1, b2 = j->b2;
  for (int i = lo; i < hi; i++) {
    m[i] = b1 * m[i] + (1.f - b1) * g[i];
    v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
    p[i] -= j->step_size * m[i] / (sqrtf(v[i]) / j->bc2_sqrt + j->eps);
  }
}

seqcl_status sq_host_adam(sq_backend *be, size_t count, sq_ref pr, sq_ref gr, sq_ref mr,
                           sq_ref vr, float b1, float b2, float eps, float step_size,
                           float bc2_sqrt) {
  (void)be;
  adam_job j = {sq_host_f32(pr), sq_host_f32(mr), sq_host_f32(vr), sq_host_f32(gr), b1, b2, eps, step_size, bc2_sqrt};
  /* elementwise: any split gives the same bits */
  for (size_t at = 0; at < count;) {
    const int n = count - at > (size_t)INT_MAX ? INT_MAX : (int)(count - at);
    adam_job part = j;
    part.p += at, part.m += at, part.v += at, part.g += at;
    sq_pool_for(be, n, 20.0 * n, adam_range, &part);
    at += (size_t)n;
  }
  return SEQCL_OK;
}
