/* Decoding bookkeeping on OpenCL devices (kernels/decode.cl). */
#include <limits.h>

#include "backend/opencl/ocl.h"
#include "core/error.h"

#define DECODE_WG 64

seqcl_status sq_ocl_greedy_update(sq_backend *be, int N, sq_ref ids, sq_ref finished, int eos,
                                  sq_ref hist) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "decode.cl", "", "greedy_update", &k));
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

seqcl_status sq_ocl_tanh_inplace(sq_backend *be, size_t count, sq_ref x) {
  sq_ocl *o = sq_ocl_of(be);
  if (count > INT_MAX)
    return sq_fail(be->ctx, SEQCL_ERR_INVALID_ARGUMENT, "tanh_inplace: %zu elements is too many",
                   count);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "decode.cl", "", "tanh_inplace", &k));
  cl_mem m_x = sq_ocl_mem(x);
  int n = (int)count, x_off = (int)x.off;
  SQ_ARG(o, k, 0, n);
  SQ_ARG(o, k, 1, m_x);
  SQ_ARG(o, k, 2, x_off);
  size_t local = DECODE_WG, global = sq_round_up(count, local);
  return sq_ocl_launch(o, k, 1, &global, &local, "tanh_inplace");
}
