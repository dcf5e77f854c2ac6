/* safetensors reader: validates everything the format promises before any byte
 * of tensor data is trusted (header bounds, JSON, dtypes, shapes, byte ranges
 * tiling the data section), then converts F16/BF16 to float32 exactly. */
#define _POSIX_C_SOURCE 200809L /* pread */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/error.h"
#include "model/safetensors.h"
#include "model/tokens.h"

static const struct {
  const char *name;
  sq_dtype dtype;
  size_t size;
} DTYPES[] = {{"F32", SQ_DT_F32, 4}, {"F16", SQ_DT_F16, 2}, {"BF16", SQ_DT_BF16, 2}, {"I32", SQ_DT_I32, 4}};

static size_t dtype_size(sq_dtype d) {
  for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
    if (DTYPES[i].dtype == d) return DTYPES[i].size;
  return 0;
}

static uint64_t load_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

void sq_st_free(sq_st_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->count; i++) free(f->tensors[i].name);
  free(f->tensors);
  if (f->fd >= 0) close(f->fd);
  free(f->mem);
  free(f->path);
  free(f);
}

const sq_st_tensor *sq_st_find(const sq_st_file *f, const char *name) {
  if (!f || !name) return NULL;
  for (size_t i = 0; i < f->count; i++)
    if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
  return NULL;
}

/* A non-negative JSON integer as uint64. */
static int get_u64(const json_t *v, uint64_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
  *out = (uint64_t)json_integer_value(v);
  return 1;
}

static seqcl_status parse_metadata(const char *name, const json_t *meta) {
  if (!json_is_object(meta))
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: __metadata__ must be an object mapping strings to strings", name);
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)meta, key, value) {
    if (!json_is_string(value))
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: __metadata__ must map strings to strings; the value of '%s' is not a string",
                     name, key);
  }
  return SEQCL_OK;
}

/* Fills t from the header entry of tensor tname (name already copied). */
static seqcl_status parse_entry(const char *name, const char *tname, const json_t *entry,
                                int allow_i32, sq_st_tensor *t) {
  if (!json_is_object(entry))
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: tensor '%s': header entry must be an object with dtype, shape, data_offsets",
                   name, tname);
  const json_t *dtype = json_object_get(entry, "dtype");
  if (!json_is_string(dtype))
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: tensor '%s': dtype %s", name, tname,
                   dtype ? "must be a string" : "is missing");
  const char *ds = json_string_value(dtype);
  int found = 0;
  for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0] && !found; i++) {
    if (strcmp(ds, DTYPES[i].name) == 0 && (DTYPES[i].dtype != SQ_DT_I32 || allow_i32)) {
      t->dtype = DTYPES[i].dtype;
      found = 1;
    }
  }
  if (!found)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: tensor '%s': dtype %.32s is not supported (F32, F16 or BF16%s expected)",
                   name, tname, ds, allow_i32 ? " or I32" : "");

  const json_t *shape = json_object_get(entry, "shape");
  if (!json_is_array(shape))
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: tensor '%s': shape %s", name, tname,
                   shape ? "must be an array of non-negative integers" : "is missing");
  size_t ndim = json_array_size(shape);
  if (ndim > SQ_ST_MAX_DIMS)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: tensor '%s': %zu dimensions (at most %d supported)",
                   name, tname, ndim, SQ_ST_MAX_DIMS);
  t->ndim = (int)ndim;
  int has_zero = 0;
  for (size_t d = 0; d < ndim; d++) {
    uint64_t n;
    if (!get_u64(json_array_get(shape, d), &n))
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: tensor '%s': shape[%zu] must be a non-negative integer", name, tname, d);
    t->shape[d] = (int64_t)n;
    has_zero |= n == 0;
  }
  /* A zero anywhere makes the tensor empty whatever the other extents are;
   * otherwise every partial product must stay below SIZE_MAX / element size. */
  size_t esize = dtype_size(t->dtype);
  size_t nelem = has_zero ? 0 : 1;
  for (size_t d = 0; d < ndim && !has_zero; d++) {
    uint64_t n = (uint64_t)t->shape[d];
    if (n > (uint64_t)(SIZE_MAX / esize) || nelem > SIZE_MAX / esize / (size_t)n)
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: tensor '%s': the shape's element count overflows (dimension %zu)", name,
                     tname, d);
    nelem *= (size_t)n;
  }
  t->nelem = nelem;

  const json_t *offs = json_object_get(entry, "data_offsets");
  uint64_t b, e;
  if (!json_is_array(offs) || json_array_size(offs) != 2 || !get_u64(json_array_get(offs, 0), &b) ||
      !get_u64(json_array_get(offs, 1), &e))
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: tensor '%s': data_offsets %s", name, tname,
                   offs ? "must be [begin, end] with non-negative integers" : "is missing");
  if (e < b)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", name, tname,
                   (unsigned long long)b, (unsigned long long)e);
  if (e - b != (uint64_t)(nelem * esize))
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes but dtype %s x shape "
                   "needs %zu",
                   name, tname, (unsigned long long)b, (unsigned long long)e,
                   (unsigned long long)(e - b), ds, nelem * esize);
  t->begin = (size_t)b;
  t->end = (size_t)e;
  return SEQCL_OK;
}

