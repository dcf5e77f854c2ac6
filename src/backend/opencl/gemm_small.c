/* Small GEMMs of the decoder step on the device's own kernel (kernels/gemv.cl).
 *
 * Why: a decode step multiplies [M, K] by a weight [N, K]^T with M = the batch
 * (1..64). On PoCL (2 cores) CLBlast's default kernels ran these at a few
 * GFLOP/s: it pads the operands into tiles made for large matrices, and every
 * pad and transpose is a launch of its own. The product is bound by reading the
 * weight once; gemm_small_nt does that with no padding and one launch.
 *
 * Which products take this path (sq_ocl_gemm_small_wanted):
 * SEQCL_GEMM, read into the context's settings when it opened:
 *   SEQCL_GEMM=clblast  never;  SEQCL_GEMM=small  every product it supports;
 *   unset / auto        every supported product on CPU-type devices; GPUs
 *                       keep CLBlast until measured there. On PoCL (2 cores)
 *                       `seqcl bench` measured this kernel 5-30x ahead of
 *                       CLBlast's defaults at every model shape, the large
 *                       hoisted ones included (28 vs 4-5 GFLOP/s at
 *                       1280x768x128; 8-11 vs 0.3 at M = 1).
 * Supported: op(A) = A, op(B) = B^T (the nn.Linear layout), every index in int. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/gemm_small.h"
#include "backend/opencl/ops_internal.h"

#define SMALL_WG 16

enum { POLICY_UNKNOWN = 0, POLICY_AUTO_CPU, POLICY_AUTO_OTHER, POLICY_SMALL, POLICY_CLBLAST };

static int policy_of(sq_ocl *o) {
  if (o->gemm_policy != POLICY_UNKNOWN) return o->gemm_policy;
  int p;
  if (o->ctx->settings.gemm == SQ_GEMM_SMALL) {
    p = POLICY_SMALL;
  } else if (o->ctx->settings.gemm == SQ_GEMM_CLBLAST) {
    p = POLICY_CLBLAST;
  } else {
    /* the device's type, not SEQCL_KERNELS: that switch picks kernel forms only */
    p = (o->device_type & CL_DEVICE_TYPE_CPU) ? POLICY_AUTO_CPU : POLICY_AUTO_OTHER;
  }
  o->gemm_policy = p;
  return p;
}

static int fits_int(size_t v) { return v <= (size_t)INT_MAX; }

int sq_ocl_gemm_small_supported(int ta, int tb, int M, int N, int K, int lda, size_t sa, int ldb,
                                size_t sb, int ldc, size_t sc, int batch) {
  if (ta || !tb || M < 1 || N < 1 || K < 1 || batch < 1) return 0;
  /* every element index the kernel forms must fit an int stride */
  if (!fits_int(sa) || !fits_int(sb) || !fits_int(sc)) return 0;
  (void)lda;
  (void)ldb;
  (void)ldc;
  return 1;
}

int sq_ocl_gemm_small_wanted(sq_ocl *o, int ta, int tb, int M, int N, int K, int lda, size_t sa,
                             int ldb, size_t sb, int ldc, size_t sc, int batch) {
  if (!sq_ocl_gemm_small_supported(ta, tb, M, N, K, lda, sa, ldb, sb, ldc, sc, batch)) return 0;
  const unsigned off = sq_ablated(o->ctx);
  if (off & SQ_ABL_SMALL_GEMM) return 0;
  if (off & SQ_FORCE_SMALL_GEMM) return 1;
  switch (policy_of(o)) {
  case POLICY_SMALL: return 1;
  case POLICY_AUTO_CPU: return 1;
  default: return 0;
  }
}

/* Rows per work-item: enough to reuse each weight load, few enough that the
 * accumulators stay in registers. */
static int rows_per_item(int M) {
  if (M <= 1) return 1;
  if (M <= 2) return 2;
  if (M <= 16) return 4;
  return 8;
}

seqcl_status sq_ocl_gemm_small(sq_backend *be, int M, int N, int K, float alpha, sq_ref A, int lda,
                               size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C,
                               int ldc, size_t sc, int batch) {
  sq_ocl *o = sq_ocl_of(be);
  const int rm = rows_per_item(M);
  char opts[32];
  snprintf(opts, sizeof opts, "-DRM=%d", rm);
  cl_kernel gemm_small_nt;
  SQ_TRY(sq_ocl_kernel(o, "gemv.cl", opts, "gemm_small_nt", &gemm_small_nt));
  int isa = (int)sa, isb = (int)sb, isc = (int)sc;
  cl_uint i = 0;
  SQ_ARG(o, gemm_small_nt, i++, M);
  SQ_ARG(o, gemm_small_nt, i++, N);
  SQ_ARG(o, gemm_small_nt, i++, K);
  SQ_ARG(o, gemm_small_nt, i++, alpha);
  SQ_TRY(sq_ocl_ref_args(o, gemm_small_nt, i, A, "gemm_small_nt"));
  i += 2;
  SQ_ARG(o, gemm_small_nt, i++, lda);
  SQ_ARG(o, gemm_small_nt, i++, isa);
  SQ_TRY(sq_ocl_ref_args(o, gemm_small_nt, i, B, "gemm_small_nt"));
  i += 2;
  SQ_ARG(o, gemm_small_nt, i++, ldb);
  SQ_ARG(o, gemm_small_nt, i++, isb);
  SQ_ARG(o, gemm_small_nt, i++, beta);
  SQ_TRY(sq_ocl_ref_args(o, gemm_small_nt, i, C, "gemm_small_nt"));
  i += 2;
  SQ_ARG(o, gemm_small_nt, i++, ldc);
  SQ_ARG(o, gemm_small_nt, i++, isc);
  size_t wg = sq_ocl_wg_size(o, gemm_small_nt, SMALL_WG);
  size_t local[3] = {wg, 1, 1};
  size_t global[3] = {sq_round_up((size_t)N, wg), (size_t)((M + rm - 1) / rm), (size_t)batch};
  return sq_ocl_launch(o, gemm_small_nt, 3, global, local, "gemm_small_nt");
}
