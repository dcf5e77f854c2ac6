/* Fuzz target: the safetensors reader (sq_st_parse), with and without I32.
 *
 * Beyond "no crash", it checks what a caller relies on: on success the header
 * length is the one in the file, every tensor's byte range is inside the data
 * section, the ranges tile it in order, byte sizes equal dtype x shape, the data
 * section is a copy of the file's tail and every tensor converts; on failure the
 * out-pointer is NULL and the message names the file. Accepting I32 may only
 * ever turn a failure into a success, never the other way round. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_json_arena.h"
#include "model/safetensors.h"

#define NAME "fuzz.safetensors"

static size_t dtype_bytes(sq_dtype d) { return d == SQ_DT_F16 || d == SQ_DT_BF16 ? 2 : 4; }

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static void check_failure(seqcl_status st, const sq_st_file *f) {
  FUZZ_CHECK(f == NULL);
  FUZZ_CHECK(st == SEQCL_ERR_BAD_MODEL || st == SEQCL_ERR_OUT_OF_MEMORY);
  const char *msg = seqcl_last_message();
  FUZZ_CHECK(msg != NULL && msg[0] != '\0');
  FUZZ_CHECK(strncmp(msg, NAME ":", strlen(NAME ":")) == 0);
}

/* Converting reads exactly [begin, end) of the data section (ASan watches). */
FUZZ_NO_COVERAGE static void check_values(const sq_st_file *f, const sq_st_tensor *t) {
  float *vals = malloc((t->nelem ? t->nelem : 1) * sizeof *vals);
  if (!vals) return;
  sq_st_to_f32(f, t, vals);
  for (size_t i = 0; t->dtype == SQ_DT_F32 && i < t->nelem; i++) {
    const unsigned char *q = f->data + t->begin + 4 * i;
    uint32_t want = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    uint32_t got;
    memcpy(&got, &vals[i], sizeof got);
    FUZZ_CHECK(got == want); /* bit-exact, NaN payloads included */
  }
  int32_t *ints = malloc((t->nelem ? t->nelem : 1) * sizeof *ints);
  if (ints) {
    int rc = sq_st_to_i32(f, t, ints);
    FUZZ_CHECK(rc == (t->dtype == SQ_DT_I32 ? 0 : -1));
    for (size_t i = 0; rc == 0 && i < t->nelem; i++) FUZZ_CHECK((float)ints[i] == vals[i]);
    free(ints);
  }
  free(vals);
}

static void check_tensor(const sq_st_file *f, const sq_st_tensor *t, int allow_i32) {
  FUZZ_CHECK(t->name != NULL);
  FUZZ_CHECK(strcmp(t->name, "__metadata__") != 0);
  FUZZ_CHECK(sq_st_find(f, t->name) == t); /* JSON duplicates are rejected: names are unique */
  FUZZ_CHECK(t->dtype == SQ_DT_F32 || t->dtype == SQ_DT_F16 || t->dtype == SQ_DT_BF16 ||
             (t->dtype == SQ_DT_I32 && allow_i32));
  FUZZ_CHECK(t->ndim >= 0 && t->ndim <= SQ_ST_MAX_DIMS);
  /* nelem is the shape's product, recomputed here in 128-bit arithmetic. */
  unsigned __int128 prod = 1;
  for (int d = 0; d < t->ndim; d++) {
    FUZZ_CHECK(t->shape[d] >= 0);
    prod *= (unsigned __int128)t->shape[d];
    if (prod > (unsigned __int128)SIZE_MAX) prod = (unsigned __int128)SIZE_MAX + 1;
  }
  FUZZ_CHECK(prod == (unsigned __int128)t->nelem);
  FUZZ_CHECK(t->begin <= t->end && t->end <= f->data_bytes);
  FUZZ_CHECK(t->end - t->begin == t->nelem * dtype_bytes(t->dtype));

  check_values(f, t);
}

static void check_success(const uint8_t *data, size_t size, const sq_st_file *f, int allow_i32) {
  FUZZ_CHECK(f != NULL);
  FUZZ_CHECK(f->path && strcmp(f->path, NAME) == 0);
  FUZZ_CHECK(size >= 8);
  uint64_t hlen = le64(data);
  FUZZ_CHECK(hlen > 0 && hlen <= SQ_ST_MAX_HEADER && hlen <= size - 8);
  FUZZ_CHECK(f->data_bytes == size - 8 - hlen);
  FUZZ_CHECK(f->data != NULL);
  if (f->data_bytes) FUZZ_CHECK(memcmp(f->data, data + 8 + hlen, f->data_bytes) == 0);
  FUZZ_CHECK(f->count == 0 || f->tensors != NULL);
  /* Sorted by begin, each starting where the previous ended, the last ending
   * at the end of the data section: the ranges tile it exactly. */
  size_t expected = 0;
  for (size_t i = 0; i < f->count; i++) {
    const sq_st_tensor *t = &f->tensors[i];
    check_tensor(f, t, allow_i32);
    FUZZ_CHECK(t->begin == expected);
    expected = t->end;
  }
  FUZZ_CHECK(expected == f->data_bytes);
}

static int same_tensors(const sq_st_file *a, const sq_st_file *b) {
  if (a->count != b->count || a->data_bytes != b->data_bytes) return 0;
  for (size_t i = 0; i < a->count; i++) {
    const sq_st_tensor *x = &a->tensors[i], *y = &b->tensors[i];
    if (strcmp(x->name, y->name) != 0 || x->dtype != y->dtype || x->ndim != y->ndim ||
        x->nelem != y->nelem || x->begin != y->begin || x->end != y->end ||
        memcmp(x->shape, y->shape, sizeof x->shape) != 0)
      return 0;
  }
  return a->data_bytes == 0 || memcmp(a->data, b->data, a->data_bytes) == 0;
}

/* The two readers differ only in accepting dtype "I32". An input that spells
 * neither "I32" nor a JSON \u escape (which could spell it) cannot tell them
 * apart, so its second parse, half the target's time, is skipped. */
static int may_name_i32(const uint8_t *d, size_t n) {
  /* memmem, not a byte loop: an instrumented loop over every input byte cost
   * a sixth of the time in coverage callbacks */
  return memmem(d, n, "I32", 3) != NULL || memmem(d, n, "\\u", 2) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sq_fuzz_arena_install();
  sq_st_file *strict = (sq_st_file *)1, *loose = (sq_st_file *)1;
  seqcl_status st_strict = sq_st_parse(data, size, NAME, 0, &strict);
  if (st_strict == SEQCL_OK)
    check_success(data, size, strict, 0);
  else
    check_failure(st_strict, strict);

  if (may_name_i32(data, size)) {
    seqcl_status st_loose = sq_st_parse(data, size, NAME, 1, &loose);
    if (st_loose == SEQCL_OK)
      check_success(data, size, loose, 1);
    else
      check_failure(st_loose, loose);
    /* I32 only widens what is accepted; what F32/F16/BF16 files say is unchanged. */
    if (st_strict == SEQCL_OK) {
      FUZZ_CHECK(st_loose == SEQCL_OK);
      FUZZ_CHECK(same_tensors(strict, loose));
    }
    sq_st_free(loose);
  }
  sq_st_free(strict);
  sq_fuzz_arena_reset();
  return 0;
}