static int by_range(const void *pa, const void *pb) {
  const sq_st_tensor *a = pa, *b = pb;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end) return a->end < b->end ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* The tensors' byte ranges, sorted, must cover [0, data_bytes) exactly. */
static seqcl_status check_tiling(const char *name, const sq_st_file *f, size_t data_start) {
  size_t expected = 0;
  for (size_t i = 0; i < f->count; i++) {
    const sq_st_tensor *t = &f->tensors[i];
    if (t->end > f->data_bytes)
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: tensor '%s': bytes [%zu, %zu) of the data section run past the end of the "
                     "file (it ends at byte offset %zu; the tensor would end at %zu)",
                     name, t->name, t->begin, t->end, data_start + f->data_bytes, data_start + t->end);
    if (t->begin < expected)
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: tensor '%s': bytes [%zu, %zu) overlap tensor '%s' (byte offset %zu)", name,
                     t->name, t->begin, t->end, f->tensors[i - 1].name, data_start + t->begin);
    if (t->begin > expected)
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: gap in the data section: bytes [%zu, %zu) (byte offset %zu) belong to no "
                     "tensor, before tensor '%s'",
                     name, expected, t->begin, data_start + expected, t->name);
    expected = t->end;
  }
  if (expected != f->data_bytes)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: %zu trailing bytes at byte offset %zu belong to no tensor (the data section "
                   "is %zu bytes, the tensors cover %zu)",
                   name, f->data_bytes - expected, data_start + expected, f->data_bytes, expected);
  return SEQCL_OK;
}

static seqcl_status parse_header(const char *name, const unsigned char *hdr, size_t hlen,
                                 int allow_i32, sq_st_file *f) {
  json_error_t err;
  json_t *root = json_loadb((const char *)hdr, hlen, JSON_REJECT_DUPLICATES, &err);
  if (!root)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: malformed JSON header at byte offset %d: %s", name,
                   err.position + 8, err.text);
  seqcl_status st = SEQCL_OK;
  if (!json_is_object(root)) {
    st = sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: the JSON header (byte offset 8) is not an object",
                 name);
    goto done;
  }
  size_t n = json_object_size(root);
  f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
  if (!f->tensors) {
    st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
    goto done;
  }
  const char *key;
  json_t *value;
  json_object_foreach(root, key, value) {
    if (strcmp(key, "__metadata__") == 0) {
      st = parse_metadata(name, value);
    } else {
      sq_st_tensor *t = &f->tensors[f->count];
      t->name = strdup(key);
      if (!t->name) {
        st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
        break;
      }
      f->count++;
      st = parse_entry(name, key, value, allow_i32, t);
    }
    if (st != SEQCL_OK) break;
  }
done:
  json_decref(root);
  return st;
}

/* Parses a file of len bytes whose first bytes are at `bytes`: all len of them,
 * or, when fd >= 0 (sq_st_open), the header alone (8 + its length, checked by
 * the caller), the data section staying in the file fd, which f then owns.
 * When owned is non-NULL, it is the malloc'd buffer holding bytes, and becomes
 * the data section storage instead of a copy; it is freed on failure either
 * way, as fd is closed. */
