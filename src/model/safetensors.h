/* safetensors files (https://github.com/huggingface/safetensors): 8-byte little-
 * endian header length, JSON header, raw little-endian data. */
#ifndef SQ_MODEL_SAFETENSORS_H
#define SQ_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <seqcl/seqcl.h>

#include "core/halfwidth.h" /* sq_half_to_float, sq_bf16_to_float */

#define SQ_ST_MAX_DIMS 8
#define SQ_ST_MAX_HEADER (100u * 1000u * 1000u) /* 100 MB, the format's own limit */

typedef enum sq_dtype { SQ_DT_F32, SQ_DT_F16, SQ_DT_BF16, SQ_DT_I32 } sq_dtype;

typedef struct sq_st_tensor {
  char *name;
  sq_dtype dtype;
  int ndim;
  int64_t shape[SQ_ST_MAX_DIMS];
  size_t nelem;
  size_t begin, end; /* byte range within the data section */
} sq_st_tensor;

typedef struct sq_st_file {
  char *path;
  size_t count;
  sq_st_tensor *tensors; /* sorted by begin offset */
  unsigned char *data;   /* the data section, inside mem; NULL from sq_st_open */
  size_t data_bytes;
  unsigned char *mem;    /* what data lies in: the file's bytes as read (owned) */
  int fd;                /* sq_st_open: the file, its data section at data_start; else -1 */
  size_t data_start;
} sq_st_file;

/* Reads and validates the whole file: header length bounded and inside the
 * file, JSON well formed (duplicate keys rejected), __metadata__ a string map,
 * dtypes F32/F16/BF16 (I32 too when allow_i32), shapes non-negative with
 * products computed without overflow, byte sizes matching dtype x shape, byte
 * ranges tiling the data section exactly. Errors are SEQCL_ERR_BAD_MODEL naming
 * the file and tensor or byte offset (SEQCL_ERR_IO for unreadable files). */
seqcl_status sq_st_read(const char *path, int allow_i32, sq_st_file **out);
seqcl_status sq_st_parse(const unsigned char *bytes, size_t len, const char *name, int allow_i32,
                         sq_st_file **out);
/* As sq_st_read, with the same checks, but a regular file's data section is
 * left on disk (the data section's length from the file's size) and read a
 * tensor at a time by sq_st_tensor_f32, straight into where it goes: a model
 * load then never holds the file's bytes in memory of their own (a 6 MB file
 * buffer was 14 ms of a 16-line `seqcl decode`, its pages faulted and zeroed
 * in this VM). Anything else (a pipe) is read whole, as sq_st_read does.
 * Such a file holds no data in memory (f->data NULL): the helpers below that
 * read f->data (first_non_finite, to_f32, to_i32) are for sq_st_read's and
 * sq_st_parse's files only, and find nothing in it (SIZE_MAX, no values, -1;
 * sq_st_check_finite fails with SEQCL_ERR_INTERNAL). */
seqcl_status sq_st_open(const char *path, int allow_i32, sq_st_file **out);
/* Tensor t as float32 in dst (t->nelem floats), SEQCL_ERR_BAD_MODEL (as
 * sq_st_check_finite) when it holds a NaN or an infinity, SEQCL_ERR_IO when
 * the file can no longer be read as it was opened (it changed). */
seqcl_status sq_st_tensor_f32(const sq_st_file *f, const sq_st_tensor *t, float *dst);
void sq_st_free(sq_st_file *f);
const sq_st_tensor *sq_st_find(const sq_st_file *f, const char *name);
/* The flat index of t's first NaN or infinity, read from the bits on disk of
 * a file from sq_st_read or sq_st_parse (F32, F16 and BF16 alike), or SIZE_MAX when every element is finite (and for
 * I32 tensors). Costs one pass over the bytes, no conversion. */
size_t sq_st_first_non_finite(const sq_st_file *f, const sq_st_tensor *t);
/* SEQCL_ERR_BAD_MODEL naming the file, the tensor, the flat index (and the
 * index per dimension) and the value when t holds a NaN or an infinity. */
seqcl_status sq_st_check_finite(const sq_st_file *f, const sq_st_tensor *t);
/* Converts tensor t to float32 into dst (t->nelem floats). */
void sq_st_to_f32(const sq_st_file *f, const sq_st_tensor *t, float *dst);
/* Copies an I32 tensor into dst (t->nelem values); -1 when t is not I32. */
int sq_st_to_i32(const sq_st_file *f, const sq_st_tensor *t, int32_t *dst);

/* Writing: F32 tensors only, written to a temporary file in the same folder and
 * renamed into place, so a failure leaves nothing at path. */
typedef struct sq_st_out {
  const char *name;
  int ndim;
  int64_t shape[SQ_ST_MAX_DIMS];
  const float *data;
} sq_st_out;
seqcl_status sq_st_write(const char *path, const sq_st_out *tensors, size_t count);
/* An output tensor of shape [d0, d1, d2], and one of shape [] (a scalar). */
static inline sq_st_out sq_st_out3(const char *name, int64_t d0, int64_t d1, int64_t d2,
                                   const float *data) {
  sq_st_out t = {name, 3, {d0, d1, d2}, data};
  return t;
}
static inline sq_st_out sq_st_scalar(const char *name, const float *data) {
  sq_st_out t = {name, 0, {0}, data};
  return t;
}

#endif
