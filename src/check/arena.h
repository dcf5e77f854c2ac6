/* Guarded device buffers for running one case: every buffer carries a guard
 * region of sentinel values before and after it, outputs start as sentinels (or
 * given contents), and afterwards the guards, the gaps of strided outputs and
 * the unchanged inputs are verified. Any write outside an output is a fault. */
#ifndef SQ_CHECK_ARENA_H
#define SQ_CHECK_ARENA_H

#include "check/oplist.h"
#include "ops/ops.h"

/* Elements on each side of every buffer: a full work-group (up to 1024 items)
 * writing past the end of a row lands in the guard rather than in other memory. */
#define SQ_GUARD_ELEMS 1024
#define SQ_SENTINEL 0x7FC0DEADu  /* a quiet NaN with a payload no kernel produces */
#define SQ_ARENA_MAX 32

typedef enum { SQ_BUF_IN, SQ_BUF_OUT, SQ_BUF_SCRATCH } sq_buf_kind;

typedef struct sq_arena_buf {
  sq_buf *buf;
  sq_buf_kind kind;
  const char *name;
  size_t n;          /* elements between the guards */
  size_t rows, cols, ld; /* outputs: rows x cols used of each ld-wide row; gaps stay sentinel */
  void *init;        /* what the region held before the run (owned copy) */
} sq_arena_buf;

typedef struct sq_arena {
  seqcl_ctx *ctx;
  seqcl_status st; /* the first failure; later calls do nothing */
  int nb;
  sq_arena_buf b[SQ_ARENA_MAX];
  /* Where the run's results go: got[k] receives output k of the case; a
   * guard or input fault is described in fault (fault_cap bytes). */
  double *const *got;
  char *fault;
  size_t fault_cap;
} sq_arena;

/* An empty arena on ctx whose run reads its outputs into got and describes
 * a fault in fault. */
void sq_arena_init(sq_arena *a, seqcl_ctx *ctx, double *const *got, char *fault, size_t cap);
/* A device copy of input t (NULL or absent: sq_none()). */
sq_ref sq_arena_in(sq_arena *a, const sq_tensor *t);
sq_ref sq_arena_in_named(sq_arena *a, const sq_case *c, const char *name);
/* An output of n elements starting as init (NULL: sentinels). */
sq_ref sq_arena_out(sq_arena *a, const char *name, size_t n, const void *init);
/* An output of n elements starting as zeros: for slots that leave some of
 * their output untouched (positions past a row's length, other time steps),
 * which the reference then reads as 0 too. */
sq_ref sq_arena_out_zeros(sq_arena *a, const char *name, size_t n);
/* An output of rows x ld elements starting as init (rows x ld values; NULL:
 * sentinels) of which columns [cols, ld) must keep their initial values. */
sq_ref sq_arena_out2d(sq_arena *a, const char *name, size_t rows, size_t cols, size_t ld,
                      const void *init);
/* Scratch space (workspaces): only its guards are checked. */
sq_ref sq_arena_scratch(sq_arena *a, const char *name, size_t n);
/* Reads n elements at r (an arena buffer) into dst as doubles. For a 2-D output
 * allocated with out2d, reads the dense rows x cols part. */
seqcl_status sq_arena_fetch(sq_arena *a, sq_ref r, size_t n, int is_int, double *dst);
/* Checks every guard, gap and input; describes the first problem in fault. */
seqcl_status sq_arena_verify(sq_arena *a, char *fault, size_t cap);
void sq_arena_release(sq_arena *a);

#endif