static seqcl_status parse_impl(const unsigned char *bytes, size_t len, const char *name,
                               int allow_i32, unsigned char *owned, int fd, sq_st_file **out) {
  *out = NULL;
  seqcl_status st;
  sq_st_file *f = calloc(1, sizeof *f);
  if (f) f->fd = -1;
  if (!f || !(f->path = strdup(name))) {
    st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
    goto fail;
  }
  if (len < 8) {
    st = sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                 "%s: file is %zu bytes, too short for the 8-byte header length at byte offset 0",
                 name, len);
    goto fail;
  }
  uint64_t hlen = load_le64(bytes);
  if (hlen == 0) {
    st = sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: header length at byte offset 0 is 0", name);
    goto fail;
  }
  if (hlen > SQ_ST_MAX_HEADER) {
    st = sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                 "%s: header length %llu at byte offset 0 exceeds the format's limit of %u bytes",
                 name, (unsigned long long)hlen, SQ_ST_MAX_HEADER);
    goto fail;
  }
  if (hlen > len - 8) {
    st = sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                 "%s: the %llu-byte header starting at byte offset 8 runs past the end of the file "
                 "(%zu bytes)",
                 name, (unsigned long long)hlen, len);
    goto fail;
  }
  size_t data_start = 8 + (size_t)hlen;
  f->data_bytes = len - data_start;
  st = parse_header(name, bytes + 8, (size_t)hlen, allow_i32, f);
  if (st != SEQCL_OK) goto fail;
  qsort(f->tensors, f->count, sizeof *f->tensors, by_range);
  st = check_tiling(name, f, data_start);
  if (st != SEQCL_OK) goto fail;

  f->data_start = data_start;
  if (fd >= 0) { /* read a tensor at a time (sq_st_tensor_f32) */
    f->fd = fd;
    fd = -1;
  } else if (owned) { /* the data section where it was read: not moved (megabytes) */
    f->mem = owned;
    f->data = owned + data_start;
    owned = NULL;
  } else {
    f->mem = f->data = malloc(f->data_bytes ? f->data_bytes : 1);
    if (!f->data) {
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
      goto fail;
    }
    if (f->data_bytes) memcpy(f->data, bytes + data_start, f->data_bytes);
  }
  free(owned); /* sq_st_open's header alone, parsed (the other buffers moved into f) */
  *out = f;
  return SEQCL_OK;
fail:
  free(owned);
  if (fd >= 0) close(fd);
  sq_st_free(f);
  return st;
}

seqcl_status sq_st_parse(const unsigned char *bytes, size_t len, const char *name, int allow_i32,
                         sq_st_file **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_st_parse: out is NULL");
  *out = NULL;
  if (!bytes && len) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_st_parse: bytes is NULL");
  static const unsigned char none[1] = {0};
  return parse_impl(bytes ? bytes : none, len, name ? name : "safetensors", allow_i32, NULL, -1,
                    out);
}

seqcl_status sq_st_read(const char *path, int allow_i32, sq_st_file **out) {
  if (!out || !path) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_st_read: NULL argument");
  *out = NULL;
  unsigned char *buf = NULL;
  size_t len = 0;
  SQ_TRY(sq_file_read_all(path, &buf, &len));
  return parse_impl(buf, len, path, allow_i32, buf, -1, out);
}

/* n bytes at offset off of fd into buf; 0, or -1 with errno (0 at an early end
 * of file). */
static int read_at(int fd, void *buf, size_t n, size_t off) {
  unsigned char *p = buf;
  while (n) {
    const ssize_t got = pread(fd, p, n, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      return -1;
    }
    p += got;
    n -= (size_t)got;
    off += (size_t)got;
  }
  return 0;
}

