/* The linear family on the host: the GEMM slot (OpenBLAS, or the own
 * kernel of gemm_nt.c for the decoder's small products), the bias and its
 * gradient, and the tanh that follows the decoder's combining layer with its
 * backward. */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "backend/host/gemm_direct.h"
#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"
#include "core/ctx.h"
#include "core/halfwidth.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* One product (or strided batch of products) and how it is split across the
 * pool: by batch when there are enough batches, else along the longer side of
 * C. Every part packs its own share of the operand along the split side and
 * all of the other, so splitting the shorter side would pack the larger
 * operand once per part: at decode shapes (C = [N, 3H] = [batch, 3H] x W^T)
 * packing W was 15% of a step when the rows were split. Rows are split only
 * while each part keeps GEMM_MIN_ROWS of them. Every element of C is computed
 * by exactly one part. */
enum { SPLIT_BATCH, SPLIT_ROWS, SPLIT_COLS, GEMM_MIN_ROWS = 8 };
#define GEMM_BLAS_SMALL 1e6 /* see sq_host_gemm */

/* How many rows the own kernel takes (see sq_host_gemm). OpenBLAS's
 * AVX-512 kernels (the cores it names SkylakeX, Cooperlake, SapphireRapids)
 * beat it from about 24 rows on (AMD family 25, [M, 768] x [768, 256]^T: 0.94x
 * at 24 rows, 1.2x at 64, 1.4x at [64, 384] x [384, 128]^T, where the own
 * kernel's per-block lane folding costs most); where OpenBLAS does not know
 * the CPU and runs its Haswell AVX2 kernels (AMD family 26) the own kernel wins
 * up to 256 rows. Asked once: the answer is the same for every product. */
static int own_max_rows(void) {
  static atomic_int known = -1; /* a race only repeats the same answer */
  int k = atomic_load(&known);
  if (k < 0) {
    k = 256;
#ifdef OPENBLAS_VERSION
    const char *core = openblas_get_corename();
    if (core && (strcmp(core, "SkylakeX") == 0 || strcmp(core, "Cooperlake") == 0 ||
                 strcmp(core, "SapphireRapids") == 0))
      k = 24;
#endif
    atomic_store(&known, k);
  }
  return k;
}

/* Where gemm_direct.c's products beat OpenBLAS 0.3.21's AVX-512 kernels
 * (one core of an AMD family 26 CPU, its packing included; own / OpenBLAS
 * time with the operands in cache, bench/RESULTS.md for them coming from
 * L3): C = A B with few rows of A (the backward's per-step
 * [rows, 3H] x [3H, H] products: 0.52 at 8 rows, 0.79 at 24, 0.96 at 64,
 * 1.04 at 128, [rows, 1536] x [1536, 512]) or few columns (0.85-0.95 up to
 * 256 columns at 800 x 768 rows), and C = A^T B with few rows or columns of
 * C (weight gradients of small layers: 0.83-0.92 up to 128; 1.14 at
 * [1536, 512] over 870 rows). */
static int direct_wins(int ta, int M, int N, int K) {
  if (ta) return M <= 128 || N <= 128;
  return M <= 64 || (N <= 256 && K >= 64);
}

typedef struct gemm_job {
  int ta, tb, M, N, K, lda, ldb, ldc, batch, parts, how;
  int own;    /* sq_gemm_nt instead of OpenBLAS */
  int direct; /* sq_gemm_nn (ta = tb = 0) or sq_gemm_tn (ta = 1, tb = 0) instead */
  float alpha, beta;
  const float *a, *b;
  const uint16_t *b16; /* own only: B's 16-bit copy (sq_buf.half), else NULL */
  int b16_width;
  /* B packed (weights, sq_host_packed_get), else NULL; the
   * columns are then split in whole panels of 16. kn: B is [K, N] (tb = 0),
   * packed by its columns. half_panels: B's 16-bit panels at half_width
   * (weights held at a reduced precision) instead of panels */
  const float *panels;
  int kn;
  const uint32_t *half_panels;
  int half_width;
  float *c;
  size_t sa, sb, sc;
} gemm_job;

/* With beta = 0 OpenBLAS overwrites C without reading it, so C may be
 * uninitialised. One row (decoding at batch 1) runs as a GEMV, which OpenBLAS
 * runs at several times sgemm's speed for this shape. */
