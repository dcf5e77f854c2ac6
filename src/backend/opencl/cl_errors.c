/* OpenCL error codes as names, and their mapping to seqcl statuses. */
#include <stdio.h>

#include "backend/opencl/ocl.h"
#include "core/error.h"

const char *sq_cl_error_name(cl_int err) {
  switch (err) {
#define N_(code) \
  case code:     \
    return #code;
    N_(CL_SUCCESS)
    N_(CL_DEVICE_NOT_FOUND)
    N_(CL_DEVICE_NOT_AVAILABLE)
    N_(CL_COMPILER_NOT_AVAILABLE)
    N_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    N_(CL_OUT_OF_RESOURCES)
    N_(CL_OUT_OF_HOST_MEMORY)
    N_(CL_PROFILING_INFO_NOT_AVAILABLE)
    N_(CL_MEM_COPY_OVERLAP)
    N_(CL_IMAGE_FORMAT_MISMATCH)
    N_(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    N_(CL_BUILD_PROGRAM_FAILURE)
    N_(CL_MAP_FAILURE)
    N_(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    N_(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    N_(CL_COMPILE_PROGRAM_FAILURE)
    N_(CL_LINKER_NOT_AVAILABLE)
    N_(CL_LINK_PROGRAM_FAILURE)
    N_(CL_DEVICE_PARTITION_FAILED)
    N_(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    N_(CL_INVALID_VALUE)
    N_(CL_INVALID_DEVICE_TYPE)
    N_(CL_INVALID_PLATFORM)
    N_(CL_INVALID_DEVICE)
    N_(CL_INVALID_CONTEXT)
    N_(CL_INVALID_QUEUE_PROPERTIES)
    N_(CL_INVALID_COMMAND_QUEUE)
    N_(CL_INVALID_HOST_PTR)
    N_(CL_INVALID_MEM_OBJECT)
    N_(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    N_(CL_INVALID_IMAGE_SIZE)
    N_(CL_INVALID_SAMPLER)
    N_(CL_INVALID_BINARY)
    N_(CL_INVALID_BUILD_OPTIONS)
    N_(CL_INVALID_PROGRAM)
    N_(CL_INVALID_PROGRAM_EXECUTABLE)
    N_(CL_INVALID_KERNEL_NAME)
    N_(CL_INVALID_KERNEL_DEFINITION)
    N_(CL_INVALID_KERNEL)
    N_(CL_INVALID_ARG_INDEX)
    N_(CL_INVALID_ARG_VALUE)
    N_(CL_INVALID_ARG_SIZE)
    N_(CL_INVALID_KERNEL_ARGS)
    N_(CL_INVALID_WORK_DIMENSION)
    N_(CL_INVALID_WORK_GROUP_SIZE)
    N_(CL_INVALID_WORK_ITEM_SIZE)
    N_(CL_INVALID_GLOBAL_OFFSET)
    N_(CL_INVALID_EVENT_WAIT_LIST)
    N_(CL_INVALID_EVENT)
    N_(CL_INVALID_OPERATION)
    N_(CL_INVALID_GL_OBJECT)
    N_(CL_INVALID_BUFFER_SIZE)
    N_(CL_INVALID_MIP_LEVEL)
    N_(CL_INVALID_GLOBAL_WORK_SIZE)
    N_(CL_INVALID_PROPERTY)
    N_(CL_INVALID_IMAGE_DESCRIPTOR)
    N_(CL_INVALID_COMPILER_OPTIONS)
    N_(CL_INVALID_LINKER_OPTIONS)
    N_(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N_
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  }
  static _Thread_local char unknown[48];
  snprintf(unknown, sizeof unknown, "CL_UNKNOWN_ERROR(%d)", (int)err);
  return unknown;
}

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
