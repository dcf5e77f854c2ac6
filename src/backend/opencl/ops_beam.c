/* Beam search slots on OpenCL devices (kernels/beam.cl): per-row top-K, the
 * per-sentence selection step and the state gather, one launch each. */
#include "backend/opencl/ops_internal.h"

#define TOPK_WG 64
#define SELECT_WG 64
#define GATHER_WG 64

seqcl_status sq_ocl_beam_topk(sq_backend *be, int N, int V, sq_ref x, int ld, int K, sq_ref vals,
                              sq_ref ids) {
  sq_ocl *o = sq_ocl_of(be);
  if ((size_t)N * (size_t)ld > (size_t)INT_MAX || (size_t)N * (size_t)K > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "beam_topk: %d rows of stride %d exceed the kernels' int indices", N, ld);
  cl_kernel k;
  /* the merge's two forms (beam.cl): by work-item 0 on CPU-type devices,
   * by a tree elsewhere */
  SQ_TRY(sq_ocl_kernel(o, "beam.cl", o->cpu_device ? "" : "-DTOPK_TREE", "beam_topk", &k));
  size_t wg = sq_ocl_wg_size(o, k, TOPK_WG);
  /* the merge buffers must fit the device's local memory */
  while (wg > 1 && wg * ((size_t)K * 8 + 4) > (size_t)o->local_mem) wg /= 2;
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "beam_topk"));
  SQ_ARG(o, k, 2, ld);
  SQ_ARG(o, k, 3, V);
  SQ_ARG(o, k, 4, K);
  SQ_TRY(sq_ocl_ref_args(o, k, 5, vals, "beam_topk"));
  SQ_TRY(sq_ocl_ref_args(o, k, 7, ids, "beam_topk"));
  SQ_TRY(sq_ocl_arg(o, k, 9, wg * (size_t)K * sizeof(cl_float), NULL, "beam_topk"));
  SQ_TRY(sq_ocl_arg(o, k, 10, wg * (size_t)K * sizeof(cl_int), NULL, "beam_topk"));
  SQ_TRY(sq_ocl_arg(o, k, 11, wg * sizeof(cl_float), NULL, "beam_topk"));
  size_t global = (size_t)N * wg;
  return sq_ocl_launch(o, k, 1, &global, &wg, "beam_topk");
}

seqcl_status sq_ocl_beam_select(sq_backend *be, const sq_beam_args *a) {
  sq_ocl *o = sq_ocl_of(be);
  if ((size_t)a->max_steps * (size_t)a->n * (size_t)a->K > (size_t)INT_MAX ||
      (size_t)a->n * (size_t)a->K * (size_t)a->K > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "beam_select: %d sentences x beam %d x %d steps exceed the kernels' int "
                   "indices",
                   a->n, a->K, a->max_steps);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "beam.cl", "", "beam_select", &k));
  SQ_ARG(o, k, 0, a->n);
  SQ_ARG(o, k, 1, a->K);
  SQ_ARG(o, k, 2, a->step);
  SQ_ARG(o, k, 3, a->max_steps);
  SQ_ARG(o, k, 4, a->eos);
  const sq_ref refs[] = {a->vals,     a->tok,      a->cum,      a->live,     a->ids,
                         a->parent,   a->tok_hist, a->par_hist, a->fin_lp,   a->fin_step,
                         a->fin_par,  a->fin_count, a->done};
  for (cl_uint i = 0; i < sizeof refs / sizeof refs[0]; i++)
    SQ_TRY(sq_ocl_ref_args(o, k, 5 + 2 * i, refs[i], "beam_select"));
  size_t local = SELECT_WG, global = sq_round_up((size_t)a->n, local);
  return sq_ocl_launch(o, k, 1, &global, &local, "beam_select");
}

seqcl_status sq_ocl_gather_rows(sq_backend *be, int N, int D, sq_ref src, sq_ref idx,
                                sq_ref dst) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "beam.cl", "", "gather_rows", &k));
  SQ_ARG(o, k, 0, N);
  SQ_ARG(o, k, 1, D);
  SQ_TRY(sq_ocl_ref_args(o, k, 2, src, "gather_rows"));
  SQ_TRY(sq_ocl_ref_args(o, k, 4, idx, "gather_rows"));
  SQ_TRY(sq_ocl_ref_args(o, k, 6, dst, "gather_rows"));
  size_t lx = sq_ocl_wg_size(o, k, GATHER_WG);
  size_t local[2] = {lx, 1};
  size_t global[2] = {sq_round_up((size_t)D, lx), (size_t)N};
  return sq_ocl_launch(o, k, 2, global, local, "gather_rows");
}
