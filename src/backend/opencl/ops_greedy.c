/* The fused tail of a greedy step on OpenCL (kernels/greedy.cl): argmax and
 * the EOS bookkeeping in one launch instead of two. */
#include "backend/opencl/ops_internal.h"

#define GREEDY_WG 256

seqcl_status sq_ocl_argmax_greedy(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                                  sq_ref ids, sq_ref finished, int eos, sq_ref hist) {
  sq_ocl *o = sq_ocl_of(be);
  if ((size_t)N * (size_t)ld > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "argmax_greedy: %d rows of stride %d exceed the kernels' int indices", N, ld);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "greedy.cl", "", "argmax_greedy", &k));
  size_t wg = sq_ocl_wg_size(o, k, GREEDY_WG);
  int has_bias = bias.buf != NULL, has_hist = hist.buf != NULL;
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "argmax_greedy"));
  SQ_ARG(o, k, 2, ld);
  SQ_ARG(o, k, 3, V);
  SQ_TRY(sq_ocl_ref_args(o, k, 4, bias, "argmax_greedy"));
  SQ_ARG(o, k, 6, has_bias);
  SQ_TRY(sq_ocl_ref_args(o, k, 7, ids, "argmax_greedy"));
  SQ_TRY(sq_ocl_ref_args(o, k, 9, finished, "argmax_greedy"));
  SQ_ARG(o, k, 11, eos);
  SQ_TRY(sq_ocl_ref_args(o, k, 12, hist, "argmax_greedy"));
  SQ_ARG(o, k, 14, has_hist);
  SQ_TRY(sq_ocl_arg(o, k, 15, wg * sizeof(cl_float), NULL, "argmax_greedy"));
  SQ_TRY(sq_ocl_arg(o, k, 16, wg * sizeof(cl_int), NULL, "argmax_greedy"));
  size_t global = (size_t)N * wg;
  return sq_ocl_launch(o, k, 1, &global, &wg, "argmax_greedy");
}
