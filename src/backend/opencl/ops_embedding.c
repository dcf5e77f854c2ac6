/* The embedding family on OpenCL devices (kernels/embedding.cl): the row
 * gather and its backward. */
#include "backend/opencl/kargs.h"

#define EMB_FILE "embedding.cl"
/* Table-row buckets of embedding_bwd: the parallelism is D * buckets. */
#define EMB_BUCKETS 8

seqcl_status sq_ocl_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                              int ld_out) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)N * (size_t)ld_out, "embedding"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, EMB_FILE, "", "embedding", &k));
  SQ_TRY(sq_ocl_ref_args(o, k, 0, ids, "embedding"));
  SQ_TRY(sq_ocl_ref_args(o, k, 2, table, "embedding"));
  SQ_TRY(sq_ocl_ref_args(o, k, 4, out, "embedding"));
  SQ_ARG(o, k, 6, N);
  SQ_ARG(o, k, 7, D);
  SQ_ARG(o, k, 8, ld_out);
  return sq_ocl_launch_2d(o, k, FLAT_WG, (size_t)D, (size_t)N, "embedding");
}


seqcl_status sq_ocl_embedding_bwd(sq_backend *be, int N, int D, sq_ref ids, sq_ref dy,
                                    int ld_dy, int pad_id, sq_ref dtable) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)N * (size_t)ld_dy, "embedding_bwd"));
  SQ_TRY(sq_ocl_loops_fit(o, (unsigned long long)N, "embedding_bwd"));
  SQ_TRY(sq_ocl_fits_int(o, dtable.buf->bytes / sizeof(float), "embedding_bwd"));
  kargs a;
  SQ_TRY(train_args(o, EMB_FILE, "embedding_bwd", &a, NULL));
  arg_int(&a, N);
  arg_int(&a, D);
  arg_ref(&a, ids);
  arg_ref(&a, dy);
  arg_int(&a, ld_dy);
  arg_int(&a, pad_id);
  arg_ref(&a, dtable);
  arg_int(&a, EMB_BUCKETS);
  return launch3(&a, (size_t)D, EMB_BUCKETS, 1, COL_WG);
}
