/* The mapping of OpenCL errors to seqcl statuses (the names: device/cl_errors.c). */
#include <stdio.h>
#include <string.h>

#include "backend/opencl/ocl.h"
#include "core/error.h"

/* NVIDIA's code for an illegal memory access in a kernel (not in cl.h). */
#define SQ_CL_NV_ILLEGAL_ACCESS (-9999)

seqcl_status sq_ocl_check(sq_ocl *o, cl_int err, const char *what) {
  if (err == CL_SUCCESS) return SEQCL_OK;
  seqcl_ctx *ctx = o ? o->ctx : NULL;
  const char *dev = ctx ? ctx->info.selector : "?";
  const char *name = ctx ? ctx->info.name : "";
  switch (err) {
  case CL_OUT_OF_RESOURCES:
    /* Memory only when an allocation says so; NVIDIA also reports oversized
     * launches (registers, local memory, work-group size) with it. */
    if (strncmp(what, "clCreateBuffer", 14) != 0)
      return sq_fail(ctx, SEQCL_ERR_OPENCL,
                     "%s: CL_OUT_OF_RESOURCES (device %s, %s): the device cannot run this "
                     "launch (work-group size, registers or local memory per group), or an "
                     "earlier kernel faulted; not a lack of memory",
                     what, dev, name);
    return sq_fail(ctx, SEQCL_ERR_DEVICE_OUT_OF_MEMORY, "%s: %s (device %s, %s)", what,
                   sq_cl_error_name(err), dev, name);
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_HOST_MEMORY:
    return sq_fail(ctx, SEQCL_ERR_DEVICE_OUT_OF_MEMORY, "%s: %s (device %s, %s)", what,
                   sq_cl_error_name(err), dev, name);
  case CL_BUILD_PROGRAM_FAILURE:
    return sq_fail(ctx, SEQCL_ERR_BUILD, "%s: %s (device %s, %s)", what, sq_cl_error_name(err),
                   dev, name);
  default:
    return sq_fail(ctx, SEQCL_ERR_OPENCL, "%s: %s (device %s, %s)", what, sq_cl_error_name(err),
                   dev, name);
  }
}

void sq_ocl_note_work(sq_ocl *o, const char *what) {
  snprintf(o->last_work, sizeof o->last_work, "%s", what);
  o->last_dims = 0;
}

/* "attn_fused_row (global 256x4, local 64x1)" or the CLBlast call's own name. */
static void describe_last(const sq_ocl *o, char *buf, size_t cap) {
  if (!o->last_work[0]) {
    snprintf(buf, cap, "none recorded");
    return;
  }
  int n = snprintf(buf, cap, "%s", o->last_work);
  if (o->last_dims == 0 || n < 0 || (size_t)n >= cap) return;
  const char *sep = " (global ";
  for (cl_uint d = 0; d < o->last_dims && (size_t)n < cap; d++) {
    n += snprintf(buf + n, cap - (size_t)n, "%s%zu", sep, o->last_global[d]);
    sep = "x";
  }
  if ((size_t)n >= cap) return;
  if (!o->last_has_local) {
    snprintf(buf + n, cap - (size_t)n, ", local chosen by the driver)");
    return;
  }
  sep = ", local ";
  for (cl_uint d = 0; d < o->last_dims && (size_t)n < cap; d++) {
    n += snprintf(buf + n, cap - (size_t)n, "%s%zu", sep, o->last_local[d]);
    sep = "x";
  }
  if ((size_t)n < cap) snprintf(buf + n, cap - (size_t)n, ")");
}

seqcl_status sq_ocl_check_sync(sq_ocl *o, cl_int err, const char *what) {
  if (err != CL_OUT_OF_RESOURCES && err != SQ_CL_NV_ILLEGAL_ACCESS) return sq_ocl_check(o, err, what);
  char last[200];
  describe_last(o, last, sizeof last);
  return sq_fail(o->ctx, SEQCL_ERR_OPENCL,
                 "%s: %s (device %s, %s): earlier work failed on the device, most likely a "
                 "kernel that faulted (an access out of bounds) or a launch larger than the "
                 "device can run, not a lack of memory; the last kernel enqueued: %s",
                 what, sq_cl_error_name(err), o->ctx->info.selector, o->ctx->info.name, last);
}
