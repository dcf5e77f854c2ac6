/* GEMM through CLBlast on the backend's queue. CLBlast compiles its kernels on
 * first use in each process (seconds on PoCL) and keeps them in memory. */
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/opencl/clblast_lib.h"
#include "backend/opencl/clblast_params.h"
#include "backend/opencl/gemm_small.h"
#include "backend/opencl/ops_internal.h"
#include "core/fault.h"

/* CLBlast's own codes; its others reuse OpenCL's numbers. */
static const char *clblast_name(CLBlastStatusCode s) {
  switch (s) {
#define N_(code) \
  case code:     \
    return #code;
    N_(CLBlastNotImplemented)
    N_(CLBlastInvalidMatrixA)
    N_(CLBlastInvalidMatrixB)
    N_(CLBlastInvalidMatrixC)
    N_(CLBlastInvalidVectorX)
    N_(CLBlastInvalidVectorY)
    N_(CLBlastInvalidDimension)
    N_(CLBlastInvalidLeadDimA)
    N_(CLBlastInvalidLeadDimB)
    N_(CLBlastInvalidLeadDimC)
    N_(CLBlastInvalidIncrementX)
    N_(CLBlastInvalidIncrementY)
    N_(CLBlastInsufficientMemoryA)
    N_(CLBlastInsufficientMemoryB)
    N_(CLBlastInsufficientMemoryC)
    N_(CLBlastInsufficientMemoryX)
    N_(CLBlastInsufficientMemoryY)
    N_(CLBlastInsufficientMemoryTemp)
    N_(CLBlastInvalidBatchCount)
    N_(CLBlastInvalidOverrideKernel)
    N_(CLBlastMissingOverrideParameter)
    N_(CLBlastInvalidLocalMemUsage)
    N_(CLBlastNoHalfPrecision)
    N_(CLBlastNoDoublePrecision)
    N_(CLBlastInvalidVectorScalar)
    N_(CLBlastInsufficientMemoryScalar)
    N_(CLBlastDatabaseError)
    N_(CLBlastUnknownError)
    N_(CLBlastUnexpectedError)
#undef N_
  default:
    return sq_cl_error_name((cl_int)s);
  }
}

static seqcl_status clblast_status(sq_ocl *o, CLBlastStatusCode s, const char *what) {
  if (s == CLBlastSuccess) return SEQCL_OK;
  seqcl_status st;
  switch (s) {
  case CLBlastOpenCLOutOfResources: /* a launch, not memory: as sq_ocl_check says */
    return sq_ocl_check(o, CL_OUT_OF_RESOURCES, what);
  case CLBlastTempBufferAllocFailure:
  case CLBlastOpenCLOutOfHostMemory:
  case CLBlastInsufficientMemoryTemp:
    st = SEQCL_ERR_DEVICE_OUT_OF_MEMORY;
    break;
  case CLBlastOpenCLBuildProgramFailure:
    st = SEQCL_ERR_BUILD;
    break;
  case CLBlastNotImplemented:
  case CLBlastInvalidLocalMemUsage:
  case CLBlastDatabaseError:
    st = SEQCL_ERR_UNSUPPORTED;
    break;
  case CLBlastInvalidDimension:
  case CLBlastInvalidLeadDimA:
  case CLBlastInvalidLeadDimB:
  case CLBlastInvalidLeadDimC:
  case CLBlastInsufficientMemoryA:
  case CLBlastInsufficientMemoryB:
  case CLBlastInsufficientMemoryC:
  case CLBlastInvalidBatchCount:
    st = SEQCL_ERR_INVALID_ARGUMENT;
    break;
  default:
    st = SEQCL_ERR_OPENCL;
    break;
  }
  return sq_fail(o->ctx, st, "%s: %s (%d) (device %s, %s)", what, clblast_name(s), (int)s,
                 o->ctx->info.selector, o->ctx->info.name);
}

/* SEQCL_FAULT_GEMM (core/fault.h): a NaN in C[0] when this path is to be broken. */
static seqcl_status break_for_test(sq_backend *be, const char *path, sq_ref C) {
  if (!sq_fault_gemm(path)) return SEQCL_OK;
  const float nan = NAN;
  uint32_t bits;
  memcpy(&bits, &nan, sizeof bits);
  return sq_ocl_fill_bits(be, C, 1, bits);
}

