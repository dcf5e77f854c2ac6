#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/arena.h"
#include "core/error.h"

void sq_arena_init(sq_arena *a, seqcl_ctx *ctx, double *const *got, char *fault, size_t cap) {
  memset(a, 0, sizeof *a);
  a->ctx = ctx;
  a->got = got;
  a->fault = fault;
  a->fault_cap = cap;
}

static sq_arena_buf *arena_new(sq_arena *a, const char *name, sq_buf_kind kind, size_t n,
                               const void *init) {
  if (a->st != SEQCL_OK) return NULL;
  if (a->nb >= SQ_ARENA_MAX) {
    a->st = sq_fail(a->ctx, SEQCL_ERR_INTERNAL, "check: more than %d buffers in one case",
                    SQ_ARENA_MAX);
    return NULL;
  }
  size_t total = n + 2 * SQ_GUARD_ELEMS;
  uint32_t *host = malloc(total * 4);
  void *copy = malloc((n ? n : 1) * 4);
  if (!host || !copy) {
    free(host);
    free(copy);
    a->st = sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory for '%s'", name);
    return NULL;
  }
  for (size_t i = 0; i < total; i++) host[i] = SQ_SENTINEL;
  if (init) memcpy(host + SQ_GUARD_ELEMS, init, n * 4);
  memcpy(copy, host + SQ_GUARD_ELEMS, n * 4);
  sq_arena_buf *b = &a->b[a->nb];
  memset(b, 0, sizeof *b);
  seqcl_status st = sq_buf_alloc(a->ctx, total * 4, &b->buf);
  if (st == SEQCL_OK) st = sq_write(a->ctx, sq_at(b->buf, 0), host, total * 4);
  free(host);
  if (st != SEQCL_OK) {
    sq_buf_free(b->buf);
    free(copy);
    b->buf = NULL;
    a->st = st;
    return NULL;
  }
  a->nb++;
  b->kind = kind;
  b->name = name;
  b->n = n;
  b->rows = 1;
  b->cols = b->ld = n;
  b->init = copy;
  return b;
}

sq_ref sq_arena_in(sq_arena *a, const sq_tensor *t) {
  if (!t) return sq_none();
  const void *src = t->is_int ? (const void *)t->i : (const void *)t->f;
  sq_arena_buf *b = arena_new(a, t->name, SQ_BUF_IN, t->n, src);
  return b ? sq_at(b->buf, SQ_GUARD_ELEMS) : sq_none();
}

sq_ref sq_arena_in_named(sq_arena *a, const sq_case *c, const char *name) {
  return sq_arena_in(a, sq_case_in(c, name));
}

sq_ref sq_arena_out(sq_arena *a, const char *name, size_t n, const void *init) {
  sq_arena_buf *b = arena_new(a, name, SQ_BUF_OUT, n, init);
  return b ? sq_at(b->buf, SQ_GUARD_ELEMS) : sq_none();
}

sq_ref sq_arena_out_zeros(sq_arena *a, const char *name, size_t n) {
  if (a->st != SEQCL_OK) return sq_none();
  float *zeros = calloc(n ? n : 1, sizeof(float));
  if (!zeros) {
    a->st = sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
    return sq_none();
  }
  sq_ref r = sq_arena_out(a, name, n, zeros);
  free(zeros);
  return r;
}

sq_ref sq_arena_out2d(sq_arena *a, const char *name, size_t rows, size_t cols, size_t ld,
                      const void *init) {
  sq_arena_buf *b = arena_new(a, name, SQ_BUF_OUT, rows * ld, init);
  if (!b) return sq_none();
  b->rows = rows;
  b->cols = cols;
  b->ld = ld;
  return sq_at(b->buf, SQ_GUARD_ELEMS);
}

sq_ref sq_arena_scratch(sq_arena *a, const char *name, size_t n) {
  sq_arena_buf *b = arena_new(a, name, SQ_BUF_SCRATCH, n, NULL);
  return b ? sq_at(b->buf, SQ_GUARD_ELEMS) : sq_none();
}

static sq_arena_buf *arena_find(sq_arena *a, sq_ref r) {
  for (int i = 0; i < a->nb; i++)
    if (a->b[i].buf == r.buf) return &a->b[i];
  return NULL;
}

seqcl_status sq_arena_fetch(sq_arena *a, sq_ref r, size_t n, int is_int, double *dst) {
  SQ_TRY(a->st);
  sq_arena_buf *b = arena_find(a, r);
  if (!b) return sq_fail(a->ctx, SEQCL_ERR_INTERNAL, "check: fetch from a foreign buffer");
  size_t span = b->ld > b->cols ? b->rows * b->ld : n;
  uint32_t *raw = malloc((span ? span : 1) * 4);
  if (!raw) return sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
  seqcl_status st = sq_read(a->ctx, r, raw, span * 4);
  if (st == SEQCL_OK) {
    for (size_t i = 0; i < n; i++) {
      size_t src = b->ld > b->cols ? (i / b->cols) * b->ld + i % b->cols : i;
      if (is_int) {
        int32_t v;
        memcpy(&v, &raw[src], 4);
        dst[i] = v;
      } else {
        float v;
        memcpy(&v, &raw[src], 4);
        dst[i] = v;
      }
    }
  }
  free(raw);
  return st;
}

seqcl_status sq_arena_verify(sq_arena *a, char *fault, size_t cap) {
  SQ_TRY(a->st);
  for (int i = 0; i < a->nb; i++) {
    sq_arena_buf *b = &a->b[i];
    size_t total = b->n + 2 * SQ_GUARD_ELEMS;
    uint32_t *raw = malloc(total * 4);
    if (!raw) return sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
    seqcl_status st = sq_read(a->ctx, sq_at(b->buf, 0), raw, total * 4);
    if (st != SEQCL_OK) {
      free(raw);
      return st;
    }
    const uint32_t *init = b->init;
    int found = 0;
    long bad = 0;
    const char *where = "";
    for (size_t k = 0; k < total && !found; k++) {
      long e = (long)k - SQ_GUARD_ELEMS; /* element index relative to the buffer start */
      if (e < 0 || (size_t)e >= b->n) {
        if (raw[k] != SQ_SENTINEL) found = 1, bad = e, where = e < 0 ? "before" : "after";
      } else if (b->kind == SQ_BUF_IN) {
        if (raw[k] != init[e]) found = 1, bad = e, where = "into input";
      } else if (b->kind == SQ_BUF_OUT && b->ld > b->cols && (size_t)e % b->ld >= b->cols) {
        if (raw[k] != init[e]) found = 1, bad = e, where = "in the row padding of";
      }
    }
    free(raw);
    if (found) {
      if (fault && cap && !*fault)
        snprintf(fault, cap, "write %s '%s' at element %ld (of %zu)", where, b->name, bad, b->n);
    }
  }
  return SEQCL_OK;
}

void sq_arena_release(sq_arena *a) {
  for (int i = 0; i < a->nb; i++) {
    sq_buf_free(a->b[i].buf);
    free(a->b[i].init);
  }
  a->nb = 0;
}
