/* safetensors writer (F32 only): header padded with spaces to a multiple of 8 so
 * the data section is 8-byte aligned, tensors laid out back to back in the
 * given order, written through sq_outfile (temporary file + rename). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/error.h"
#include "model/safetensors.h"
#include "model/tokens.h"

/* Validates the tensor list and builds the JSON header; *data_bytes is the total. */
static seqcl_status build_header(const char *path, const sq_st_out *tensors, size_t count,
                                 char **text, size_t *data_bytes) {
  *text = NULL;
  json_t *root = json_object();
  if (!root) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  seqcl_status st = SEQCL_OK;
  size_t offset = 0;
  for (size_t i = 0; i < count && st == SEQCL_OK; i++) {
    const sq_st_out *t = &tensors[i];
    if (!t->name || !*t->name || strcmp(t->name, "__metadata__") == 0) {
      st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: tensor %zu has an invalid name", path, i);
      break;
    }
    if (json_object_get(root, t->name)) {
      st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: tensor '%s' is listed twice", path, t->name);
      break;
    }
    if (t->ndim < 0 || t->ndim > SQ_ST_MAX_DIMS) {
      st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: tensor '%s' has %d dimensions", path,
                   t->name, t->ndim);
      break;
    }
    json_t *shape = json_array();
    size_t nelem = 1;
    for (int d = 0; d < t->ndim && st == SEQCL_OK; d++) {
      int64_t n = t->shape[d];
      if (n < 0 || (n > 0 && nelem > SIZE_MAX / 4 / (uint64_t)n))
        st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: tensor '%s': bad extent %lld in dimension %d",
                     path, t->name, (long long)n, d);
      else
        nelem *= (size_t)n;
      if (shape) json_array_append_new(shape, json_integer(n));
    }
    size_t bytes = nelem * 4;
    if (st == SEQCL_OK && nelem && !t->data)
      st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: tensor '%s' has no data", path, t->name);
    if (st == SEQCL_OK && offset > SIZE_MAX - bytes)
      st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: tensors too large", path);
    if (st != SEQCL_OK) {
      json_decref(shape);
      break;
    }
    json_t *entry = json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", shape,
                              "data_offsets", (json_int_t)offset, (json_int_t)(offset + bytes));
    if (!entry || json_object_set_new(root, t->name, entry) != 0)
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    offset += bytes;
  }
  if (st == SEQCL_OK) {
    *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!*text) st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  json_decref(root);
  *data_bytes = offset;
  return st;
}

/* Writes n floats as little-endian bytes whatever the host's byte order. */
static int write_f32_le(FILE *f, const float *src, size_t n) {
  unsigned char buf[4096];
  while (n) {
    size_t chunk = n < sizeof buf / 4 ? n : sizeof buf / 4;
    for (size_t i = 0; i < chunk; i++) {
      uint32_t bits;
      memcpy(&bits, &src[i], sizeof bits);
      buf[4 * i] = (unsigned char)bits;
      buf[4 * i + 1] = (unsigned char)(bits >> 8);
      buf[4 * i + 2] = (unsigned char)(bits >> 16);
      buf[4 * i + 3] = (unsigned char)(bits >> 24);
    }
    if (fwrite(buf, 4, chunk, f) != chunk) return -1;
    src += chunk;
    n -= chunk;
  }
  return 0;
}

seqcl_status sq_st_write(const char *path, const sq_st_out *tensors, size_t count) {
  if (!path || (count && !tensors))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_st_write: NULL argument");
  char *header = NULL;
  size_t data_bytes = 0;
  SQ_TRY(build_header(path, tensors, count, &header, &data_bytes));
  size_t hlen = strlen(header);
  size_t padded = (hlen + 7) / 8 * 8;

  sq_outfile o;
  seqcl_status st = sq_outfile_open(path, &o);
  if (st != SEQCL_OK) {
    free(header);
    return st;
  }
  unsigned char len_le[8];
  for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  int failed = fwrite(len_le, 1, 8, o.f) != 8 || fwrite(header, 1, hlen, o.f) != hlen;
  for (size_t i = hlen; i < padded && !failed; i++) failed = fputc(' ', o.f) == EOF;
  for (size_t i = 0; i < count && !failed; i++) {
    size_t nelem = 1;
    for (int d = 0; d < tensors[i].ndim; d++) nelem *= (size_t)tensors[i].shape[d];
    failed = write_f32_le(o.f, tensors[i].data, nelem) != 0;
  }
  int e = errno;
  free(header);
  if (failed) {
    sq_outfile_abort(&o);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: write failed: %s", path, strerror(e));
  }
  return sq_outfile_commit(&o);
}