static void gemm_one(const gemm_job *g, int M, int N, const float *a, const float *b, float *c) {
  if (g->panels) /* columns from (b - B) / ldb (kn: b - B) on: a whole panel's first */
    sq_gemm_nt_panels(M, N, g->K, g->alpha, a, g->lda, g->panels,
                      (int)(g->kn ? b - g->b : (b - g->b) / g->ldb), g->beta, c, g->ldc);
  else if (g->half_panels) /* columns from (b - B) / ldb on, as panels' */
    sq_gemm_nt_half_panels(M, N, g->K, g->alpha, a, g->lda, g->half_panels,
                           (int)((b - g->b) / g->ldb), g->half_width, g->beta, c, g->ldc);
  else if (g->own && g->b16) /* the same values as b, read as 16-bit ones */
    sq_gemm_nt_half(M, N, g->K, g->alpha, a, g->lda, g->b16 + (b - g->b), g->ldb, g->b16_width,
                    g->beta, c, g->ldc);
  else if (g->own)
    sq_gemm_nt(M, N, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
  else if (g->direct && g->ta)
    sq_gemm_tn(M, N, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
  else if (g->direct)
    sq_gemm_nn(M, N, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
  else if (M == 1 && g->tb && !g->ta)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, g->K, g->alpha, b, g->ldb, a, 1, g->beta, c, 1);
  else
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                M, N, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
}

static void gemm_part(void *arg, int p) {
  const gemm_job *g = arg;
  int lo, hi;
  if (g->how == SPLIT_BATCH) {
    sq_pool_range(g->batch, g->parts, p, &lo, &hi);
    for (int i = lo; i < hi; i++)
      gemm_one(g, g->M, g->N, g->a + (size_t)i * g->sa, g->b + (size_t)i * g->sb,
               g->c + (size_t)i * g->sc);
    return;
  }
  const int rows = g->how == SPLIT_ROWS;
  if (!rows && (g->panels || g->half_panels)) { /* whole panels of 16 columns */
    const int w = 16;
    sq_pool_range((g->N + w - 1) / w, g->parts, p, &lo, &hi);
    lo *= w;
    hi = hi * w < g->N ? hi * w : g->N;
  } else {
    sq_pool_range(rows ? g->M : g->N, g->parts, p, &lo, &hi);
  }
  if (hi <= lo) return;
  for (int i = 0; i < g->batch; i++) {
    const float *a = g->a + (size_t)i * g->sa, *b = g->b + (size_t)i * g->sb;
    float *c = g->c + (size_t)i * g->sc;
    if (rows) /* rows lo..hi of op(A) and C */
      gemm_one(g, hi - lo, g->N, a + (g->ta ? (size_t)lo : (size_t)lo * g->lda), b,
               c + (size_t)lo * g->ldc);
    else /* columns lo..hi of op(B) and C */
      gemm_one(g, g->M, hi - lo, a, b + (g->tb ? (size_t)lo * g->ldb : (size_t)lo), c + lo);
  }
}

seqcl_status sq_host_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                              sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb,
                              float beta, sq_ref C, int ldc, size_t sc, int batch) {
  (void)be;
  gemm_job g = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc,
                .batch = batch, .parts = 1, .how = SPLIT_BATCH, .alpha = alpha, .beta = beta,
                .a = sq_host_f32(A), .b = sq_host_f32(B), .c = sq_host_f32(C),
                .sa = sa, .sb = sb, .sc = sc};
  /* The own kernel for the nn.Linear layout where the CPU runs it, up to
   * own_max_rows() rows, over what is not read packed (below: everything
   * but weights, and weights under --ablate packed_weights): it streams A
   * past each block of four rows of B, so it wins while A stays in cache
   * and OpenBLAS's packing of B is not paid back (decode steps at small
   * batches; at batch 64, H 256 1.5x OpenBLAS's Haswell kernels on AMD
   * family 26), and OpenBLAS's packed blocking wins beyond (the encoder's
   * hoisted input product, 1280 x 768 x 128: 0.85x). Decided on the whole
   * product, before any split, so the bits do not depend on the thread
   * count. `seqcl bench` shows both. */
  g.own = !ta && tb && M <= own_max_rows() && sq_gemm_nt_available() &&
          !(sq_ablated(be->ctx) & SQ_ABL_SMALL_GEMM);
  /* Weights (a buffer's weights range: a loaded model's, training's
   * parameters) are read packed (host_packed.c) at every row count, rather
   * than in place by the 4 x 4 blocks or packed again by OpenBLAS in every
   * product: panels of 16 columns, which the 8 x 32 blocks (and, for one row,
   * four panels at a time) read in the order they use them, broadcasting A,
   * with no lane folding. One Zen 4 core, B in L2 or L3 (bench/RESULTS.md):
   * against the 4 x 4 blocks 1.2-1.5x at one row, 1.6-2.0x at 2-24 rows of
   * [768, 128], [256, 256], [1000, 256] and [1024, 256], 1.9-2.6x at
   * [8000, 256]; against OpenBLAS 1.2-1.5x at decode's [64, K] x [N, K]^T.
   * Weights held at a reduced precision are read as 16-bit panels: half the
   * bytes, the float32 panels' bits over the rounded values, so a
   * reduced-precision product still equals float32's over the rounded
   * weights bit for bit, at every row count. One batch only (each batch's B
   * would be another copy), and decided before any split. */
  if (!ta && batch == 1 && sq_gemm_nt_available() && !(sq_ablated(be->ctx) & SQ_ABL_PACKED) &&
      (tb ? sq_host_packable(B, N, K, ldb) : sq_host_packable(B, K, N, ldb))) {
    const void *panels = NULL;
    g.own = 0;
    if (tb && B.buf->half) {
      g.half_width = B.buf->half_width;
      SQ_TRY(sq_host_packed_get(be, B, N, K, ldb,
                                g.half_width == SQ_HALF_F16 ? SQ_PACKED_F16 : SQ_PACKED_BF16,
                                &panels));
      g.half_panels = panels;
    } else if (tb) {
      SQ_TRY(sq_host_packed_get(be, B, N, K, ldb, SQ_PACKED_NK, &panels));
      g.panels = panels;
    } else {
      /* C = A W (training's dX = dY W): W's columns packed, the same panels'
       * product; the bits are sq_gemm_nn's (gemm_block8.h), OpenBLAS's pass
       * over all of W per call and the direct kernel's strided rows of W
       * (66 % of the FMA rate in a G2P step, against 90 % or more for the
       * panels) both avoided */
      SQ_TRY(sq_host_packed_get(be, B, N, K, ldb, SQ_PACKED_KN, &panels));
      g.panels = panels;
      g.kn = 1;
    }
  }
  /* The own kernel reads a reduced-precision buffer's plain 16-bit copy
   * (under --ablate packed_weights) */
  if (g.own && B.buf->half) {
    g.b16 = B.buf->half + B.off;
    g.b16_width = B.buf->half_width;
  }
  /* The backward's products where OpenBLAS's packing is not paid back
   * (direct_wins); decided on the whole product, so the bits do not depend
   * on the thread count. */
  g.direct = !g.own && !g.panels && !g.half_panels && !tb && sq_gemm_nt_available() &&
             direct_wins(ta, M, N, K) && !(sq_ablated(be->ctx) & SQ_ABL_SMALL_GEMM);
  const double work = (double)M * N * K * batch;
  const int most = sq_pool_parts(be, batch > M ? (batch > N ? batch : N) : (M > N ? M : N), work);
  if (most > 1 && batch >= most) {
    g.parts = most;
  } else if (most > 1 && M >= N && M / most >= GEMM_MIN_ROWS) {
    g.how = SPLIT_ROWS;
    g.parts = most;
  } else if (most > 1) {
    g.how = SPLIT_COLS;
    g.parts = most < N ? most : N;
  }
  /* OpenBLAS 0.3.21 runs products of at most 100^3 multiply-adds on its
   * small-matrix kernels (SkylakeX and Cooperlake), whose sums round
   * differently from its blocked ones: a part must stay above that, or the
   * bits would depend on the thread count. */
  while (!g.own && !g.panels && !g.half_panels && !g.direct && g.how != SPLIT_BATCH &&
         g.parts > 1 &&
         (double)((g.how == SPLIT_ROWS ? M : N) / g.parts) * (g.how == SPLIT_ROWS ? N : M) * K <=
             GEMM_BLAS_SMALL)
    g.parts--;
  sq_pool_run(g.parts, gemm_part, &g);
  return SEQCL_OK;
}

