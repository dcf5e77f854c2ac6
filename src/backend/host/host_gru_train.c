/* The GRU step of training on the host: the forward that keeps its gates
 * (gru_fwd) and the backward of the gates (gru_gates_bwd), rows split across
 * the host pool. Hidden units run 16 lanes at a time with AVX-512, 8 with
 * AVX2, then 4, then the rest (the vector sigmoid/tanh of host_math.h, one
 * macro for every width, so every unit gets the same operations whatever its
 * lane: the same bits), compiled per width (host_math.h, SQ_HOT_BY_WIDTH).
 * The arithmetic is the scalar form's, term for term, in the same order. */
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* Units [k, k + w) of one row (w lanes of VF at most, the rest of a partial
 * vector 0): the forward keeps r, z, n and W_hn h + b_hn in sv (optional);
 * the backward reads them from sv or, without it, computes them again the
 * same way. An absent bias adds 0. Defined per width (SQ_HOT_WIDTHS) and
 * inlined into the rows below. */
#define GRU_TRAIN_DEFINE(SUF, ATTR, VF, VI, W, P)                                                 \
  static inline __attribute__((always_inline)) VF ld_##SUF(const float *p, int w) {               \
    VF v = {0};                                                                                   \
    memcpy(&v, p, (size_t)w * sizeof(float));                                                     \
    return v;                                                                                     \
  }                                                                                               \
  static inline __attribute__((always_inline)) void st_##SUF(float *p, VF v, int w) {             \
    memcpy(p, &v, (size_t)w * sizeof(float));                                                     \
  }                                                                                               \
  static inline __attribute__((always_inline)) VF opt_##SUF(const float *b, int k, int w) {       \
    return b ? ld_##SUF(b + k, w) : (VF){0};                                                      \
  }                                                                                               \
  static inline __attribute__((always_inline)) void gates_##SUF(                                  \
      int H, int k, int w, const float *gi, const float *gh, const float *bi,                     \
      const float *bh, VF *r, VF *z, VF *nn, VF *hn) {                                            \
    *r = SQ_HOT_CAT(P, sigmoid)(ld_##SUF(gi + k, w) + ld_##SUF(gh + k, w) + opt_##SUF(bi, k, w) + \
                                opt_##SUF(bh, k, w));                                             \
    *z = SQ_HOT_CAT(P, sigmoid)(ld_##SUF(gi + H + k, w) + ld_##SUF(gh + H + k, w) +               \
                                opt_##SUF(bi, H + k, w) + opt_##SUF(bh, H + k, w));               \
    *hn = ld_##SUF(gh + 2 * H + k, w) + opt_##SUF(bh, 2 * H + k, w);                              \
    *nn = SQ_HOT_CAT(P, tanh)(ld_##SUF(gi + 2 * H + k, w) + opt_##SUF(bi, 2 * H + k, w) +         \
                              *r * *hn);                                                          \
  }                                                                                               \
  static inline __attribute__((always_inline)) void fwd_chunk_##SUF(                              \
      int H, int k, int w, const float *gi, const float *gh, const float *bi,                     \
      const float *bh, float *h, float *out, float *sv) {                                         \
    VF r, z, nn, hn;                                                                              \
    gates_##SUF(H, k, w, gi, gh, bi, bh, &r, &z, &nn, &hn);                                       \
    VF hv = (1.0f - z) * nn + z * ld_##SUF(h + k, w);                                             \
    st_##SUF(h + k, hv, w);                                                                       \
    if (out) st_##SUF(out + k, hv, w);                                                            \
    if (sv) {                                                                                     \
      st_##SUF(sv + k, r, w);                                                                     \
      st_##SUF(sv + H + k, z, w);                                                                 \
      st_##SUF(sv + 2 * H + k, nn, w);                                                            \
      st_##SUF(sv + 3 * H + k, hn, w);                                                            \
    }                                                                                             \
  }                                                                                               \
  static inline __attribute__((always_inline)) void bwd_chunk_##SUF(                              \
      int H, int k, int w, const float *gi, const float *gh, const float *bi,                     \
      const float *bh, const float *sv, const float *hp, const float *dout, float *dh,            \
      float *dgi, float *dgh) {                                                                   \
    VF r, z, nn, hn;                                                                              \
    if (sv) {                                                                                     \
      r = ld_##SUF(sv + k, w), z = ld_##SUF(sv + H + k, w);                                       \
      nn = ld_##SUF(sv + 2 * H + k, w);                                                           \
      hn = ld_##SUF(sv + 3 * H + k, w);                                                           \
    } else {                                                                                      \
      gates_##SUF(H, k, w, gi, gh, bi, bh, &r, &z, &nn, &hn);                                     \
    }                                                                                             \
    VF d = ld_##SUF(dh + k, w) + opt_##SUF(dout, k, w);                                           \
    VF dan = d * (1.0f - z) * (1.0f - nn * nn);                                                   \
    VF daz = d * (ld_##SUF(hp + k, w) - nn) * z * (1.0f - z);                                     \
    VF dar = dan * hn * r * (1.0f - r);                                                           \
    st_##SUF(dgi + k, dar, w);                                                                    \
    st_##SUF(dgi + H + k, daz, w);                                                                \
    st_##SUF(dgi + 2 * H + k, dan, w);                                                            \
    st_##SUF(dgh + k, dar, w);                                                                    \
    st_##SUF(dgh + H + k, daz, w);                                                                \
    st_##SUF(dgh + 2 * H + k, dan * r, w);                                                        \
    st_##SUF(dh + k, d * z, w);                                                                   \
  }

/* One row's forward and backward, W lanes at a time, then 4, then the rest
 * (the full chunks at a constant width, so their copies are plain vector
 * loads), compiled per width (host_math.h, SQ_HOT_WIDTHS). */
#define GRU_ROWS_DEFINE(SUF, ATTR, VF, VI, W, P)                                              \
  ATTR static void fwd_row_##SUF(int H, const float *gi, const float *gh, const float *bi,    \
                                 const float *bh, float *h, float *out, float *sv) {          \
    int k = 0;                                                                                \
    for (; k + (W) <= H; k += (W)) fwd_chunk_##SUF(H, k, (W), gi, gh, bi, bh, h, out, sv);    \
    for (; k + SQ_VW <= H; k += SQ_VW) fwd_chunk_base(H, k, SQ_VW, gi, gh, bi, bh, h, out, sv); \
    if (k < H) fwd_chunk_base(H, k, H - k, gi, gh, bi, bh, h, out, sv);                      \
  }                                                                                           \
  ATTR static void bwd_row_##SUF(int H, const float *gi, const float *gh, const float *bi,    \
                                 const float *bh, const float *sv, const float *hp,           \
                                 const float *dout, float *dh, float *dgi, float *dgh) {      \
    int k = 0;                                                                                \
    for (; k + (W) <= H; k += (W))                                                            \
      bwd_chunk_##SUF(H, k, (W), gi, gh, bi, bh, sv, hp, dout, dh, dgi, dgh);                 \
    for (; k + SQ_VW <= H; k += SQ_VW)                                                        \
      bwd_chunk_base(H, k, SQ_VW, gi, gh, bi, bh, sv, hp, dout, dh, dgi, dgh);                \
    if (k < H) bwd_chunk_base(H, k, H - k, gi, gh, bi, bh, sv, hp, dout, dh, dgi, dgh);        \
  }

