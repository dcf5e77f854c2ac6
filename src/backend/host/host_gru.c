/* One GRU time step on the host (PyTorch's reset-after form, gates r, z, n).
 * Pointwise only: the two GEMMs that produce gi and gh ran before. The gates
 * run 16 lanes at a time with AVX-512, 8 with AVX2 (host_gru_hot.h), then 4,
 * then the rest, with the vector sigmoid/tanh of host_math.h, and rows are
 * split across the host pool. */
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* Lanes [j, j + w) of h' for one row (w <= SQ_VW); inlined with w = SQ_VW for
 * full vectors (always inlined: a call with a run-time w would copy lane by
 * lane). h is updated in place, out (optional) receives a copy; absent
 * biases load as zeros. */
static inline __attribute__((always_inline)) void gates_chunk(int H, int j, int w, const float *gi, const float *gh,
                               const float *bi, const float *bh, float *h, float *out) {
  const int wi = bi ? w : 0, wh = bh ? w : 0;
  const float *bi0 = bi ? bi + j : NULL, *bh0 = bh ? bh + j : NULL;
  sq_vf r = sq_v_sigmoid(sq_v_load(gi + j, w) + sq_v_load(bi0, wi) + sq_v_load(gh + j, w) +
                         sq_v_load(bh0, wh));
  sq_vf z = sq_v_sigmoid(sq_v_load(gi + H + j, w) + sq_v_load(bi ? bi0 + H : NULL, wi) +
                         sq_v_load(gh + H + j, w) + sq_v_load(bh ? bh0 + H : NULL, wh));
  sq_vf n = sq_v_tanh(sq_v_load(gi + 2 * H + j, w) + sq_v_load(bi ? bi0 + 2 * H : NULL, wi) +
                      r * (sq_v_load(gh + 2 * H + j, w) + sq_v_load(bh ? bh0 + 2 * H : NULL, wh)));
  /* (1 - z) n + z h, written as PyTorch's CPU and CUDA kernels do. */
  sq_vf hn = n + z * (sq_v_load(h + j, w) - n);
  sq_v_store(h + j, hn, w);
  if (out) sq_v_store(out + j, hn, w);
}

/* gates_row per width (host_gru_hot.h): 16 lanes with AVX-512, 8 with AVX2,
 * 4 otherwise. */
#define SQ_HOT_TEMPLATE "backend/host/host_gru_hot.h"
#include "backend/host/host_widths.h"

/* Rows [lo, hi); a GRU cell costs about 100 multiply-add equivalents per
 * hidden unit (two sigmoids and a tanh). */
static void gates_rows(void *arg, int lo, int hi) {
  const sq_gru_args *g = arg;
  const int H = g->H;
  const int32_t *lens = sq_host_i32_opt(g->lens);
  const float *gi = sq_host_f32(g->gi);
  const float *gh = sq_host_f32(g->gh);
  const float *bi = sq_host_f32_opt(g->b_ih);
  const float *bh = sq_host_f32_opt(g->b_hh);
  float *h = sq_host_f32(g->h);
  float *out = sq_host_f32_opt(g->out);
  for (int n = lo; n < hi; n++) {
    if (lens && g->step >= lens[n]) continue; /* this row has finished */
    /* Without lens every row is active and its time index is the step itself
     * (the fronts require lens for the reverse direction). */
    size_t t = (size_t)g->step;
    if (lens && g->reverse) t = (size_t)(lens[n] - 1 - g->step);
    SQ_HOT_PICK(gates_row)(H, gi + (size_t)n * g->gi_sn + t * g->gi_st,
                gh + (size_t)n * (size_t)g->ld_gh, bi, bh, h + (size_t)n * (size_t)H,
                out ? out + (size_t)n * g->out_sn + t * g->out_st : NULL);
  }
}

seqcl_status sq_host_gru_gates(sq_backend *be, const sq_gru_args *g) {
  (void)be;
  sq_pool_for(be, g->N, 100.0 * g->N * g->H, gates_rows, (void *)g);
  return SEQCL_OK;
}