/* b added to each row, W columns per vector where they fill one (compiled
 * per vector width, host_math.h; elementwise, so the same bits at every
 * width). */
#define ADD_BIAS_DEFINE(SUF, ATTR, VF, VI, W, P)                                            \
  ATTR static void add_bias_rows_##SUF(int rows, int cols, float *ys, int ld,              \
                                       const float *b) {                                   \
    for (int r = 0; r < rows; r++) {                                                       \
      float *yr = ys + (size_t)r * (size_t)ld;                                             \
      int c = 0;                                                                           \
      for (; c + (W) <= cols; c += (W))                                                    \
        SQ_HOT_CAT(P, storeu)(yr + c, SQ_HOT_CAT(P, loadu)(yr + c) + SQ_HOT_CAT(P, loadu)(b + c)); \
      for (; c < cols; c++) yr[c] += b[c];                                                 \
    }                                                                                      \
  }
SQ_HOT_WIDTHS(ADD_BIAS_DEFINE)

seqcl_status sq_host_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias) {
  (void)be;
  SQ_HOT_PICK(add_bias_rows)(rows, cols, sq_host_f32(y), ld, sq_host_f32(bias));
  return SEQCL_OK;
}

seqcl_status sq_host_tanh_inplace(sq_backend *be, size_t count, sq_ref x) {
  (void)be;
  float *p = sq_host_f32(x);
  for (size_t i = 0; i < count; i++) p[i] = tanhf(p[i]);
  return SEQCL_OK;
}


