/* The mapping of OpenCL errors to seqcl statuses (the names: device/cl_errors.c). */
#include "backend/opencl/ocl.h"
#include "core/error.h"

seqcl_status sq_ocl_check(sq_ocl *o, cl_int err, const char *what) {
  if (err == CL_SUCCESS) return SEQCL_OK;
  seqcl_ctx *ctx = o ? o->ctx : NULL;
  const char *dev = ctx ? ctx->info.selector : "?";
  const char *name = ctx ? ctx->info.name : "";
  switch (err) {
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_RESOURCES:
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
