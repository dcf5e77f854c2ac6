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


/* Units [k, k + w) of one row (w lanes of VF at most): the forward keeps
 * r, z, n and W_hn h + b_hn in sv (optional); the backward reads them from sv
 * or, without it, computes them again the same way. An absent bias adds 0. */
#define GRU_TRAIN_DEFINE(P, VF, LD, ST)                                                       \
  static inline __attribute__((always_inline)) VF P##opt(const float *b, int k, int w) {      \
    return b ? LD(b + k, w) : (VF){0};                                                        \
  }                                                                                           \
  static inline __attribute__((always_inline)) void P##gates(                                 \
      int H, int k, int w, const float *gi, const float *gh, const float *bi,                 \
      const float *bh, VF *r, VF *z, VF *nn, VF *hn) {                                        \
    *r = P##sigmoid(LD(gi + k, w) + LD(gh + k, w) + P##opt(bi, k, w) + P##opt(bh, k, w));     \
    *z = P##sigmoid(LD(gi + H + k, w) + LD(gh + H + k, w) + P##opt(bi, H + k, w) +            \
                    P##opt(bh, H + k, w));                                                    \
    *hn = LD(gh + 2 * H + k, w) + P##opt(bh, 2 * H + k, w);                                   \
    *nn = P##tanh(LD(gi + 2 * H + k, w) + P##opt(bi, 2 * H + k, w) + *r * *hn);               \
  }                                                                                           \
  static inline __attribute__((always_inline)) void P##fwd_chunk(                             \
      int H, int k, int w, const float *gi, const float *gh, const float *bi,                 \
      const float *bh, float *h, float *out, float *sv) {                                     \
    VF r, z, nn, hn;                                                                          \
    P##gates(H, k, w, gi, gh, bi, bh, &r, &z, &nn, &hn);                                      \
    VF hv = (1.0f - z) * nn + z * LD(h + k, w);                                               \
    ST(h + k, hv, w);                                                                         \
    if (out) ST(out + k, hv, w);                                                              \
    if (sv) {                                                                                 \
      ST(sv + k, r, w);                                                                       \
      ST(sv + H + k, z, w);                                                                   \
      ST(sv + 2 * H + k, nn, w);                                                              \
      ST(sv + 3 * H + k, hn, w);                                                              \
    }                                                                                         \
  }                                                                                           \
  static inline __attribute__((always_inline)) void P##bwd_chunk(                             \
      int H, int k, int w, const float *gi, const float *gh, const float *bi,                 \
      const float *bh, const float *sv, const float *hp, const float *dout, float *dh,        \
      float *dgi, float *dgh) {                                                               \
    VF r, z, nn, hn;                                                                          \
    if (sv) {                                                                                 \
      r = LD(sv + k, w), z = LD(sv + H + k, w), nn = LD(sv + 2 * H + k, w);                   \
      hn = LD(sv + 3 * H + k, w);                                                             \
    } else {                                                                                  \
      P##gates(H, k, w, gi, gh, bi, bh, &r, &z, &nn, &hn);                                    \
    }                                                                                         \
    VF d = LD(dh + k, w) + P##opt(dout, k, w);                                                \
    VF dan = d * (1.0f - z) * (1.0f - nn * nn);                                               \
    VF daz = d * (LD(hp + k, w) - nn) * z * (1.0f - z);                                       \
    VF dar = dan * hn * r * (1.0f - r);                                                       \
    ST(dgi + k, dar, w);                                                                      \
    ST(dgi + H + k, daz, w);                                                                  \
    ST(dgi + 2 * H + k, dan, w);                                                              \
    ST(dgh + k, dar, w);                                                                      \
    ST(dgh + H + k, daz, w);                                                                  \
    ST(dgh + 2 * H + k, dan * r, w);                                                          \
    ST(dh + k, d * z, w);                                                                     \
  }

/* The sigmoid and tanh the macro calls, by prefix */
#define g16_sigmoid sq_v16_sigmoid
#define g16_tanh sq_v16_tanh
#define g4_sigmoid sq_v_sigmoid
#define g4_tanh sq_v_tanh

#if SQ_HOT_BY_WIDTH /* 16 lanes for AVX-512 */
static inline __attribute__((always_inline)) sq_vf16 ld16(const float *p, int w) {
  (void)w; /* always 16 */
  sq_vf16 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline __attribute__((always_inline)) void st16(float *p, sq_vf16 v, int w) {
  (void)w;
  memcpy(p, &v, sizeof v);
}
GRU_TRAIN_DEFINE(g16_, sq_vf16, ld16, st16)
#endif
/* 4 lanes, the last chunk partial (sq_v_load/store take the lane count) */
#define ld4(p, w) sq_v_load((p), (w))
#define st4(p, v, w) sq_v_store((p), (v), (w))
GRU_TRAIN_DEFINE(g4_, sq_vf, ld4, st4)

#if SQ_HOT_BY_WIDTH /* 8 lanes for AVX2 */
static inline __attribute__((always_inline)) sq_vf8 ld8(const float *p, int w) {
  (void)w; /* always 8 */
  sq_vf8 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline __attribute__((always_inline)) void st8(float *p, sq_vf8 v, int w) {
  (void)w;
  memcpy(p, &v, sizeof v);
}
#define g8_sigmoid sq_v8_sigmoid
#define g8_tanh sq_v8_tanh
GRU_TRAIN_DEFINE(g8_, sq_vf8, ld8, st8)
#endif

/* One row's forward and backward, W lanes of prefix P at a time then 4 (the
 * last chunk partial), compiled per width (host_math.h, SQ_HOT_BY_WIDTH). */
#define GRU_ROWS_DEFINE(SUF, ATTR, P, W)                                                      \
  ATTR static void fwd_row_##SUF(int H, const float *gi, const float *gh, const float *bi,    \
                                 const float *bh, float *h, float *out, float *sv) {          \
    int k = 0;                                                                                \
    for (; k + (W) <= H; k += (W)) P##fwd_chunk(H, k, (W), gi, gh, bi, bh, h, out, sv);       \
    for (; k < H; k += SQ_VW)                                                                 \
      g4_fwd_chunk(H, k, H - k < SQ_VW ? H - k : SQ_VW, gi, gh, bi, bh, h, out, sv);          \
  }                                                                                           \
  ATTR static void bwd_row_##SUF(int H, const float *gi, const float *gh, const float *bi,    \
                                 const float *bh, const float *sv, const float *hp,           \
                                 const float *dout, float *dh, float *dgi, float *dgh) {      \
    int k = 0;                                                                                \
    for (; k + (W) <= H; k += (W))                                                            \
      P##bwd_chunk(H, k, (W), gi, gh, bi, bh, sv, hp, dout, dh, dgi, dgh);                    \
    for (; k < H; k += SQ_VW)                                                                 \
      g4_bwd_chunk(H, k, H - k < SQ_VW ? H - k : SQ_VW, gi, gh, bi, bh, sv, hp, dout, dh, dgi, \
                   dgh);                                                                      \
  }

#if SQ_HOT_BY_WIDTH
GRU_ROWS_DEFINE(v4, SQ_HOT_V4, g16_, SQ_VW16)
GRU_ROWS_DEFINE(v3, SQ_HOT_V3, g8_, SQ_VW8)
#endif
GRU_ROWS_DEFINE(base, , g4_, SQ_VW)

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
