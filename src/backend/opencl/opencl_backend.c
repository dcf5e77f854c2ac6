/* The OpenCL backend: device/context/queue setup, buffers, and the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/clblast_lib.h"
#include "backend/opencl/ocl.h"
#include "backend/opencl/ops_internal.h"
#include "backend/opencl/program.h"
#include "core/error.h"
#include "core/fault.h"

/* The cl_device_id of ctx->info, by its clinfo -l numbering. */
static seqcl_status find_device(seqcl_ctx *ctx, cl_platform_id *plat, cl_device_id *dev) {
  const seqcl_device_info *info = &ctx->info;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err != CL_SUCCESS && err != -1001)
    return sq_fail(ctx, SEQCL_ERR_OPENCL, "opening %s: clGetPlatformIDs: %s", info->selector,
                   sq_cl_error_name(err));
  if (info->platform_index < 0 || (cl_uint)info->platform_index >= np || err == -1001)
    return sq_fail(ctx, SEQCL_ERR_NO_DEVICE, "opening %s (%s): OpenCL platform %d is gone",
                   info->selector, info->name, info->platform_index);
  cl_platform_id *plats = malloc(np * sizeof *plats);
  if (!plats) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "opening a device: out of memory");
  err = clGetPlatformIDs(np, plats, NULL);
  *plat = err == CL_SUCCESS ? plats[info->platform_index] : NULL;
  free(plats);
  if (err != CL_SUCCESS)
    return sq_fail(ctx, SEQCL_ERR_OPENCL, "opening %s: clGetPlatformIDs: %s", info->selector,
                   sq_cl_error_name(err));
  cl_uint nd = 0;
  err = clGetDeviceIDs(*plat, CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
  if (err != CL_SUCCESS || info->device_index < 0 || (cl_uint)info->device_index >= nd)
    return sq_fail(ctx, SEQCL_ERR_NO_DEVICE, "opening %s (%s): device %d.%d is gone (%s)",
                   info->selector, info->name, info->platform_index, info->device_index,
                   sq_cl_error_name(err));
  cl_device_id *devs = malloc(nd * sizeof *devs);
  if (!devs) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "opening a device: out of memory");
  err = clGetDeviceIDs(*plat, CL_DEVICE_TYPE_ALL, nd, devs, NULL);
  *dev = err == CL_SUCCESS ? devs[info->device_index] : NULL;
  free(devs);
  if (err != CL_SUCCESS)
    return sq_fail(ctx, SEQCL_ERR_OPENCL, "opening %s: clGetDeviceIDs: %s", info->selector,
                   sq_cl_error_name(err));
  return SEQCL_OK;
}

/* ---- memory ---- */
static seqcl_status buf_alloc(sq_backend *be, size_t bytes, sq_buf **out) {
  sq_ocl *o = sq_ocl_of(be);
  *out = NULL;
  const cl_ulong max_alloc = o->max_alloc;
  if (max_alloc && bytes > max_alloc)
    return sq_fail(o->ctx, SEQCL_ERR_DEVICE_OUT_OF_MEMORY,
                   "allocating %zu bytes on %s (%s): larger than the device's largest buffer "
                   "(CL_DEVICE_MAX_MEM_ALLOC_SIZE = %llu bytes)",
                   bytes, o->ctx->info.selector, o->ctx->info.name, (unsigned long long)max_alloc);
  sq_buf *b = calloc(1, sizeof *b);
  if (!b) return sq_fail(o->ctx, SEQCL_ERR_OUT_OF_MEMORY, "allocating a buffer: out of memory");
  /* OpenCL refuses empty buffers; a 4-byte one keeps every ref valid. */
  size_t size = bytes ? bytes : 4;
  cl_int err = CL_SUCCESS;
  cl_mem m = NULL;
  if (sq_fault_hit(SQ_FAULT_ALLOC))
    err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  else
    m = clCreateBuffer(o->context, CL_MEM_READ_WRITE, size, NULL, &err);
  if (err != CL_SUCCESS) {
    free(b);
    char what[128];
    snprintf(what, sizeof what, "clCreateBuffer(%zu bytes)", bytes);
    return sq_ocl_check(o, err, what);
  }
  b->be = be;
  b->bytes = bytes;
  b->ptr = m;
  *out = b;
  return SEQCL_OK;
}

static void buf_free(sq_backend *be, sq_buf *buf) {
  (void)be;
  if (!buf) return;
  if (buf->ptr) clReleaseMemObject((cl_mem)buf->ptr);
  free(buf);
}

