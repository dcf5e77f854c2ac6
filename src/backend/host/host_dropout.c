/* Host dropout (backend.h, sq_dropout_args): Philox4x32-10 per group of four
 * elements, rows split across the pool (elementwise, so any split gives the
 * same bits). kernels/dropout.cl is the same arithmetic. */
#include "backend/backend.h"
#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy
 * as 1, 2, 3", SC 2011), the Random123 constants; tests check its published
 * answers. */
static void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int i = 0; i < 10; i++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1, c3 = (uint32_t)p0, c0 = n0, c2 = n2;
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

void sq_host_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  philox4x32_10(ctr, key, out);
}

/* PHILOX_LANES consecutive blocks (counters first, first + 1, ...; the other
 * counter words and the key shared), word i of block b to out[4 b + i]: the
 * same rounds as philox4x32_10, written over arrays of independent blocks so
 * the compiler runs them as vectors (one block at a time is a chain of 20
 * dependent multiplies per four elements). */
enum { PHILOX_LANES = 16 };

SQ_HOT_CLONES
static void philox_blocks(uint32_t first, const uint32_t ctr[3], const uint32_t key[2],
                          uint32_t out[4 * PHILOX_LANES]) {
  uint32_t c0[PHILOX_LANES], c1[PHILOX_LANES], c2[PHILOX_LANES], c3[PHILOX_LANES];
  for (int b = 0; b < PHILOX_LANES; b++)
    c0[b] = first + (uint32_t)b, c1[b] = ctr[0], c2[b] = ctr[1], c3[b] = ctr[2];
  uint32_t k0 = key[0], k1 = key[1];
  for (int i = 0; i < 10; i++) {
    for (int b = 0; b < PHILOX_LANES; b++) {
      uint64_t p0 = (uint64_t)0xD2511F53u * c0[b], p1 = (uint64_t)0xCD9E8D57u * c2[b];
      uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[b] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[b] ^ k1;
      c1[b] = (uint32_t)p1, c3[b] = (uint32_t)p0, c0[b] = n0, c2[b] = n2;
    }
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
  }
  for (int b = 0; b < PHILOX_LANES; b++)
    out[4 * b] = c0[b], out[4 * b + 1] = c1[b], out[4 * b + 2] = c2[b], out[4 * b + 3] = c3[b];
}

/* One full draw of 4 * PHILOX_LANES elements: the scalar select below, W
 * lanes at a time (GCC's -O2 keeps the scalar loop scalar), compiled per
 * vector width (host_math.h, SQ_HOT_BY_WIDTH); elementwise, so the same bits
 * at every width. */
#define KEEP_BLOCK_DEFINE(SUF, ATTR, VF, VI, W, P)                                          \
  ATTR static void keep_block_##SUF(const uint32_t *word, uint32_t threshold, float scale,  \
                                    const float *x, float *y) {                            \
    typedef uint32_t vu __attribute__((vector_size(sizeof(VF))));                          \
    for (int i = 0; i < 4 * PHILOX_LANES; i += (W)) {                                      \
      vu w;                                                                                \
      VF v;                                                                                \
      memcpy(&w, word + i, sizeof w);                                                      \
      memcpy(&v, x + i, sizeof v);                                                         \
      v = SQ_HOT_CAT(P, select)((VI)(w >= threshold), v * scale, (VF){0});                 \
      memcpy(y + i, &v, sizeof v);                                                         \
    }                                                                                      \
  }
SQ_HOT_WIDTHS(KEEP_BLOCK_DEFINE)

/* Element e = r * cols + c takes word e % 4 of block e / 4; a row's words are
 * drawn PHILOX_LANES blocks at a time from the block of its first element
 * (blocks a row shares with its neighbours are drawn by both: the same words). */
static void dropout_rows(void *arg, int lo, int hi) {
  const sq_dropout_args *a = arg;
  const float *x = (const float *)a->x.buf->ptr + a->x.off;
  float *y = (float *)a->y.buf->ptr + a->y.off;
  uint32_t word[4 * PHILOX_LANES];
  for (int r = lo; r < hi; r++) {
    const float *xr = x + (size_t)r * a->ldx;
    float *yr = y + (size_t)r * a->ldy;
    const uint64_t e0 = (uint64_t)r * (uint64_t)a->cols, base = e0 & ~(uint64_t)3;
    for (uint64_t w0 = base; w0 < e0 + (uint64_t)a->cols; w0 += 4 * PHILOX_LANES) {
      philox_blocks((uint32_t)(w0 >> 2), a->ctr, a->key, word);
      const uint64_t from = w0 > e0 ? w0 : e0;
      uint64_t to = w0 + 4 * PHILOX_LANES;
      if (from == w0 && to <= e0 + (uint64_t)a->cols) {
        SQ_HOT_PICK(keep_block)(word, a->threshold, a->scale, xr + (w0 - e0), yr + (w0 - e0));
        continue;
      }
      if (to > e0 + (uint64_t)a->cols) to = e0 + (uint64_t)a->cols;
      for (uint64_t e = from; e < to; e++) {
        const size_t c = (size_t)(e - e0);
        yr[c] = word[e - w0] >= a->threshold ? xr[c] * a->scale : 0.0f;
      }
    }
  }
}

seqcl_status sq_host_dropout(sq_backend *be, const sq_dropout_args *a) {
  sq_pool_for(be, a->rows, 40.0 * a->rows * a->cols, dropout_rows, (void *)a);
  return SEQCL_OK;
}
