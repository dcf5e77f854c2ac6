/* Packed copies of the weights the host's products with many rows read (a
 * loaded model's; any weights range that changes rarely). OpenBLAS
 * packs all of B before every product; at decode shapes ([64, 256] x
 * [768, 256]^T) that packing was 18 % of a step, as much as the product of
 * those few rows is worth. Weights change rarely (a model's never), so each
 * matrix a product reads from a buffer's weights range (the freeze slot) is packed
 * once, on the first product that reads it (sq_gemm_pack), and kept until
 * something writes over it: write, copy, fill and Adam mark the copies that
 * overlap what they write stale (sq_host_packed_drop_range), and the next
 * product that reads one packs it again in the same memory (no allocation,
 * no page faults: a range Adam updates every step is packed once per step).
 *
 * Products run on several pool threads at once (the two encoder directions are
 * two tasks), so the list is searched and changed under one mutex; an entry is
 * never changed once it is in the list, and only the thread that runs the
 * slots between products (never during one) drops entries. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "core/ctx.h"
#include "core/fault.h"

struct sq_host_packed {
  struct sq_host_packed *next;
  size_t off, end; /* B's first float in the buffer, one past its last */
  int N, K, ldb;
  int stale; /* written over since it was packed */
  float *panels;
};

static pthread_mutex_t packed_lock = PTHREAD_MUTEX_INITIALIZER;

/* The floats B [N, K] with row stride ldb covers, from its first. */
static size_t extent(int N, int K, int ldb) { return (size_t)(N - 1) * (size_t)ldb + (size_t)K; }

/* Unlinks and frees every copy of buf. */
static void free_all(sq_buf *buf) {
  pthread_mutex_lock(&packed_lock);
  sq_host_packed *p = buf->packed;
  buf->packed = NULL;
  pthread_mutex_unlock(&packed_lock);
  while (p) {
    sq_host_packed *next = p->next;
    free(p->panels);
    free(p);
    p = next;
  }
}

void sq_host_packed_free(sq_buf *buf) {
  if (buf->packed) free_all(buf);
}

void sq_host_freeze(sq_backend *be, sq_ref at, size_t count) {
  (void)be;
  sq_host_packed_free(at.buf);
  at.buf->weights_lo = at.off;
  at.buf->weights_hi = at.off + count;
}

int sq_host_packable(sq_ref B, int N, int K, int ldb) {
  return B.off >= B.buf->weights_lo && B.off + extent(N, K, ldb) <= B.buf->weights_hi;
}

void sq_host_packed_drop_range(sq_buf *buf, size_t off, size_t count) {
  if (!buf->packed) return;
  const size_t end = count > (size_t)-1 - off ? (size_t)-1 : off + count;
  pthread_mutex_lock(&packed_lock);
  for (sq_host_packed *p = buf->packed; p; p = p->next)
    if (p->off < end && off < p->end) p->stale = 1;
  pthread_mutex_unlock(&packed_lock);
}

seqcl_status sq_host_packed_get(sq_backend *be, sq_ref B, int N, int K, int ldb,
                                const float **out) {
  *out = NULL;
  seqcl_status st = SEQCL_OK;
  pthread_mutex_lock(&packed_lock);
  sq_host_packed *p = B.buf->packed;
  while (p && !(p->off == B.off && p->N == N && p->K == K && p->ldb == ldb)) p = p->next;
  if (p && p->stale) { /* the same memory, the new values */
    sq_gemm_pack(N, K, sq_host_f32(B), ldb, p->panels);
    p->stale = 0;
  } else if (!p) {
    const size_t n = sq_gemm_panels_floats(N, K);
    void *mem = NULL;
    p = malloc(sizeof *p);
    if (!p || sq_fault_hit(SQ_FAULT_ALLOC) || posix_memalign(&mem, 64, n * sizeof(float)) != 0) {
      free(p);
      p = NULL;
      st = sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "host backend: cannot allocate a buffer of %zu bytes for the packed copy of "
                   "a %d x %d weight",
                   n * sizeof(float), N, K);
    } else {
      *p = (sq_host_packed){B.buf->packed, B.off, B.off + extent(N, K, ldb), N, K, ldb, 0, mem};
      sq_gemm_pack(N, K, sq_host_f32(B), ldb, p->panels);
      B.buf->packed = p;
    }
  }
  pthread_mutex_unlock(&packed_lock);
  if (p) *out = p->panels;
  return st;
}

int sq_host_packed_fresh(sq_buf *buf) {
  int n = 0;
  pthread_mutex_lock(&packed_lock);
  for (const sq_host_packed *p = buf->packed; p; p = p->next) n += !p->stale;
  pthread_mutex_unlock(&packed_lock);
  return n;
}
