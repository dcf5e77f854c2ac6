/* Small GEMMs of the decoder step on the device's own kernels.
 *
 * Why: a decode step multiplies [M, K] by a weight [N, K]^T with M = the batch
 * (1..64). On PoCL (2 cores) CLBlast's default kernels ran these at a few
 * GFLOP/s: it pads the operands into tiles made for large matrices, and every
 * pad and transpose is a launch of its own. The product is bound by reading the
 * weight once; the own kernels do that with no padding and one launch.
 *
 * Two forms, picked like the other kernel forms (o->cpu_device: the device
 * type, or SEQCL_KERNELS=cpu|gpu): gemm_small_nt (kernels/gemv.cl) gives one
 * work-item a K-long row, which suits a CPU core; gemm_lanes_nt
 * (kernels/gemm_lanes.cl) spreads a row over lanes along K with coalesced
 * loads and a work-group reduction, which suits a GPU.
 *
 * Which products take this path (sq_ocl_gemm_small_wanted):
 * SEQCL_GEMM, read into the context's settings when it opened:
 *   SEQCL_GEMM=clblast  never;  SEQCL_GEMM=small  every product it supports;
 *   SEQCL_GEMM=measured the measured choice (gemm_policy.c) on any device;
 *   unset / auto        every supported product on CPU-type devices and
 *                       on Oclgrind (a simulator); on other devices the
 *                       products with M <= 64, wherever the
 *                       measurement at first use (gemm_policy.c, kept in the
 *                       program cache folder) found the own kernel faster.
 *                       On PoCL (2 cores) `seqcl bench` measured
 *                       gemm_small_nt 5-30x ahead of CLBlast's defaults at
 *                       every model shape, the large hoisted ones included
 *                       (28 vs 4-5 GFLOP/s at 1280x768x128; 8-11 vs 0.3 at
 *                       M = 1).
 * Supported: op(A) = A, op(B) = B^T (the nn.Linear layout), every index in int. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/gemm_small.h"
#include "backend/opencl/ops_internal.h"

#define SMALL_WG 16

enum {
  POLICY_UNKNOWN = 0,
  POLICY_AUTO_CPU,
  POLICY_AUTO_OTHER,
  POLICY_SMALL,
  POLICY_CLBLAST,
  POLICY_MEASURED
};

static int policy_of(sq_ocl *o) {
  if (o->gemm_policy != POLICY_UNKNOWN) return o->gemm_policy;
  int p;
  if (o->ctx->settings.gemm == SQ_GEMM_SMALL) {
    p = POLICY_SMALL;
  } else if (o->ctx->settings.gemm == SQ_GEMM_CLBLAST) {
    p = POLICY_CLBLAST;
  } else if (o->ctx->settings.gemm == SQ_GEMM_MEASURED) {
    p = POLICY_MEASURED;
  } else {
    /* the device's type, not SEQCL_KERNELS: that switch picks kernel forms only */
    const int cpu_only = (o->device_type & CL_DEVICE_TYPE_CPU) &&
                         !(o->device_type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR));
    p = cpu_only ? POLICY_AUTO_CPU : POLICY_AUTO_OTHER;
    /* a simulator's timings say nothing about hardware, and measuring there
     * takes minutes: Oclgrind (a GPU-type device) runs the own kernels, which
     * is what it is there to check */
    if (p == POLICY_AUTO_OTHER && strstr(o->ctx->info.platform, "Oclgrind")) p = POLICY_SMALL;
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

