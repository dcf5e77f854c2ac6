/* Packed copies of the weights the host's products read (a loaded model's;
 * any weights range that changes rarely): float32 panels, or the 16-bit
 * panels of weights held at a reduced precision. OpenBLAS packs all of B
 * before every product; at decode shapes ([64, 256] x [768, 256]^T) that
 * packing was 18 % of a step, as much as the product of those few rows is
 * worth, and the own kernel that reads B in place folds 16 lanes per element
 * (gemm_nt.c). Weights change rarely (a model's never), so each
 * matrix a product reads from a buffer's weights range (the freeze slot) is packed
 * once, on the first product that reads it (sq_gemm_pack), and kept until
 * something writes over it: write, copy, fill and Adam mark the copies that
 * overlap what they write stale (sq_host_packed_drop_range), and the next
 * product that reads one packs it again in the same memory (no allocation,
 * no page faults: a range Adam updates every step is packed once per step).
 *
 * The copies of a buffer share chunks of memory as large as its weights range
 * (the first copy's chunk usually holds them all), so that they sit on huge
 * pages (core/hostmem.h) although each is only a megabyte or so: packing a
 * model's weights into copies of their own took ~700 page faults, a fifth of
 * a one-line `seqcl decode` process. A copy is never freed alone, so a chunk
 * goes when its buffer's copies all do.
 *
 * Products run on several pool threads at once (the two encoder directions are
 * two tasks), so the list is searched and changed under one mutex; an entry is
 * never changed once it is in the list, and only the thread that runs the
 * slots between products (never during one) drops entries. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "backend/host/pool.h"
#include "core/ctx.h"
#include "core/fault.h"
#include "core/halfwidth.h"
#include "core/hostmem.h"

struct sq_host_packed {
  struct sq_host_packed *next;
  size_t off, end; /* B's first float in the buffer, one past its last */
  int N, K, ldb;
  sq_packed_form form;
  int stale; /* written over since it was packed */
  void *mem; /* the panels (floats, or 32-bit words of two 16-bit values) */
  char *chunk_end; /* the end of the chunk mem is in; the next copy may follow it */
  int owns_chunk;  /* mem is its chunk's start (freed with this copy) */
};

enum { PACKED_ALIGN = 64 };

static pthread_mutex_t packed_lock = PTHREAD_MUTEX_INITIALIZER;

/* The floats B [N, K] with row stride ldb covers, from its first. */
static size_t extent(int N, int K, int ldb) { return (size_t)(N - 1) * (size_t)ldb + (size_t)K; }

static void pack(const sq_host_packed *p, const float *b) {
  switch (p->form) {
  case SQ_PACKED_KN: sq_gemm_pack_kn(p->K, p->N, b, p->ldb, p->mem); break;
  case SQ_PACKED_BF16: sq_gemm_pack_half_panels(p->N, p->K, b, p->ldb, SQ_HALF_BF16, p->mem); break;
  case SQ_PACKED_F16: sq_gemm_pack_half_panels(p->N, p->K, b, p->ldb, SQ_HALF_F16, p->mem); break;
  default: sq_gemm_pack(p->N, p->K, b, p->ldb, p->mem); break;
  }
}

static size_t packed_bytes(sq_packed_form form, int N, int K) {
  if (form == SQ_PACKED_BF16 || form == SQ_PACKED_F16)
    return sq_gemm_half_panels_words(N, K) * sizeof(uint32_t);
  return sq_gemm_panels_floats(N, K) * sizeof(float);
}