seqcl_status sq_ocl_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                         sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta,
                         sq_ref C, int ldc, size_t sc, int batch) {
  sq_ocl *o = sq_ocl_of(be);
  if (M <= 0 || N <= 0 || K <= 0 || batch <= 0)
    return sq_fail(o->ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "gemm: M=%d N=%d K=%d batch=%d must all be >= 1", M, N, K, batch);
  /* decoder-step shapes: the device's own kernel where it wins (gemm_small.c) */
  if (sq_ocl_gemm_small_wanted(be, ta, tb, M, N, K, lda, sa, ldb, sb, ldc, sc, batch)) {
    SQ_TRY(sq_ocl_gemm_small(be, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch));
    return break_for_test(be, "small", C);
  }
  return sq_ocl_gemm_clblast(be, ta, tb, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                             batch);
}

seqcl_status sq_ocl_gemm_clblast(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                                 sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb,
                                 float beta, sq_ref C, int ldc, size_t sc, int batch) {
  sq_ocl *o = sq_ocl_of(be);
  o->n_blas_calls++;
  o->used_clblast = 1;
  CLBlastTranspose opa = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
  CLBlastTranspose opb = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
  char what[160];
  snprintf(what, sizeof what, "CLBlast gemm (M=%d N=%d K=%d%s%s, batch %d)", M, N, K,
           ta ? " A^T" : "", tb ? " B^T" : "", batch);
  sq_ocl_note_work(o, what);
  const sq_clblast *lib = sq_clblast_get(NULL); /* loaded when the device opened */
  CLBlastStatusCode s;
  if (batch == 1) {
    s = lib->sgemm(CLBlastLayoutRowMajor, opa, opb, (size_t)M, (size_t)N, (size_t)K, alpha,
                     sq_ocl_mem(A), A.off, (size_t)lda, sq_ocl_mem(B), B.off, (size_t)ldb, beta,
                     sq_ocl_mem(C), C.off, (size_t)ldc, &o->queue, NULL);
  } else {
    s = lib->sgemm_strided_batched(CLBlastLayoutRowMajor, opa, opb, (size_t)M, (size_t)N, (size_t)K,
                                   alpha, sq_ocl_mem(A), A.off, (size_t)lda, sa, sq_ocl_mem(B),
                                   B.off, (size_t)ldb, sb, beta, sq_ocl_mem(C), C.off, (size_t)ldc,
                                   sc, (size_t)batch, &o->queue, NULL);
  }
  SQ_TRY(clblast_status(o, s, what));
  if (batch > 1) return break_for_test(be, "batched", C);
  if (!sq_fault_gemm("direct") && !sq_fault_gemm("indirect")) return SEQCL_OK;
  size_t side = 0;
  SQ_TRY(sq_ocl_gemm_paths(be, -1, &side));
  const unsigned long long mnk = (unsigned long long)M * (unsigned long long)N * (unsigned long long)K;
  const unsigned long long t = o->clblast_forced ? 0 : side;
  if (!o->clblast_forced && !t) return SEQCL_OK; /* the path is not known: nothing to break */
  return break_for_test(be, mnk >= t * t * t ? "indirect" : "direct", C);
}

seqcl_status sq_ocl_gemm_paths(sq_backend *be, int force, size_t *side) {
  sq_ocl *o = sq_ocl_of(be);
  if (!o->clblast_indirect) o->clblast_indirect = sq_clblast_min_indirect(o->device);
  *side = o->clblast_indirect;
  if (force < 0) return SEQCL_OK;
  if (!o->clblast_indirect) /* its own value unknown: it could not be restored */
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "CLBlast's GEMM path threshold is unknown on %s (%s)", o->ctx->info.selector,
                   o->ctx->info.name);
  /* 0: m*n*k < 0 never holds, so every product takes the indirect path. The
   * override is CLBlast's, process-wide for the device: it moves products
   * between two correct kernels, never changes what is computed. */
  const char *names[1] = {"XGEMM_MIN_INDIRECT_SIZE"};
  const size_t values[1] = {force ? 0 : o->clblast_indirect};
  SQ_TRY(clblast_status(o,
                        sq_clblast_get(NULL)->override_parameters(
                            o->device, "GemmRoutine", CLBlastPrecisionSingle, 1, names, values),
                        "CLBlastOverrideParameters(GemmRoutine)"));
  o->clblast_forced = force != 0;
  return SEQCL_OK;
}

void sq_ocl_clblast_forget(sq_ocl *o) {
  if (!o->used_clblast) return;
  /* CLBlast keeps every program it built, for every context, in a process-wide
   * cache that holds the context alive until the process exits; on Oclgrind
   * 21.10 that last release, from a static destructor after the runtime's
   * own teardown, corrupted the heap (exit status 134). Emptying the cache
   * while the context is still open releases them in order; a context still
   * open elsewhere only rebuilds its CLBlast kernels on its next call. */
  sq_clblast_get(NULL)->clear_cache();
}
