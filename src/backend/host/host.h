/* Internal API of the host backend: the float32 CPU path (C loops + CBLAS).
 * Every slot runs synchronously; the functions below fill the table in
 * host_backend.c. Shapes were validated by the src/ops/ fronts. */
#ifndef SQ_BACKEND_HOST_H
#define SQ_BACKEND_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Private state: a scratch row that grows on demand (the fused attention keeps
 * its energies there when the caller does not want alpha back). */
typedef struct sq_host {
  float *scratch;
  size_t scratch_floats;
} sq_host;

static inline float *sq_host_f32(sq_ref r) { return (float *)r.buf->ptr + r.off; }
static inline int32_t *sq_host_i32(sq_ref r) { return (int32_t *)r.buf->ptr + r.off; }
/* NULL for an absent optional ref. */
static inline float *sq_host_f32_opt(sq_ref r) { return r.buf ? sq_host_f32(r) : NULL; }
static inline int32_t *sq_host_i32_opt(sq_ref r) { return r.buf ? sq_host_i32(r) : NULL; }

/* Scratch of at least n floats owned by the backend (valid until the next call). */
seqcl_status sq_host_scratch(sq_backend *be, size_t n, float **out);

/* host_attention.c */
seqcl_status sq_host_attn_scores(sq_backend *be, const sq_attn_args *a, sq_ref scores);
seqcl_status sq_host_masked_softmax(sq_backend *be, int N, int S, sq_ref x, sq_ref lens,
                                    sq_ref mask, sq_ref y);
seqcl_status sq_host_context(sq_backend *be, int N, int S, int He, sq_ref alpha, sq_ref keys,
                             sq_ref c, int ld_c);
seqcl_status sq_host_attn_fused(sq_backend *be, const sq_attn_args *a, sq_ref c, int ld_c,
                                sq_ref alpha);

/* host_gru.c */
seqcl_status sq_host_gru_gates(sq_backend *be, const sq_gru_args *g);

/* host_misc.c */
seqcl_status sq_host_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias);
seqcl_status sq_host_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                               int ld_out);
seqcl_status sq_host_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                            sq_ref ids);
seqcl_status sq_host_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y);
seqcl_status sq_host_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                   sq_ref loss);

#endif
