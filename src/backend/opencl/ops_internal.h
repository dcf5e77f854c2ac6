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

/* ---- linear (gemm_clblast.c, ops_linear.c) ---- */
seqcl_status sq_ocl_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                         sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta,
                         sq_ref C, int ldc, size_t sc, int batch);
seqcl_status sq_ocl_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias);
seqcl_status sq_ocl_bias_grad(sq_backend *be, int rows, int cols, sq_ref dy, int ld, sq_ref db);
seqcl_status sq_ocl_tanh_inplace(sq_backend *be, size_t count, sq_ref x);
seqcl_status sq_ocl_tanh_bwd(sq_backend *be, size_t count, sq_ref y, sq_ref dy, sq_ref dx);

/* ---- attention (ops_attention.c) ---- */
seqcl_status sq_ocl_attn_scores(sq_backend *be, const sq_attn_args *a, sq_ref scores);
seqcl_status sq_ocl_masked_softmax(sq_backend *be, int N, int S, sq_ref x, sq_ref lens,
                                   sq_ref mask, sq_ref y);
seqcl_status sq_ocl_context(sq_backend *be, int N, int S, int He, sq_ref alpha, sq_ref keys,
                            sq_ref c, int ld_c);
seqcl_status sq_ocl_attn_fused(sq_backend *be, const sq_attn_args *a, sq_ref c, int ld_c,
                               sq_ref alpha);
seqcl_status sq_ocl_attn_fwd(sq_backend *be, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                             sq_ref alpha);
seqcl_status sq_ocl_attn_bwd(sq_backend *be, const sq_attn_args *a, sq_ref alpha, sq_ref u,
                             sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                             sq_ref dpkeys, sq_ref dv, sq_ref dbv);

/* ---- gru (ops_gru.c) ---- */
seqcl_status sq_ocl_gru_gates(sq_backend *be, const sq_gru_args *g);
/* The same step, also keeping r, z, n and W_hn h + b_hn of each active row at
 * saved + n*sv_sn + t*sv_st (4H each) when saved is present: training's gru_fwd. */
seqcl_status sq_ocl_gru_step(sq_backend *be, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                             size_t sv_st);
seqcl_status sq_ocl_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g);

/* ---- embedding (ops_embedding.c) ---- */
seqcl_status sq_ocl_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                              int ld_out);
seqcl_status sq_ocl_embedding_bwd(sq_backend *be, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                                  int pad_id, sq_ref dtable);

/* ---- loss (ops_loss.c) ---- */
seqcl_status sq_ocl_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y);
seqcl_status sq_ocl_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                  sq_ref loss);
seqcl_status sq_ocl_cross_entropy_bwd(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                      float scale, sq_ref dx);

/* ---- decode (ops_decode.c) ---- */
seqcl_status sq_ocl_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                           sq_ref ids);
seqcl_status sq_ocl_greedy_update(sq_backend *be, int N, sq_ref ids, sq_ref finished, int eos,
                                  sq_ref hist);
seqcl_status sq_ocl_argmax_greedy(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                                  sq_ref ids, sq_ref finished, int eos, sq_ref hist);

/* ---- beam (ops_beam.c) ---- */
seqcl_status sq_ocl_beam_topk(sq_backend *be, int N, int V, sq_ref x, int ld, int K, sq_ref vals,
                              sq_ref ids);
seqcl_status sq_ocl_beam_select(sq_backend *be, const sq_beam_args *a);
seqcl_status sq_ocl_gather_rows(sq_backend *be, int N, int D, sq_ref src, sq_ref idx,
                                sq_ref dst);

/* ---- dropout (ops_dropout.c) ---- */
seqcl_status sq_ocl_dropout(sq_backend *be, const sq_dropout_args *a);

/* ---- optim (ops_optim.c) ---- */
seqcl_status sq_ocl_sum_squares(sq_backend *be, size_t count, sq_ref x, sq_ref out);
seqcl_status sq_ocl_scale(sq_backend *be, size_t count, sq_ref x, float s);
seqcl_status sq_ocl_adam(sq_backend *be, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                         float b1, float b2, float eps, float step_size, float bc2_sqrt);

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