seqcl_status sq_st_open(const char *path, int allow_i32, sq_st_file **out) {
  if (!out || !path) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_st_open: NULL argument");
  *out = NULL;
  /* Whatever is not a well-formed start of a regular file goes the whole-file
   * way, which reports it (a folder, a short file, a header length out of
   * bounds) with its own messages. A pipe is never opened here: what a
   * first open took from it would be lost to the second. */
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return sq_st_read(path, allow_i32, out);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  unsigned char len8[8];
  if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 8 ||
      (unsigned long long)sb.st_size > (unsigned long long)(SIZE_MAX / 2) ||
      read_at(fd, len8, sizeof len8, 0) != 0) {
    if (fd >= 0) close(fd);
    return sq_st_read(path, allow_i32, out);
  }
  const size_t len = (size_t)sb.st_size;
  const uint64_t hlen = load_le64(len8);
  if (hlen == 0 || hlen > SQ_ST_MAX_HEADER || hlen > len - 8) {
    close(fd);
    return sq_st_read(path, allow_i32, out);
  }
  unsigned char *head = malloc(8 + (size_t)hlen);
  if (!head) {
    close(fd);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  if (read_at(fd, head, 8 + (size_t)hlen, 0) != 0) {
    const int e = errno;
    free(head);
    close(fd);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: read failed: %s", path,
                   e ? strerror(e) : "the file became shorter while it was read");
  }
  return parse_impl(head, len, path, allow_i32, head, fd, out);
}

/* The first of n little-endian float32 at p with an all-ones exponent (the
 * high 16 bits & 0x7f80), or SIZE_MAX. Blocks of 256 are tested without a
 * branch per value (every model load scans all its weights: a byte test with
 * an exit per value was 3 % of a one-line decode's process), and only a block
 * that holds one is searched. */
static inline unsigned f32_not_finite(const unsigned char *p, size_t i) {
  return (((unsigned)p[4 * i + 2] | (unsigned)p[4 * i + 3] << 8) & 0x7f80u) == 0x7f80u;
}

static size_t first_non_finite_f32(const unsigned char *p, size_t n) {
  enum { BLOCK = 256 };
  for (size_t b = 0; b < n; b += BLOCK) {
    const size_t e = n - b < BLOCK ? n : b + BLOCK;
    unsigned any = 0;
    for (size_t i = b; i < e; i++) any |= f32_not_finite(p, i);
    if (!any) continue;
    for (size_t i = b; i < e; i++)
      if (f32_not_finite(p, i)) return i;
  }
  return SIZE_MAX;
}

/* sq_st_first_non_finite over t's bytes at p */
static size_t first_non_finite_at(const sq_st_tensor *t, const unsigned char *p) {
  /* an all-ones exponent is an infinity or a NaN in each of the three formats;
   * the bytes are little-endian, so the exponent sits in the last one or two */
  switch (t->dtype) {
  case SQ_DT_F32: return first_non_finite_f32(p, t->nelem);
  case SQ_DT_F16:
    for (size_t i = 0; i < t->nelem; i++)
      if ((p[2 * i + 1] & 0x7c) == 0x7c) return i;
    break;
  case SQ_DT_BF16:
    for (size_t i = 0; i < t->nelem; i++)
      if ((p[2 * i + 1] & 0x7f) == 0x7f && (p[2 * i] & 0x80)) return i;
    break;
  case SQ_DT_I32:
    break;
  }
  return SIZE_MAX;
}

size_t sq_st_first_non_finite(const sq_st_file *f, const sq_st_tensor *t) {
  if (!f || !t || !f->data) return SIZE_MAX;
  return first_non_finite_at(t, f->data + t->begin);
}

/* sq_st_check_finite over t's bytes at p */
static seqcl_status check_finite_at(const sq_st_file *f, const sq_st_tensor *t,
                                    const unsigned char *p) {
  const size_t i = first_non_finite_at(t, p);
  if (i == SIZE_MAX) return SEQCL_OK;
  float v = 0;
  if (t->dtype == SQ_DT_F32) {
    uint32_t bits = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                    (uint32_t)p[4 * i + 3] << 24;
    memcpy(&v, &bits, sizeof v);
  } else {
    uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    v = t->dtype == SQ_DT_F16 ? sq_half_to_float(h) : sq_bf16_to_float(h);
  }
  /* the index per dimension too: [row, column] is what a reader looks for */
  char where[160] = "";
  if (t->ndim > 1) {
    size_t rest = i, pos = 0;
    size_t idx[SQ_ST_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
      idx[d] = rest % (size_t)t->shape[d];
      rest /= (size_t)t->shape[d];
    }
    pos += (size_t)snprintf(where, sizeof where, " [");
    for (int d = 0; d < t->ndim && pos < sizeof where; d++)
      pos += (size_t)snprintf(where + pos, sizeof where - pos, "%s%zu", d ? ", " : "", idx[d]);
    if (pos < sizeof where) snprintf(where + pos, sizeof where - pos, "]");
  }
  return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                 "%s: tensor '%s': element%s (flat index %zu) is %s; weights must be finite",
                 f->path, t->name, where, i, isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf");
}

