/* The slots of the OpenCL backend table, one file per op family
 * (ops_<family>.c; the GEMM in gemm_clblast.c), which opencl_backend.c puts
 * in the table, plus the launch and argument helpers they share (launch.c). */
#ifndef SQ_BACKEND_OCL_OPS_INTERNAL_H
#define SQ_BACKEND_OCL_OPS_INTERNAL_H

#include <limits.h>

#include "backend/opencl/ocl.h"
#include "core/error.h"

/* ---- helpers (launch.c) ---- */
/* SEQCL_ERR_UNSUPPORTED when n elements do not fit the kernels' int indices. */
seqcl_status sq_ocl_fits_int(sq_ocl *o, size_t n, const char *what);
/* Whether the device computes in double (cl_khr_fp64): the training
 * reductions then accumulate in double like the host's. */
int sq_ocl_device_fp64(sq_ocl *o);
/* A kernel of file's training section: the program built with -DSQ_TRAIN (and
 * -DSQ_FP64=1 on a device with doubles), a program of its own so that the
 * forward program decoding builds never compiles the training kernels.
 * acc_bytes (optional) receives the size of the accumulator type acc_t. */
seqcl_status sq_ocl_train_kernel(sq_ocl *o, const char *file, const char *name, cl_kernel *k,
                                 size_t *acc_bytes);
/* One work-item per element of a flattened range, rounded up to the group size. */
seqcl_status sq_ocl_launch_flat(sq_ocl *o, cl_kernel k, size_t n, size_t want, const char *what);
/* A 2-D range: cols x rows, work-groups of one row segment each. */
seqcl_status sq_ocl_launch_2d(sq_ocl *o, cl_kernel k, size_t want, size_t cols, size_t rows,
                              const char *what);
/* One work-group of wg work-items per row. */
seqcl_status sq_ocl_launch_rows(sq_ocl *o, cl_kernel k, size_t rows, size_t wg, const char *what);

/* ---- memory (opencl_backend.c) ---- */
seqcl_status sq_ocl_fill_bits(sq_backend *be, sq_ref dst, size_t count, uint32_t bits);

/* ---- the op slots both backends fill (backend/slots.def), one file per
 * family: ops_<family>.c (the product: gemm_clblast.c) ---- */
#define SQ_SLOT(name, params) seqcl_status sq_ocl_##name params;
#include "backend/slots.def"
#undef SQ_SLOT

/* ---- the slot only this backend fills (ops_decode.c) ---- */
seqcl_status sq_ocl_argmax_greedy(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                                  sq_ref ids, sq_ref finished, int eos, sq_ref hist);

/* Sets arguments i (the cl_mem, or the dummy when r is absent) and i + 1 (the
 * int element offset), following the convention of ocl.h. */
static inline seqcl_status sq_ocl_ref_args(sq_ocl *o, cl_kernel k, cl_uint i, sq_ref r,
                                           const char *kernel_name) {
  cl_mem m = sq_ocl_mem_or_dummy(o, r);
  if (r.off > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "%s: element offset %zu does not fit the kernels' int offsets", kernel_name,
                   r.off);
  int off = r.buf ? (int)r.off : 0;
  SQ_TRY(sq_ocl_arg(o, k, i, sizeof m, &m, kernel_name));
  return sq_ocl_arg(o, k, i + 1, sizeof off, &off, kernel_name);
}

#endif
