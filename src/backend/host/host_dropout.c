/* Host dropout (backend.h, sq_dropout_args): Philox4x32-10 per group of four
 * elements, rows split across the pool (elementwise, so any split gives the
 * same bits). kernels/dropout.cl is the same arithmetic. */
#include "backend/backend.h"
#include "backend/host/host.h"
#include "backend/host/pool.h"

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

static void dropout_rows(void *arg, int lo, int hi) {
  const sq_dropout_args *a = arg;
  const float *x = (const float *)a->x.buf->ptr + a->x.off;
  float *y = (float *)a->y.buf->ptr + a->y.off;
  uint32_t ctr[4] = {0, a->ctr[0], a->ctr[1], a->ctr[2]}, word[4];
  for (int r = lo; r < hi; r++) {
    const float *xr = x + (size_t)r * a->ldx;
    float *yr = y + (size_t)r * a->ldy;
    uint64_t e = (uint64_t)r * (uint64_t)a->cols;
    int have = 0;
    for (int c = 0; c < a->cols; c++, e++) {
      if (!have || (e & 3) == 0) {
        ctr[0] = (uint32_t)(e >> 2);
        philox4x32_10(ctr, a->key, word);
        have = 1;
      }
      yr[c] = word[e & 3] >= a->threshold ? xr[c] * a->scale : 0.0f;
    }
  }
}

seqcl_status sq_host_dropout(sq_backend *be, const sq_dropout_args *a) {
  sq_pool_for(be, a->rows, 40.0 * a->rows * a->cols, dropout_rows, (void *)a);
  return SEQCL_OK;
}
