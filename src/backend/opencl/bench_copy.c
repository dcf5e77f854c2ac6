/* The streaming copy behind `seqcl bench`'s bandwidth figure: a plain kernel
 * (kernels/bench.cl), not clEnqueueCopyBuffer, so the figure is what seqcl's
 * own kernels can reach on this device. */
#include "backend/opencl/ocl.h"
#include "core/error.h"

seqcl_status sq_ocl_stream_copy(sq_backend *be, sq_ref dst, sq_ref src, size_t count) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel bench_copy;
  SQ_TRY(sq_ocl_kernel(o, "bench.cl", "", "bench_copy", &bench_copy));
  cl_mem s = sq_ocl_mem(src), d = sq_ocl_mem(dst);
  int n4 = (int)(count / 4);
  SQ_ARG(o, bench_copy, 0, s);
  SQ_ARG(o, bench_copy, 1, d);
  SQ_ARG(o, bench_copy, 2, n4);
  size_t local = sq_ocl_wg_size(o, bench_copy, 256);
  size_t global = sq_round_up((size_t)n4, local);
  return sq_ocl_launch(o, bench_copy, 1, &global, &local, "bench_copy");
}