/* Refuses a transfer outside the buffer (a caller bug the driver might not catch). */
static seqcl_status in_range(sq_ocl *o, sq_ref r, size_t bytes, const char *what) {
  if (!r.buf)
    return sq_fail(o->ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: absent buffer", what);
  size_t start = r.off * 4;
  if (r.off > SIZE_MAX / 4 || start > r.buf->bytes || bytes > r.buf->bytes - start)
    return sq_fail(o->ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: %zu bytes at element %zu overrun a buffer of %zu bytes", what, bytes,
                   r.off, r.buf->bytes);
  return SEQCL_OK;
}

static seqcl_status buf_write(sq_backend *be, sq_ref dst, const void *src, size_t bytes) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(in_range(o, dst, bytes, "clEnqueueWriteBuffer"));
  if (bytes == 0) return SEQCL_OK;
  /* Blocking: the caller may reuse src as soon as this returns. */
  o->n_syncs++;
  cl_int err = clEnqueueWriteBuffer(o->queue, sq_ocl_mem(dst), CL_TRUE, dst.off * 4, bytes, src, 0,
                                    NULL, NULL);
  return sq_ocl_check(o, err, "clEnqueueWriteBuffer");
}

static seqcl_status buf_read(sq_backend *be, sq_ref src, void *dst, size_t bytes) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(in_range(o, src, bytes, "clEnqueueReadBuffer"));
  if (bytes == 0) return SEQCL_OK;
  o->n_syncs++;
  cl_int err = clEnqueueReadBuffer(o->queue, sq_ocl_mem(src), CL_TRUE, src.off * 4, bytes, dst, 0,
                                   NULL, NULL);
  return sq_ocl_check_sync(o, err, "clEnqueueReadBuffer (errors of earlier work surface here)");
}

static seqcl_status buf_copy(sq_backend *be, sq_ref dst, sq_ref src, size_t count) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(in_range(o, dst, count * 4, "clEnqueueCopyBuffer (destination)"));
  SQ_TRY(in_range(o, src, count * 4, "clEnqueueCopyBuffer (source)"));
  if (count == 0) return SEQCL_OK;
  cl_int err = clEnqueueCopyBuffer(o->queue, sq_ocl_mem(src), sq_ocl_mem(dst), src.off * 4,
                                   dst.off * 4, count * 4, 0, NULL, NULL);
  return sq_ocl_check(o, err, "clEnqueueCopyBuffer");
}

/* fills run on the device's own kernel (kernels/memory.cl) */
#define MEMORY_FILE "memory.cl"
#define FILL_WG 128

seqcl_status sq_ocl_fill_bits(sq_backend *be, sq_ref dst, size_t count, uint32_t bits) {
  sq_ocl *o = sq_ocl_of(be);
  if (count == 0) return SEQCL_OK;
  SQ_TRY(sq_ocl_fits_int(o, count, "fill"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, MEMORY_FILE, "", "fill_u32", &k));
  int n = (int)count;
  cl_uint v = bits;
  SQ_TRY(sq_ocl_ref_args(o, k, 0, dst, "fill_u32"));
  SQ_ARG(o, k, 2, n);
  SQ_ARG(o, k, 3, v);
  return sq_ocl_launch_flat(o, k, count, FILL_WG, "fill_u32");
}


static seqcl_status buf_fill(sq_backend *be, sq_ref dst, size_t count, float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  SQ_TRY(in_range(sq_ocl_of(be), dst, count * 4, "fill"));
  return sq_ocl_fill_bits(be, dst, count, bits);
}

static seqcl_status buf_fill_i32(sq_backend *be, sq_ref dst, size_t count, int32_t value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  SQ_TRY(in_range(sq_ocl_of(be), dst, count * 4, "fill_i32"));
  return sq_ocl_fill_bits(be, dst, count, bits);
}

static seqcl_status finish(sq_backend *be) {
  sq_ocl *o = sq_ocl_of(be);
  o->n_syncs++;
  return sq_ocl_check_sync(o, clFinish(o->queue), "clFinish (errors of earlier work surface here)");
}

static void destroy(sq_backend *be) {
  if (!be) return;
  sq_ocl *o = sq_ocl_of(be);
  if (o) {
    if (o->queue) clFinish(o->queue);
    sq_ocl_clblast_forget(o);
    sq_program_cache_destroy(o->programs);
    if (o->dummy) clReleaseMemObject(o->dummy);
    if (o->scratch) clReleaseMemObject(o->scratch);
    if (o->queue) clReleaseCommandQueue(o->queue);
    if (o->context) clReleaseContext(o->context);
    free(o);
  }
  free(be);
}

