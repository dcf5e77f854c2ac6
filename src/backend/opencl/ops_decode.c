/* The greedy decode family on OpenCL devices (kernels/decode.cl): argmax
 * (one work-group per row), the EOS bookkeeping of a greedy step, and both
 * in one launch (argmax_greedy), so the greedy loop never waits for the host. */
#include <limits.h>

#include "backend/opencl/kargs.h"

#define DECODE_FILE "decode.cl"
#define DECODE_WG 64

/* Arguments 0 to 8 of argmax and argmax_greedy: the scores x (row stride ld,
 * V columns), the optional bias (+flag) and the ids written. */
static seqcl_status set_argmax_args(sq_ocl *o, cl_kernel k, const char *name, sq_ref x, int ld,
                                    int V, sq_ref bias, sq_ref ids) {
  int has_bias = bias.buf != NULL;
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, name));
  SQ_TRY(sq_ocl_arg(o, k, 2, sizeof ld, &ld, name));
  SQ_TRY(sq_ocl_arg(o, k, 3, sizeof V, &V, name));
  SQ_TRY(sq_ocl_ref_args(o, k, 4, bias, name));
  SQ_TRY(sq_ocl_arg(o, k, 6, sizeof has_bias, &has_bias, name));
  return sq_ocl_ref_args(o, k, 7, ids, name);
}

seqcl_status sq_ocl_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                           sq_ref ids) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, DECODE_FILE, "", "argmax", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  SQ_TRY(set_argmax_args(o, k, "argmax", x, ld, V, bias, ids));
  SQ_TRY(sq_ocl_arg(o, k, 9, wg * sizeof(cl_float), NULL, "argmax"));
  SQ_TRY(sq_ocl_arg(o, k, 10, wg * sizeof(cl_int), NULL, "argmax"));
  return sq_ocl_launch_rows(o, k, (size_t)N, wg, "argmax");
}


seqcl_status sq_ocl_greedy_update(sq_backend *be, int N, sq_ref ids, sq_ref finished, int eos,
                                  sq_ref hist) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, DECODE_FILE, "", "greedy_update", &k));
  cl_mem m_ids = sq_ocl_mem(ids), m_fin = sq_ocl_mem(finished);
  cl_mem m_hist = sq_ocl_mem_or_dummy(o, hist);
  int ids_off = (int)ids.off, fin_off = (int)finished.off, hist_off = (int)hist.off;
  int has_hist = hist.buf != NULL;
  SQ_ARG(o, k, 0, N);
  SQ_ARG(o, k, 1, m_ids);
  SQ_ARG(o, k, 2, ids_off);
  SQ_ARG(o, k, 3, m_fin);
  SQ_ARG(o, k, 4, fin_off);
  SQ_ARG(o, k, 5, eos);
  SQ_ARG(o, k, 6, m_hist);
  SQ_ARG(o, k, 7, hist_off);
  SQ_ARG(o, k, 8, has_hist);
  size_t local = DECODE_WG, global = sq_round_up((size_t)N, local);
  return sq_ocl_launch(o, k, 1, &global, &local, "greedy_update");
}

seqcl_status sq_ocl_argmax_greedy(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                                  sq_ref ids, sq_ref finished, int eos, sq_ref hist) {
  sq_ocl *o = sq_ocl_of(be);
  if ((size_t)N * (size_t)ld > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "argmax_greedy: %d rows of stride %d exceed the kernels' int indices", N, ld);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, DECODE_FILE, "", "argmax_greedy", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  int has_hist = hist.buf != NULL;
  SQ_TRY(set_argmax_args(o, k, "argmax_greedy", x, ld, V, bias, ids));
  SQ_TRY(sq_ocl_ref_args(o, k, 9, finished, "argmax_greedy"));
  SQ_ARG(o, k, 11, eos);
  SQ_TRY(sq_ocl_ref_args(o, k, 12, hist, "argmax_greedy"));
  SQ_ARG(o, k, 14, has_hist);
  SQ_TRY(sq_ocl_arg(o, k, 15, wg * sizeof(cl_float), NULL, "argmax_greedy"));
  SQ_TRY(sq_ocl_arg(o, k, 16, wg * sizeof(cl_int), NULL, "argmax_greedy"));
  size_t global = (size_t)N * wg;
  return sq_ocl_launch(o, k, 1, &global, &wg, "argmax_greedy");
}