int sq_ocl_gemm_small_wanted(sq_backend *be, int ta, int tb, int M, int N, int K, int lda, size_t sa,
                             int ldb, size_t sb, int ldc, size_t sc, int batch) {
  sq_ocl *o = sq_ocl_of(be);
  if (!sq_ocl_gemm_small_supported(ta, tb, M, N, K, lda, sa, ldb, sb, ldc, sc, batch)) return 0;
  const unsigned off = sq_ablated(o->ctx);
  if (off & SQ_ABL_SMALL_GEMM) return 0;
  if (off & SQ_FORCE_SMALL_GEMM) return 1;
  switch (policy_of(o)) {
  case POLICY_SMALL: return 1;
  case POLICY_AUTO_CPU: return 1;
  case POLICY_AUTO_OTHER:
  case POLICY_MEASURED: return sq_ocl_gemm_small_measured(be, M);
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

/* One matrix's four arguments from *i: its buffer and offset, its leading
 * dimension and its batch stride. */
static seqcl_status set_matrix_args(sq_ocl *o, cl_kernel k, const char *name, cl_uint *i,
                                    sq_ref X, int ld, size_t stride) {
  const int is = (int)stride;
  SQ_TRY(sq_ocl_ref_args(o, k, *i, X, name));
  *i += 2;
  SQ_TRY(sq_ocl_arg(o, k, (*i)++, sizeof ld, &ld, name));
  return sq_ocl_arg(o, k, (*i)++, sizeof is, &is, name);
}

/* The arguments both kernels share, from index 0: M, N, K, alpha, A (+off),
 * lda, sa, B (+off), ldb, sb, beta, C (+off), ldc, sc. */
static seqcl_status set_args(sq_ocl *o, cl_kernel k, const char *name, int M, int N, int K,
                             float alpha, sq_ref A, int lda, size_t sa, sq_ref B, int ldb,
                             size_t sb, float beta, sq_ref C, int ldc, size_t sc, cl_uint *next) {
  cl_uint i = 0;
  SQ_TRY(sq_ocl_arg(o, k, i++, sizeof M, &M, name));
  SQ_TRY(sq_ocl_arg(o, k, i++, sizeof N, &N, name));
  SQ_TRY(sq_ocl_arg(o, k, i++, sizeof K, &K, name));
  SQ_TRY(sq_ocl_arg(o, k, i++, sizeof alpha, &alpha, name));
  SQ_TRY(set_matrix_args(o, k, name, &i, A, lda, sa));
  SQ_TRY(set_matrix_args(o, k, name, &i, B, ldb, sb));
  SQ_TRY(sq_ocl_arg(o, k, i++, sizeof beta, &beta, name));
  SQ_TRY(set_matrix_args(o, k, name, &i, C, ldc, sc));
  *next = i;
  return SEQCL_OK;
}

/* The CPU form: a work-item per (column, row block). */
static seqcl_status gemm_rows(sq_ocl *o, int M, int N, int K, float alpha, sq_ref A, int lda,
                              size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C,
                              int ldc, size_t sc, int batch) {
  const int rm = rows_per_item(M);
  char opts[32];
  snprintf(opts, sizeof opts, "-DRM=%d", rm);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "gemv.cl", opts, "gemm_small_nt", &k));
  cl_uint i;
  SQ_TRY(set_args(o, k, "gemm_small_nt", M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc,
                  sc, &i));
  size_t wg = sq_ocl_wg_size(o, k, SMALL_WG);
  size_t local[3] = {wg, 1, 1};
  size_t global[3] = {sq_round_up((size_t)N, wg), (size_t)((M + rm - 1) / rm), (size_t)batch};
  return sq_ocl_launch(o, k, 3, global, local, "gemm_small_nt");
}

/* Lanes along K per column and columns per work-group of the GPU form: 32
 * lanes of float4 loads read 512 consecutive bytes of a weight row per step
 * (a full transaction on every GPU), 4 columns make a group of 128. Devices
 * whose groups are smaller get fewer columns, then fewer lanes. */
#define LANES_WANT 32
#define COLUMNS_WANT 4

/* The GPU form: lanes along K, a work-group tree per row sum. */
static seqcl_status gemm_lanes(sq_ocl *o, int M, int N, int K, float alpha, sq_ref A, int lda,
                               size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C,
                               int ldc, size_t sc, int batch) {
  const int rm = rows_per_item(M);
  size_t lanes = LANES_WANT, cols = COLUMNS_WANT;
  while (cols > 1 && lanes * cols > o->max_wg) cols /= 2;
  while (lanes > 8 && lanes * cols > o->max_wg) lanes /= 2;
  char opts[64];
  snprintf(opts, sizeof opts, "-DRM=%d -DLK=%zu -DCPG=%zu", rm, lanes, cols);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "gemm_lanes.cl", opts, "gemm_lanes_nt", &k));
  cl_uint i;
  SQ_TRY(set_args(o, k, "gemm_lanes_nt", M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc,
                  sc, &i));
  (void)i;
  const size_t row_blocks = (size_t)((M + rm - 1) / rm);
  size_t local[3] = {lanes, cols, 1};
  size_t global[3] = {lanes * row_blocks, sq_round_up((size_t)N, cols), (size_t)batch};
  return sq_ocl_launch(o, k, 3, global, local, "gemm_lanes_nt");
}

seqcl_status sq_ocl_gemm_small(sq_backend *be, int M, int N, int K, float alpha, sq_ref A, int lda,
                               size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C,
                               int ldc, size_t sc, int batch) {
  sq_ocl *o = sq_ocl_of(be);
  if (o->cpu_device)
    return gemm_rows(o, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  return gemm_lanes(o, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