static int supports(const sq_backend *be, sq_backend_cap cap) {
  (void)be;
  return cap == SQ_CAP_OWN_GEMM; /* the small-GEMM kernel beside CLBlast */
}

static const sq_backend_ops opencl_ops = {
    .kind = SQ_BACKEND_OPENCL,
    .name = "opencl",
    .blas = "CLBlast",
    .supports = supports,
    .counters = sq_ocl_counters,
    .stream_copy = sq_ocl_stream_copy,
    .buf_alloc = buf_alloc,
    .buf_free = buf_free,
    .write = buf_write,
    .read = buf_read,
    .copy = buf_copy,
    .fill = buf_fill,
    .fill_i32 = buf_fill_i32,
    .finish = finish,
    /* the op slots: sq_ocl_<name> of every line of backend/slots.def */
#define SQ_SLOT(name, params) .name = sq_ocl_##name,
#include "backend/slots.def"
#undef SQ_SLOT
    .gemm_paths = sq_ocl_gemm_paths,
    .argmax_greedy = sq_ocl_argmax_greedy,
    .destroy = destroy,
};

seqcl_status sq_opencl_backend_create(seqcl_ctx *ctx, sq_backend **out) {
  *out = NULL;
  sq_backend *be = sq_backend_new(ctx, &opencl_ops, sizeof(sq_ocl));
  if (!be)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "opening %s: out of memory", ctx->info.selector);
  sq_ocl *o = be->impl;
  o->ctx = ctx;
  const char *no_clblast = NULL;
  seqcl_status st = sq_clblast_get(&no_clblast)
                        ? SEQCL_OK
                        : sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "opening %s: %s", ctx->info.selector,
                                  no_clblast);
  if (st == SEQCL_OK) st = find_device(ctx, &o->platform, &o->device);
  cl_int err = CL_SUCCESS;
  if (st == SEQCL_OK) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)o->platform, 0};
    o->context = clCreateContext(props, 1, &o->device, NULL, NULL, &err);
    st = sq_ocl_check(o, err, "clCreateContext");
  }
  if (st == SEQCL_OK) {
    /* In order, no profiling: each slot's work runs after the previous slot's. */
    o->queue = clCreateCommandQueue(o->context, o->device, 0, &err);
    st = sq_ocl_check(o, err, "clCreateCommandQueue");
  }
  if (st == SEQCL_OK) {
    o->dummy = clCreateBuffer(o->context, CL_MEM_READ_WRITE, 16, NULL, &err);
    st = sq_ocl_check(o, err, "clCreateBuffer(dummy)");
  }
  if (st == SEQCL_OK) {
    cl_uint align_bits = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof o->max_wg, &o->max_wg, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof o->local_mem, &o->local_mem, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    o->mem_align_bytes = align_bits / 8;
    if (o->max_wg == 0) o->max_wg = 1;
    /* SEQCL_KERNELS=cpu|gpu picks the kernel forms whatever the device type
     * (the tests run both forms on every device) */
    clGetDeviceInfo(o->device, CL_DEVICE_TYPE, sizeof o->device_type, &o->device_type, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof o->max_alloc, &o->max_alloc,
                    NULL);
    cl_device_fp_config fp64 = 0;
    if (clGetDeviceInfo(o->device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL) !=
        CL_SUCCESS)
      fp64 = 0;
    o->fp64 = fp64 != 0;
    /* gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, shared by every loop of a work-item */
    o->loop_limit = strstr(o->ctx->info.name, "llvmpipe") ? 65535ul : 0ul;
    switch (ctx->settings.kernels) {
    case SQ_FORMS_CPU: o->cpu_device = 1; break;
    case SQ_FORMS_GPU: o->cpu_device = 0; break;
    default: /* a device that is also a GPU (Oclgrind claims every type) counts as
                one, as the device list says */
      o->cpu_device = (o->device_type & CL_DEVICE_TYPE_CPU) &&
                      !(o->device_type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR));
      break;
    }
    st = sq_program_cache_create(o, &o->programs);
  }
  if (st != SEQCL_OK) {
    destroy(be);
    return st;
  }
  *out = be;
  return SEQCL_OK;
}
