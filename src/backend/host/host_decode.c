/* The greedy decode family on the host: the argmax of the logits and the
 * EOS bookkeeping of a greedy step. */
#include "backend/host/host.h"
#include "backend/host/pool.h"

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