typedef struct bias_grad_job {
  const float *dy;
  float *db;
  int rows, ld;
} bias_grad_job;

/* Columns [lo, hi): each column is summed over the rows in row order, so the
 * bits do not depend on the split. W columns per vector (a lane per column,
 * so the same order and bits as one column at a time, at every width; compiled
 * per vector width, host_math.h): GCC's -O2 leaves a loop of unknown length
 * scalar, and the scalar form was 3% of a G2P training step. */
#define BIAS_GRAD_DEFINE(SUF, ATTR, VF, VI, W, P)                                           \
  ATTR static void bias_grad_span_##SUF(const bias_grad_job *j, int lo, int hi) {          \
    float *db = j->db;                                                                     \
    int c = lo;                                                                            \
    for (; c + (W) <= hi; c += (W)) {                                                      \
      VF acc = SQ_HOT_CAT(P, loadu)(db + c);                                               \
      for (int r = 0; r < j->rows; r++)                                                    \
        acc += SQ_HOT_CAT(P, loadu)(j->dy + (size_t)r * (size_t)j->ld + c);                \
      SQ_HOT_CAT(P, storeu)(db + c, acc);                                                  \
    }                                                                                      \
    for (int r = 0; r < j->rows && c < hi; r++) {                                          \
      const float *restrict row = j->dy + (size_t)r * (size_t)j->ld;                       \
      for (int k = c; k < hi; k++) db[k] += row[k];                                        \
    }                                                                                      \
  }
SQ_HOT_WIDTHS(BIAS_GRAD_DEFINE)

static void bias_grad_cols(void *arg, int lo, int hi) {
  SQ_HOT_PICK(bias_grad_span)((const bias_grad_job *)arg, lo, hi);
}

seqcl_status sq_host_bias_grad(sq_backend *be, int rows, int cols, sq_ref dyr, int ld,
                               sq_ref dbr) {
  bias_grad_job j = {sq_host_f32(dyr), sq_host_f32(dbr), rows, ld};
  /* split only where each part gets 64 columns or more (cache lines of db) */
  if (cols >= 128)
    sq_pool_for(be, cols, (double)rows * cols, bias_grad_cols, &j);
  else
    bias_grad_cols(&j, 0, cols);
  return SEQCL_OK;
}

seqcl_status sq_host_tanh_bwd(sq_backend *be, size_t count, sq_ref yr, sq_ref dyr, sq_ref dxr) {
  (void)be;
  const float *y = sq_host_f32(yr), *dy = sq_host_f32(dyr);
  float *dx = sq_host_f32(dxr);
  for (size_t i = 0; i < count; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
  return SEQCL_OK;
}