/* Unlinks and frees every copy of buf. */
static void free_all(sq_buf *buf) {
  pthread_mutex_lock(&packed_lock);
  sq_host_packed *p = buf->packed;
  buf->packed = NULL;
  pthread_mutex_unlock(&packed_lock);
  while (p) {
    sq_host_packed *next = p->next;
    if (p->owns_chunk) free(p->mem);
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

/* Room for a copy of `bytes`: after the newest copy in its chunk, else at the
 * start of a new chunk (*owns = 1) as large as the buffer's weights range, or
 * as the copy if that is larger. NULL when out of memory. */
static void *carve(const sq_buf *buf, size_t bytes, char **chunk_end, int *owns) {
  const sq_host_packed *last = buf->packed;
  if (last) {
    const size_t used = packed_bytes(last->form, last->N, last->K);
    char *at = (char *)last->mem + (used + PACKED_ALIGN - 1) / PACKED_ALIGN * PACKED_ALIGN;
    if (at <= last->chunk_end && (size_t)(last->chunk_end - at) >= bytes) {
      *chunk_end = last->chunk_end;
      *owns = 0;
      return at;
    }
  }
  const size_t range = (buf->weights_hi - buf->weights_lo) * sizeof(float);
  const size_t cap = range > bytes ? range : bytes;
  char *mem = sq_hostmem_alloc(cap);
  if (!mem) return NULL;
  *chunk_end = mem + cap;
  *owns = 1;
  return mem;
}

seqcl_status sq_host_packed_get(sq_backend *be, sq_ref B, int N, int K, int ldb,
                                sq_packed_form form, const void **out) {
  *out = NULL;
  seqcl_status st = SEQCL_OK;
  pthread_mutex_lock(&packed_lock);
  sq_host_packed *p = B.buf->packed;
  while (p && !(p->off == B.off && p->N == N && p->K == K && p->ldb == ldb && p->form == form))
    p = p->next;
  if (p && p->stale) { /* the same memory, the new values */
    pack(p, sq_host_f32(B));
    p->stale = 0;
  } else if (!p) {
    const size_t bytes = packed_bytes(form, N, K);
    char *chunk_end = NULL;
    int owns = 0;
    p = malloc(sizeof *p);
    void *mem = p && !sq_fault_hit(SQ_FAULT_ALLOC) ? carve(B.buf, bytes, &chunk_end, &owns) : NULL;
    if (!mem) {
      free(p);
      p = NULL;
      st = sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "host backend: cannot allocate a buffer of %zu bytes for the packed copy of "
                   "a %d x %d weight",
                   bytes, N, K);
    } else {
      const size_t end =
          B.off + (form == SQ_PACKED_KN ? extent(K, N, ldb) : extent(N, K, ldb));
      *p = (sq_host_packed){B.buf->packed, B.off, end, N, K, ldb, form, 0, mem, chunk_end, owns};
      pack(p, sq_host_f32(B));
      B.buf->packed = p;
    }
  }
  pthread_mutex_unlock(&packed_lock);
  if (p) *out = p->mem;
  return st;
}

/* Panels [lo, hi) of the copies in a refresh job (numbered copy after copy). */
enum { REFRESH_MAX = 64 };
typedef struct refresh_job {
  sq_host_packed *copy[REFRESH_MAX];
  int first[REFRESH_MAX + 1]; /* copy i's panels are first[i] .. first[i + 1] - 1 */
  int n;
  const float *base;
} refresh_job;

static void refresh_panels(void *arg, int lo, int hi) {
  const refresh_job *j = arg;
  int i = 0;
  while (j->first[i + 1] <= lo) i++;
  for (int at = lo; at < hi; i++) {
    const sq_host_packed *p = j->copy[i];
    const int p0 = at - j->first[i], p1 = (hi < j->first[i + 1] ? hi : j->first[i + 1]) - j->first[i];
    const int n0 = 16 * p0, n = (16 * p1 < p->N ? 16 * p1 : p->N) - n0;
    const float *b = j->base + p->off;
    float *out = (float *)p->mem + (size_t)p0 * 16 * (size_t)p->K;
    if (p->form == SQ_PACKED_KN) sq_gemm_pack_kn(p->K, n, b + n0, p->ldb, out);
    else sq_gemm_pack(n, p->K, b + (size_t)n0 * (size_t)p->ldb, p->ldb, out);
    at = j->first[i] + p1;
  }
}

void sq_host_packed_refresh(sq_backend *be, sq_buf *buf) {
  if (!buf->packed) return;
  pthread_mutex_lock(&packed_lock);
  refresh_job j = {.n = 0, .base = sq_host_f32(sq_at(buf, 0))};
  double floats = 0;
  for (sq_host_packed *p = buf->packed; p; p = p->next) {
    /* 16-bit panels (a reduced-precision model's, which training does not
     * update): packed again by the product that reads them */
    if (!p->stale || p->form == SQ_PACKED_BF16 || p->form == SQ_PACKED_F16) continue;
    if (j.n == REFRESH_MAX) break; /* the rest: packed by the product that reads them */
    j.copy[j.n] = p;
    j.first[j.n + 1] = j.first[j.n] + (p->N + 15) / 16;
    floats += (double)p->N * p->K;
    j.n++;
  }
  sq_pool_for(be, j.first[j.n], floats, refresh_panels, &j);
  for (int i = 0; i < j.n; i++) j.copy[i]->stale = 0;
  pthread_mutex_unlock(&packed_lock);
}

int sq_host_packed_chunks(sq_buf *buf) {
  int n = 0;
  pthread_mutex_lock(&packed_lock);
  for (const sq_host_packed *p = buf->packed; p; p = p->next) n += p->owns_chunk;
  pthread_mutex_unlock(&packed_lock);
  return n;
}

int sq_host_packed_fresh(sq_buf *buf) {
  int n = 0;
  pthread_mutex_lock(&packed_lock);
  for (const sq_host_packed *p = buf->packed; p; p = p->next) n += !p->stale;
  pthread_mutex_unlock(&packed_lock);
  return n;
}
