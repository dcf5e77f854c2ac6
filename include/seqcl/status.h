/* seqcl status codes: one X-macro list generates the enum, the names and the
 * default messages (the pattern of libuv's UV_ERRNO_MAP). Include <seqcl/seqcl.h>. */
#ifndef SEQCL_STATUS_H
#define SEQCL_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, "default message") */
#define SEQCL_STATUS_MAP(X)                                                        \
  X(OK, 0, "success")                                                              \
  X(ERR_INVALID_ARGUMENT, 1, "invalid argument")                                   \
  X(ERR_SHAPE, 2, "tensor shapes do not agree")                                    \
  X(ERR_EMPTY_SEQUENCE, 3, "a sequence has no valid position")                     \
  X(ERR_OUT_OF_MEMORY, 4, "out of host memory")                                    \
  X(ERR_DEVICE_OUT_OF_MEMORY, 5, "out of device memory or resources")              \
  X(ERR_BAD_SELECTOR, 6, "malformed device selector")                              \
  X(ERR_NO_DEVICE, 7, "no device matches the selector")                            \
  X(ERR_OPENCL, 8, "OpenCL call failed")                                           \
  X(ERR_BUILD, 9, "OpenCL program build failed")                                   \
  X(ERR_UNSUPPORTED, 10, "operation not supported on this device or build")        \
  X(ERR_IO, 11, "file could not be read or written")                               \
  X(ERR_BAD_MODEL, 12, "malformed model file or config")                           \
  X(ERR_BAD_TOKENS, 13, "malformed token file")                                    \
  X(ERR_NON_FINITE, 14, "a computation produced non-finite values")                \
  X(ERR_SELFCHECK, 15, "device refused by its self-check")                         \
  X(ERR_CANCELLED, 16, "operation cancelled")                                      \
  X(ERR_CHECK_FAILED, 17, "correctness check failed")                              \
  X(ERR_INTERNAL, 18, "internal error")

typedef enum seqcl_status {
#define SEQCL_STATUS_ENUM_(name, value, msg) SEQCL_##name = value,
  SEQCL_STATUS_MAP(SEQCL_STATUS_ENUM_)
#undef SEQCL_STATUS_ENUM_
} seqcl_status;

/* "SEQCL_ERR_NO_DEVICE"; "SEQCL_UNKNOWN_STATUS" for values outside the list. */
const char *seqcl_status_name(seqcl_status status);
/* The default one-line message of a status (never NULL). */
const char *seqcl_status_str(seqcl_status status);
/* 1 when the status means bad input or bad usage (CLI exit status 2),
 * 0 when it is a runtime failure (exit status 1) or success. */
int seqcl_status_is_input_error(seqcl_status status);

/* The detailed message of the last failed call made by this thread (which
 * call, the OpenCL error name, the build log, the file/line/tensor); "" if none.
 * Valid until the next failing seqcl call on this thread. */
const char *seqcl_last_message(void);

#ifdef __cplusplus
}
#endif
#endif
