/* Slots of the OpenCL backend table implemented in opencl_backend.c,
 * gemm_clblast.c and ops_misc.c, plus the argument helpers they share. */
#ifndef SQ_BACKEND_OCL_OPS_INTERNAL_H
#define SQ_BACKEND_OCL_OPS_INTERNAL_H

#include <limits.h>

#include "backend/opencl/ocl.h"
#include "core/error.h"

seqcl_status sq_ocl_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                         sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta,
                         sq_ref C, int ldc, size_t sc, int batch);

seqcl_status sq_ocl_fill_bits(sq_backend *be, sq_ref dst, size_t count, uint32_t bits);
seqcl_status sq_ocl_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias);
seqcl_status sq_ocl_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                              int ld_out);
seqcl_status sq_ocl_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                           sq_ref ids);
seqcl_status sq_ocl_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y);
seqcl_status sq_ocl_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                  sq_ref loss);

/* Sets arguments i (the cl_mem, or the dummy when r is absent) and i + 1 (the
 * int element offset), following the convention of ocl.h. */
static inline seqcl_status sq_ocl_ref_args(sq_ocl *o, cl_kernel k, cl_uint i, sq_ref r,
                                           const char *kernel_name) {
  cl_mem m = sq_ocl_mem_or_dummy(o, r);
  if (r.off > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "%s: element offset %zu does not fit the kernels' int offsets", kernel_name,
                   r.off);
  int off = r.buf ? (int)r.off : 0;
  SQ_TRY(sq_ocl_arg(o, k, i, sizeof m, &m, kernel_name));
  return sq_ocl_arg(o, k, i + 1, sizeof off, &off, kernel_name);
}

#endif