seqcl_status sq_st_check_finite(const sq_st_file *f, const sq_st_tensor *t) {
  if (!f || !t)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_st_check_finite: NULL argument");
  if (!f->data) /* sq_st_open's: sq_st_tensor_f32 checks as it reads */
    return sq_fail(NULL, SEQCL_ERR_INTERNAL, "%s: tensor '%s' is not in memory", f->path, t->name);
  return check_finite_at(f, t, f->data + t->begin);
}

/* Whether a float32 tensor's file bytes are this machine's floats as they are. */
static int to_f32_in_place(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return 1;
#else
  return 0;
#endif
}

/* sq_st_to_f32 of t's bytes at p; dst may be p itself for F32 */
static void to_f32_at(const sq_st_tensor *t, const unsigned char *p, float *dst) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* the file's little-endian float32 is this machine's: one copy (the loop
   * below, a dtype switch per element, was 7 % of a one-line decode) */
  if (t->dtype == SQ_DT_F32) {
    if ((const void *)dst != (const void *)p) memcpy(dst, p, t->nelem * sizeof *dst);
    return;
  }
#endif
  for (size_t i = 0; i < t->nelem; i++) {
    switch (t->dtype) {
    case SQ_DT_F32: {
      const unsigned char *q = p + 4 * i;
      uint32_t bits = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
      memcpy(&dst[i], &bits, sizeof bits);
      break;
    }
    case SQ_DT_F16:
      dst[i] = sq_half_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
      break;
    case SQ_DT_BF16:
      dst[i] = sq_bf16_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
      break;
    case SQ_DT_I32: {
      const unsigned char *q = p + 4 * i;
      uint32_t bits = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
      int32_t v;
      memcpy(&v, &bits, sizeof v);
      dst[i] = (float)v;
      break;
    }
    }
  }
}

void sq_st_to_f32(const sq_st_file *f, const sq_st_tensor *t, float *dst) {
  if (!f || !t || !dst || !f->data) return;
  to_f32_at(t, f->data + t->begin, dst);
}

seqcl_status sq_st_tensor_f32(const sq_st_file *f, const sq_st_tensor *t, float *dst) {
  if (f->fd < 0) {
    SQ_TRY(sq_st_check_finite(f, t));
    sq_st_to_f32(f, t, dst);
    return SEQCL_OK;
  }
  const size_t bytes = t->end - t->begin;
  /* float32 lands in place (a little-endian host's own format); the 16-bit
   * types and a big-endian host convert from a copy */
  const int in_place = t->dtype == SQ_DT_F32 && to_f32_in_place();
  unsigned char *p = in_place ? (unsigned char *)dst : malloc(bytes ? bytes : 1);
  if (!p) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", f->path);
  seqcl_status st = SEQCL_OK;
  if (read_at(f->fd, p, bytes, f->data_start + t->begin) != 0) {
    const int e = errno;
    st = sq_fail(NULL, SEQCL_ERR_IO, "%s: tensor '%s': read failed: %s", f->path, t->name,
                 e ? strerror(e) : "the file became shorter after it was opened");
  }
  if (st == SEQCL_OK) st = check_finite_at(f, t, p);
  if (st == SEQCL_OK) to_f32_at(t, p, dst);
  if (!in_place) free(p);
  return st;
}

int sq_st_to_i32(const sq_st_file *f, const sq_st_tensor *t, int32_t *dst) {
  if (!f || !t || !dst || !f->data || t->dtype != SQ_DT_I32) return -1;
  const unsigned char *p = f->data + t->begin;
  for (size_t i = 0; i < t->nelem; i++) {
    const unsigned char *q = p + 4 * i;
    uint32_t bits = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    memcpy(&dst[i], &bits, sizeof bits);
  }
  return 0;
}