SQ_HOT_WIDTHS(GRU_TRAIN_DEFINE)
SQ_HOT_WIDTHS(GRU_ROWS_DEFINE)

static void gru_gates_bwd_rows(void *arg, int lo, int hi) {
  const sq_gru_bwd_args *g = arg;
  const int H = g->H;
  const float *bih = sq_host_f32_opt(g->b_ih), *bhh = sq_host_f32_opt(g->b_hh);
  const int32_t *lens = sq_host_i32_opt(g->lens);
  for (int n = lo; n < hi; n++) {
    int len = lens ? lens[n] : g->step + 1;
    float *dgh = sq_host_f32(g->dgh) + (size_t)n * g->ld_dgh;
    if (g->step >= len) {
      /* Inactive: the state passed through unchanged, so dh stays and the gates
       * get no gradient. dgi has no slot for this row at this step (t >= len is
       * padding); the caller zeroes dgi once so padding stays 0. */
      memset(dgh, 0, sizeof(float) * 3 * (size_t)H);
      continue;
    }
    int t = g->reverse ? len - 1 - g->step : g->step;
    const size_t at = (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *dout =
        g->dout.buf ? sq_host_f32(g->dout) + (size_t)n * g->dout_sn + (size_t)t * g->dout_st : NULL;
    const float *sv =
        g->saved.buf ? sq_host_f32(g->saved) + (size_t)n * g->sv_sn + (size_t)t * g->sv_st : NULL;
    SQ_HOT_PICK(bwd_row)(H, sq_host_f32(g->gi) + at, sq_host_f32(g->gh) + (size_t)n * g->ld_gh,
                         bih, bhh, sv, sq_host_f32(g->h_prev) + (size_t)n * H, dout,
                         sq_host_f32(g->dh) + (size_t)n * H, sq_host_f32(g->dgi) + at, dgh);
  }
}

seqcl_status sq_host_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g) {
  sq_pool_for(be, g->N, 60.0 * g->N * g->H, gru_gates_bwd_rows, (void *)g);
  return SEQCL_OK;
}

typedef struct gru_fwd_job {
  const sq_gru_args *g;
  sq_ref saved;
  size_t sv_sn, sv_st;
} gru_fwd_job;

static void gru_fwd_rows(void *arg, int lo, int hi) {
  const gru_fwd_job *job = arg;
  const sq_gru_args *g = job->g;
  const int H = g->H;
  const float *bih = sq_host_f32_opt(g->b_ih), *bhh = sq_host_f32_opt(g->b_hh);
  const int32_t *lens = sq_host_i32_opt(g->lens);
  for (int n = lo; n < hi; n++) {
    int len = lens ? lens[n] : g->step + 1;
    if (g->step >= len) continue;
    int t = g->reverse ? len - 1 - g->step : g->step;
    float *out = g->out.buf ? sq_host_f32(g->out) + (size_t)n * g->out_sn + (size_t)t * g->out_st
                            : NULL;
    float *sv = job->saved.buf
                    ? sq_host_f32(job->saved) + (size_t)n * job->sv_sn + (size_t)t * job->sv_st
                    : NULL;
    SQ_HOT_PICK(fwd_row)(H, sq_host_f32(g->gi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st,
                sq_host_f32(g->gh) + (size_t)n * g->ld_gh, bih, bhh,
                sq_host_f32(g->h) + (size_t)n * H, out, sv);
  }
}

seqcl_status sq_host_gru_fwd(sq_backend *be, const sq_gru_args *g, sq_ref savedr, size_t sv_sn,
                             size_t sv_st) {
  gru_fwd_job job = {g, savedr, sv_sn, sv_st};
  sq_pool_for(be, g->N, 100.0 * g->N * g->H, gru_fwd_rows, &job);
  return SEQCL_OK;
}
