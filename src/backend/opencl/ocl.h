/* Internal API of the OpenCL backend: the context/queue, the program cache, launch
 * helpers, and the op implementations that fill the backend table.
 *
 * Kernel argument convention: OpenCL 1.2 has no pointer offsets for cl_mem
 * arguments, so every buffer argument is followed by an int offset counted in
 * 4-byte elements: (__global float *x, int x_off). Absent optional buffers are
 * passed as a valid dummy buffer plus a flag argument (never a NULL cl_mem). */
#ifndef SQ_BACKEND_OCL_H
#define SQ_BACKEND_OCL_H

#include <CL/cl.h>

#include "backend/backend.h"
#include "core/ctx.h"
#include "device/cl_errors.h"

typedef struct sq_program_cache sq_program_cache; /* program.c */

/* CL_KERNEL_WORK_GROUP_SIZE of the kernels launched so far (a context uses a
 * few dozen); asked of the driver once per kernel, not on every launch. */
#define SQ_OCL_WG_CACHE 96
typedef struct sq_ocl_wg_entry {
  cl_kernel kernel;
  size_t wg;
} sq_ocl_wg_entry;

typedef struct sq_ocl {
  seqcl_ctx *ctx;
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  size_t max_wg;          /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  cl_ulong local_mem;     /* CL_DEVICE_LOCAL_MEM_SIZE */
  cl_uint mem_align_bytes;/* CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8 */
  cl_device_type device_type; /* CL_DEVICE_TYPE, read once */
  cl_ulong max_alloc;     /* CL_DEVICE_MAX_MEM_ALLOC_SIZE, read once (0: unknown) */
  int fp64;               /* CL_DEVICE_DOUBLE_FP_CONFIG != 0 (cl_khr_fp64), read once */
  unsigned long loop_limit; /* llvmpipe: loop iterations a work-item runs in all before it
                               is stopped without an error (KNOWN_ISSUES.md); 0: none */
  int cpu_device;         /* CPU-type device (PoCL), or SEQCL_KERNELS=cpu: the kernels with a
                             CPU form (fused attention, GRU gates) use it */
  sq_program_cache *programs;
  cl_mem dummy;           /* 16-byte buffer passed for absent optional arguments */
  int used_clblast;       /* a product went to CLBlast (gemm_clblast.c) */
  cl_mem scratch;         /* sq_ocl_scratch: partial results between two launches */
  size_t scratch_bytes;
  int gemm_policy;        /* gemm_small.c: which GEMM runs small products (0: not decided) */
  int gemm_choice[3];     /* gemm_policy.c: per row bucket 1 own kernel, 2 CLBlast, 0 unknown */
  size_t clblast_indirect; /* CLBlast's direct/indirect threshold T (clblast_params.h); 0: not read */
  int clblast_forced;     /* sq_ocl_gemm_paths(force = 1) in effect: every product indirect */
  /* Work counters read by `seqcl bench` (sq_ocl_counters): kernels seqcl enqueued,
   * CLBlast calls (each one or more kernels of its own), blocking waits. */
  unsigned long long n_launches, n_blas_calls, n_syncs;
  sq_ocl_wg_entry wg_cache[SQ_OCL_WG_CACHE];
  size_t n_wg_cache;
  /* The last work enqueued, for errors that surface at a later read or finish
   * (a faulting kernel reports there, not at its launch). */
  char last_work[96];
  cl_uint last_dims; /* 0: not a kernel of ours (a CLBlast call) */
  size_t last_global[3], last_local[3];
  int last_has_local;
} sq_ocl;

/* The counters above (the table's counters slot). */
void sq_ocl_counters(const sq_backend *be, sq_backend_counts *out);
/* The table's stream_copy slot: count elements copied by kernels/bench.cl's
 * bench_copy (count a multiple of 4, both refs at offset 0), for the benchmark's bandwidth figure. */
seqcl_status sq_ocl_stream_copy(sq_backend *be, sq_ref dst, sq_ref src, size_t count);

static inline sq_ocl *sq_ocl_of(sq_backend *be) { return (sq_ocl *)be->impl; }
static inline cl_mem sq_ocl_mem(sq_ref r) { return (cl_mem)r.buf->ptr; }
/* cl_mem of r, or the dummy buffer when r is absent. */
static inline cl_mem sq_ocl_mem_or_dummy(sq_ocl *o, sq_ref r) {
  return r.buf ? (cl_mem)r.buf->ptr : o->dummy;
}

