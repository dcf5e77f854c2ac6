/* Kernel argument and launch helpers shared by every op. */
#include <stdio.h>
#include <string.h>

#include "backend/opencl/ocl.h"
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
  return sq_ocl_check(o, err, where);
}

void sq_ocl_counters(const sq_backend *be, sq_backend_counts *out) {
  const sq_ocl *o = be->impl;
  out->launches = o->n_launches;
  out->blas_calls = o->n_blas_calls;
  out->syncs = o->n_syncs;
}

size_t sq_ocl_wg_size(sq_ocl *o, cl_kernel k, size_t want) {
  size_t limit = want;
  if (o->max_wg && o->max_wg < limit) limit = o->max_wg;
  size_t kmax = 0;
  if (clGetKernelWorkGroupInfo(k, o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL) ==
          CL_SUCCESS &&
      kmax > 0 && kmax < limit)
    limit = kmax;
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
