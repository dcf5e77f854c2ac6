/* The OpenCL backend's own small-GEMM kernel (gemm_small.c, kernels/gemv.cl),
 * chosen by shape and device from sq_ocl_gemm (gemm_clblast.c). */
#ifndef SQ_BACKEND_OCL_GEMM_SMALL_H
#define SQ_BACKEND_OCL_GEMM_SMALL_H

#include "backend/opencl/ocl.h"

/* 1 when gemm_small_nt can compute this product (C = alpha A B^T + beta C). */
int sq_ocl_gemm_small_supported(int ta, int tb, int M, int N, int K, int lda, size_t sa, int ldb,
                                size_t sb, int ldc, size_t sc, int batch);
/* 1 when it should (SEQCL_GEMM and the device type decide; see gemm_small.c). */
int sq_ocl_gemm_small_wanted(sq_ocl *o, int ta, int tb, int M, int N, int K, int lda, size_t sa,
                             int ldb, size_t sb, int ldc, size_t sc, int batch);
/* C = alpha A B^T + beta C on gemm_small_nt; the product must be supported. */
seqcl_status sq_ocl_gemm_small(sq_backend *be, int M, int N, int K, float alpha, sq_ref A, int lda,
                               size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C,
                               int ldc, size_t sc, int batch);

#endif