/* Maps an OpenCL error to a status and records "what: CL_NAME (device)".
 * CL_MEM_OBJECT_ALLOCATION_FAILURE / CL_OUT_OF_HOST_MEMORY, and
 * CL_OUT_OF_RESOURCES from an allocation (clCreateBuffer), become
 * SEQCL_ERR_DEVICE_OUT_OF_MEMORY; CL_OUT_OF_RESOURCES elsewhere (a launch, a
 * read) is about a kernel, not memory: SEQCL_ERR_OPENCL; others likewise.
 * Returns SEQCL_OK when err == CL_SUCCESS. */
seqcl_status sq_ocl_check(sq_ocl *o, cl_int err, const char *what);

/* The same for a blocking read or clFinish, where errors of earlier work
 * surface: CL_OUT_OF_RESOURCES (and NVIDIA's -9999) there mean a kernel
 * faulted or a launch was more than the device could run, not a lack of
 * memory; the message names the last work enqueued and its sizes. */
seqcl_status sq_ocl_check_sync(sq_ocl *o, cl_int err, const char *what);

/* Records a CLBlast call as the last work enqueued (its kernels are its own). */
void sq_ocl_note_work(sq_ocl *o, const char *what);

/* The kernel `name` of program `file` (the name of a file in kernels/, such as
 * "attention.cl") built with `options` (extra -D defines; the standard options
 * are added). Built lazily, cached in memory per context and on disk.
 * The cache owns the kernel: do not release it. One kernel object is shared by
 * all callers in a context, so set all arguments right before each launch. */
seqcl_status sq_ocl_kernel(sq_ocl *o, const char *file, const char *options, const char *name,
                           cl_kernel *out);

/* clSetKernelArg with error reporting: SQ_ARG(o, k, index, value) for scalars and cl_mem. */
seqcl_status sq_ocl_arg(sq_ocl *o, cl_kernel k, cl_uint index, size_t size, const void *value,
                        const char *kernel_name);
#define SQ_ARG(o, k, i, v) SQ_TRY(sq_ocl_arg((o), (k), (i), sizeof(v), &(v), #k))

/* Enqueues an NDRange. global sizes must already be multiples of local (use
 * sq_round_up); local may be NULL. `what` names the kernel in error messages.
 * Honours the fault-injection hook. */
seqcl_status sq_ocl_launch(sq_ocl *o, cl_kernel k, cl_uint dims, const size_t *global,
                           const size_t *local, const char *what);

static inline size_t sq_round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

/* Empties CLBlast's process-wide program cache when this context used it,
 * before the context is released (gemm_clblast.c says why). */
void sq_ocl_clblast_forget(sq_ocl *o);

/* A device buffer of at least bytes for the partial results one op passes
 * from one of its kernels to the next (the GPU forms of attention and
 * cross-entropy). One buffer, kept by the context and grown when needed,
 * serves every op: the queue is in order, so an op's kernels are done with it
 * before the next op's start. Valid until the next call. */
seqcl_status sq_ocl_scratch(sq_ocl *o, size_t bytes, cl_mem *out);
/* Whether a kernel whose work-items each run up to `iterations` loop
 * iterations gives correct results here (o->loop_limit). */
static inline int sq_ocl_loops_ok(const sq_ocl *o, unsigned long long iterations) {
  return !o->loop_limit || iterations <= o->loop_limit;
}
/* SEQCL_ERR_UNSUPPORTED naming the driver's limit when they do not fit. */
seqcl_status sq_ocl_loops_fit(sq_ocl *o, unsigned long long iterations, const char *kernel);

/* A work-group size for a 1-D reduction kernel: the largest power of two
 * <= min(want, device max, kernel max). */
size_t sq_ocl_wg_size(sq_ocl *o, cl_kernel k, size_t want);

/* gemm_clblast.c: the gemm_paths slot (backend.h) over CLBlast's threshold */
seqcl_status sq_ocl_gemm_paths(sq_backend *be, int force, size_t *side);

#endif
