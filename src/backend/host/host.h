/* Internal API of the host backend: the float32 CPU path (C loops + CBLAS).
 * Every slot runs synchronously; the functions below fill the table in
 * host_backend.c. Shapes were validated by the src/ops/ fronts. */
#ifndef SQ_BACKEND_HOST_H
#define SQ_BACKEND_HOST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/host/host_blocks.h"
#include "backend/host/pool.h"

/* Private state: a scratch row per pool thread that grows on demand (the
 * fused attention keeps its energies there when the caller does not want
 * alpha back; per thread, since tasks run slots on two threads at once), and
 * the large buffers freed for reuse (host_blocks.c). */
typedef struct sq_host {
  float *scratch[SQ_POOL_MAX_THREADS];
  size_t scratch_floats[SQ_POOL_MAX_THREADS];
  sq_host_blocks blocks;
} sq_host;

static inline float *sq_host_f32(sq_ref r) { return (float *)r.buf->ptr + r.off; }
static inline int32_t *sq_host_i32(sq_ref r) { return (int32_t *)r.buf->ptr + r.off; }
/* NULL for an absent optional ref. */
static inline float *sq_host_f32_opt(sq_ref r) { return r.buf ? sq_host_f32(r) : NULL; }
static inline int32_t *sq_host_i32_opt(sq_ref r) { return r.buf ? sq_host_i32(r) : NULL; }

/* Scratch of at least n floats owned by the backend (valid until the next call). */
seqcl_status sq_host_scratch(sq_backend *be, size_t n, float **out);

/* Into how many parts the fused attention over a's rows splits each row (a
 * pass of energies, then one of context columns), or 0 when it splits whole
 * rows (host_attention.c): the same bits either way. */
int sq_host_attn_split_parts(const sq_backend *be, const sq_attn_args *a);

/* The slots, one file per op family (host_<family>.c, backend/slots.def);
 * host_backend.c puts them in the table. */
#define SQ_SLOT(name, params) seqcl_status sq_host_##name params;
#include "backend/slots.def"
#undef SQ_SLOT

/* Weights ranges (host_packed.c): the freeze slot; whether B [N, K] (row
 * stride ldb) lies in its buffer's weights range; its packed copy in a form
 * (SQ_PACKED_NK: sq_gemm_pack's panels; SQ_PACKED_KN: B stored [K, N],
 * sq_gemm_pack_kn's panels for C = A B; SQ_PACKED_BF16 / SQ_PACKED_F16:
 * sq_gemm_pack_half_panels's 16-bit panels, for weights exact at that width),
 * made on first use and packed again after a write over it;
 * drop_range marks the copies that overlap count floats from off stale (what
 * a write over them does); free frees them all (the buffer's end). */
typedef struct sq_host_packed sq_host_packed;
void sq_host_freeze(sq_backend *be, sq_ref at, size_t count);
int sq_host_packable(sq_ref B, int N, int K, int ldb);
typedef enum sq_packed_form {
  SQ_PACKED_NK,
  SQ_PACKED_KN,
  SQ_PACKED_BF16,
  SQ_PACKED_F16
} sq_packed_form;
seqcl_status sq_host_packed_get(sq_backend *be, sq_ref B, int N, int K, int ldb,
                                sq_packed_form form, const void **out);
void sq_host_packed_drop_range(sq_buf *buf, size_t off, size_t count);
/* Packs buf's stale copies again now, across the pool (after an Adam step:
 * every copy is read again by the next step's products, and packing them
 * one by one there runs on one core while the other waits). */
void sq_host_packed_refresh(sq_backend *be, sq_buf *buf);
void sq_host_packed_free(sq_buf *buf);
/* How many of buf's packed copies hold its current values (for the tests). */
int sq_host_packed_fresh(sq_buf *buf);
/* How many chunks of memory buf's packed copies sit in (for the tests). */
int sq_host_packed_chunks(sq_buf *buf);

/* The generator behind host_dropout.c (exposed for the known-answer test). */
void sq_host_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

#endif
