/* The OpenCL backend's own small-GEMM kernels (gemm_small.c: kernels/gemv.cl
 * and kernels/gemm_lanes.cl), chosen by shape and device from sq_ocl_gemm
 * (gemm_clblast.c), by measurement on devices other than CPUs
 * (gemm_policy.c). */
#ifndef SQ_BACKEND_OCL_GEMM_SMALL_H
#define SQ_BACKEND_OCL_GEMM_SMALL_H

#include "backend/opencl/ocl.h"

/* 1 when gemm_small_nt can compute this product (C = alpha A B^T + beta C). */
int sq_ocl_gemm_small_supported(int ta, int tb, int M, int N, int K, int lda, size_t sa, int ldb,
                                size_t sb, int ldc, size_t sc, int batch);
/* 1 when it should (SEQCL_GEMM, the device type and the measurement decide;
 * see gemm_small.c). */
int sq_ocl_gemm_small_wanted(sq_backend *be, int ta, int tb, int M, int N, int K, int lda, size_t sa,
                             int ldb, size_t sb, int ldc, size_t sc, int batch);
/* C = alpha A B^T + beta C on gemm_small_nt; the product must be supported. */
seqcl_status sq_ocl_gemm_small(sq_backend *be, int M, int N, int K, float alpha, sq_ref A, int lda,
                               size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C,
                               int ldc, size_t sc, int batch);

/* The same product on CLBlast, whatever the policy. */
seqcl_status sq_ocl_gemm_clblast(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                                 sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb,
                                 float beta, sq_ref C, int ldc, size_t sc, int batch);

/* Products with M up to this many rows are the decode step's (gemm_policy.c). */
#define SQ_GEMM_DECODE_MAX_M 64
/* 1 when the measurement on this device found the own kernel faster than
 * CLBlast for M rows (M <= SQ_GEMM_DECODE_MAX_M; 0 above). Measured at the
 * first call, kept in the program cache folder and read back by later
 * contexts; a measurement that fails leaves CLBlast in charge. */
int sq_ocl_gemm_small_measured(sq_backend *be, int M);
/* Where that choice is kept for this context's device; 0 when the disk cache
 * is off or has no usable folder. */
int sq_ocl_gemm_policy_path(sq_backend *be, char *buf, size_t cap);

#endif
