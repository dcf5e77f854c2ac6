/* Decoding bookkeeping on the host backend: the greedy EOS freeze and an
 * in-place tanh (the decoder bridge). */
#include <math.h>

#include "backend/host/host.h"

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

seqcl_status sq_host_tanh_inplace(sq_backend *be, size_t count, sq_ref x) {
  (void)be;
  float *p = sq_host_f32(x);
  for (size_t i = 0; i < count; i++) p[i] = tanhf(p[i]);
  return SEQCL_OK;
}
