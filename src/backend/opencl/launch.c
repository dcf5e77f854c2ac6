/* Kernel argument and launch helpers shared by every op. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "backend/opencl/ocl.h"
#include "backend/opencl/program.h"
#include "backend/opencl/ops_internal.h"
#include "core/error.h"
#include "core/fault.h"

seqcl_status sq_ocl_arg(sq_ocl *o, cl_kernel k, cl_uint index, size_t size, const void *value,
                        const char *kernel_name) {
  cl_int err = clSetKernelArg(k, index, size, value);
  if (err == CL_SUCCESS) return SEQCL_OK;
  char what[160];
  snprintf(what, sizeof what, "clSetKernelArg(%s, argument %u)", kernel_name, (unsigned)index);
  return sq_ocl_check(o, err, what);
}

seqcl_status sq_ocl_launch(sq_ocl *o, cl_kernel k, cl_uint dims, const size_t *global,
                           const size_t *local, const char *what) {
  char where[200];
  snprintf(where, sizeof where, "clEnqueueNDRangeKernel(%s)", what);
  if (sq_fault_hit(SQ_FAULT_LAUNCH)) return sq_ocl_check(o, CL_OUT_OF_RESOURCES, where);
  for (cl_uint d = 0; d < dims; d++)
    if (global[d] == 0) return SEQCL_OK; /* nothing to do: OpenCL rejects empty ranges */
  cl_int err = clEnqueueNDRangeKernel(o->queue, k, dims, NULL, global, local, 0, NULL, NULL);
  if (err == CL_SUCCESS) o->n_launches++;
  snprintf(o->last_work, sizeof o->last_work, "%s", what);
  o->last_dims = dims < 3 ? dims : 3;
  o->last_has_local = local != NULL;
  for (cl_uint d = 0; d < o->last_dims; d++) {
    o->last_global[d] = global[d];
    o->last_local[d] = local ? local[d] : 0;
  }
  if (err == CL_SUCCESS) return SEQCL_OK;
  /* the sizes belong in the message when the driver refuses the launch */
  char sized[320], last[200];
  snprintf(last, sizeof last, "%s", where);
  int n = snprintf(sized, sizeof sized, "%s global", last);
  for (cl_uint d = 0; d < dims && n > 0 && (size_t)n < sizeof sized; d++)
    n += snprintf(sized + n, sizeof sized - (size_t)n, "%s%zu", d ? "x" : " ", global[d]);
  if (local)
    for (cl_uint d = 0; d < dims && n > 0 && (size_t)n < sizeof sized; d++)
      n += snprintf(sized + n, sizeof sized - (size_t)n, "%s%zu", d ? "x" : " local ", local[d]);
  return sq_ocl_check(o, err, sized);
}

void sq_ocl_counters(const sq_backend *be, sq_backend_counts *out) {
  const sq_ocl *o = be->impl;
  out->launches = o->n_launches;
  out->blas_calls = o->n_blas_calls;
  out->syncs = o->n_syncs;
}

seqcl_status sq_ocl_loops_fit(sq_ocl *o, unsigned long long iterations, const char *kernel) {
  if (sq_ocl_loops_ok(o, iterations)) return SEQCL_OK;
  return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                 "opencl %s: this shape needs %llu loop iterations in one work-item; %s (%s) "
                 "stops a work-item after %lu without an error (llvmpipe's loop limiter, "
                 "KNOWN_ISSUES.md), so seqcl does not run it there",
                 kernel, iterations, o->ctx->info.selector, o->ctx->info.name, o->loop_limit);
}

size_t sq_ocl_wg_size(sq_ocl *o, cl_kernel k, size_t want) {
  size_t limit = want;
  if (o->max_wg && o->max_wg < limit) limit = o->max_wg;
  size_t kmax = 0, i = 0;
  while (i < o->n_wg_cache && o->wg_cache[i].kernel != k) i++;
  if (i < o->n_wg_cache) {
    kmax = o->wg_cache[i].wg;
  } else {
    if (clGetKernelWorkGroupInfo(k, o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                 NULL) != CL_SUCCESS)
      kmax = 0;
    if (o->n_wg_cache < SQ_OCL_WG_CACHE) { /* full: ask every time (never seen in practice) */
      o->wg_cache[o->n_wg_cache].kernel = k;
      o->wg_cache[o->n_wg_cache].wg = kmax;
      o->n_wg_cache++;
    }
  }
  if (kmax > 0 && kmax < limit) limit = kmax;
  size_t wg = 1;
  while (wg * 2 <= limit) wg *= 2;
  return wg;
}

seqcl_status sq_ocl_scratch(sq_ocl *o, size_t bytes, cl_mem *out) {
  if (o->scratch_bytes < bytes) {
    /* the old buffer lives on until the kernels queued on it are done */
    if (o->scratch) clReleaseMemObject(o->scratch);
    o->scratch = NULL;
    o->scratch_bytes = 0;
    cl_int err;
    cl_mem m = clCreateBuffer(o->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    SQ_TRY(sq_ocl_check(o, err, "clCreateBuffer(kernel partial results)"));
    o->scratch = m;
    o->scratch_bytes = bytes;
  }
  *out = o->scratch;
  return SEQCL_OK;
}
seqcl_status sq_ocl_fits_int(sq_ocl *o, size_t n, const char *what) {
  if (n > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "opencl %s: %zu elements exceed the kernels' int index range", what, n);
  return SEQCL_OK;
}

/* Read once when the backend opens (opencl_backend.c). Without fp64 (rusticl,
 * Intel Arc) the reductions accumulate in float; the tests run that form on
 * rusticl. */
int sq_ocl_device_fp64(sq_ocl *o) { return o->fp64; }

seqcl_status sq_ocl_train_kernel(sq_ocl *o, const char *file, const char *name, cl_kernel *k,
                                 size_t *acc_bytes) {
  int fp64 = sq_ocl_device_fp64(o);
  if (acc_bytes) *acc_bytes = fp64 ? sizeof(double) : sizeof(float);
  return sq_ocl_kernel(o, file, fp64 ? SQ_OCL_TRAIN_OPTION " -DSQ_FP64=1" : SQ_OCL_TRAIN_OPTION,
                       name, k);
}

seqcl_status sq_ocl_launch_flat(sq_ocl *o, cl_kernel k, size_t n, size_t want, const char *what) {
  size_t local = sq_ocl_wg_size(o, k, want);
  size_t global = sq_round_up(n, local);
  return sq_ocl_launch(o, k, 1, &global, &local, what);
}

seqcl_status sq_ocl_launch_2d(sq_ocl *o, cl_kernel k, size_t want, size_t cols, size_t rows,
                              const char *what) {
  size_t lx = sq_ocl_wg_size(o, k, want);
  size_t local[2] = {lx, 1};
  size_t global[2] = {sq_round_up(cols, lx), rows};
  return sq_ocl_launch(o, k, 2, global, local, what);
}

seqcl_status sq_ocl_launch_rows(sq_ocl *o, cl_kernel k, size_t rows, size_t wg, const char *what) {
  size_t global = rows * wg;
  return sq_ocl_launch(o, k, 1, &global, &wg, what);
}
