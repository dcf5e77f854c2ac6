/* seqcl devices and contexts. Include <seqcl/seqcl.h>. */
#ifndef SEQCL_DEVICE_H
#define SEQCL_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum seqcl_device_type {
  SEQCL_DEVICE_HOST = 0,        /* the host path: C loops + CBLAS, no OpenCL */
  SEQCL_DEVICE_CPU = 1,         /* an OpenCL CPU device (PoCL, Oclgrind, vendor CPU runtimes) */
  SEQCL_DEVICE_GPU = 2,
  SEQCL_DEVICE_ACCELERATOR = 3,
  SEQCL_DEVICE_OTHER = 4
} seqcl_device_type;

/* Properties of one device. Strings are NUL-terminated and truncated to fit. */
typedef struct seqcl_device_info {
  int index;              /* -1 for the host, else N of "opencl:N" */
  int platform_index;     /* P of "opencl:P.D" (clinfo -l numbering); -1 for the host */
  int device_index;       /* D of "opencl:P.D"; -1 for the host */
  char selector[32];      /* "cpu" or "opencl:N" */
  char name[256];
  char vendor[256];
  char platform[256];
  char driver_version[128];
  char opencl_version[128]; /* CL_DEVICE_VERSION; "" for the host */
  seqcl_device_type type;
  unsigned compute_units;   /* host: online processors */
  uint64_t global_mem_bytes;
  uint64_t local_mem_bytes;
  size_t max_work_group_size;
  int fp64;               /* cl_khr_fp64 (the host: 1) */
  int fp16;               /* cl_khr_fp16 */
  int subgroups;          /* cl_khr_subgroups or cl_intel_subgroups */
  int is_default;         /* what "auto" picks */
} seqcl_device_info;

/* Every device: the host first, then every OpenCL device in platform order.
 * *out is malloc'd by the library; release it with seqcl_devices_free.
 * Platforms whose enumeration fails are skipped (their error is in
 * seqcl_last_message); no OpenCL at all is not an error. */
seqcl_status seqcl_devices_list(seqcl_device_info **out, size_t *count);

/* The devices a selector names, in order, duplicates removed (SPEC §3 grammar,
 * including "all" and comma-separated lists). NULL or "" means the value of
 * SEQCL_DEVICE as read once per process, else "auto". A selector that matches
 * nothing fails with SEQCL_ERR_NO_DEVICE and a message listing every device. */
seqcl_status seqcl_devices_select(const char *selector, seqcl_device_info **out, size_t *count);
void seqcl_devices_free(seqcl_device_info *list);

/* SEQCL_DEVICE as read at the first call in this process (NULL if unset). */
const char *seqcl_device_env(void);

/* A context: one device, its queue, its program cache, its workspace.
 *
 * Threads: use one context per thread (a context and the models and results
 * made with it must be used by one thread at a time). Contexts are independent:
 * several threads may each open their own context, on the same device or not,
 * and load and run models concurrently; results do not depend on it.
 * seqcl_devices_list/select/free, seqcl_device_env (SEQCL_DEVICE is read once,
 * under a once-guard), seqcl_version and seqcl_last_message (one message per
 * thread) may be called from any thread at any time. The program cache on disk
 * is safe across threads and processes: entries are written to a temporary
 * file and renamed into place, and a damaged entry is rebuilt. */
typedef struct seqcl_ctx seqcl_ctx;

/* Opens the single device the selector names (NULL/"" = SEQCL_DEVICE, else "auto").
 * "all" or a list naming several devices is SEQCL_ERR_INVALID_ARGUMENT here.
 * On failure *out is NULL and seqcl_last_message() says why. */
seqcl_status seqcl_ctx_open(const char *selector, seqcl_ctx **out);
/* Opens a device already described by seqcl_devices_list/select. */
seqcl_status seqcl_ctx_open_info(const seqcl_device_info *device, seqcl_ctx **out);
void seqcl_ctx_close(seqcl_ctx *ctx); /* accepts NULL */
const seqcl_device_info *seqcl_ctx_device(const seqcl_ctx *ctx);
/* The detailed message of the last failure on this context ("" if none). */
const char *seqcl_ctx_message(const seqcl_ctx *ctx);

/* Library version, as numbers and as "MAJOR.MINOR.PATCH". */
#define SEQCL_VERSION_MAJOR 0
#define SEQCL_VERSION_MINOR 1
#define SEQCL_VERSION_PATCH 0
#define SEQCL_VERSION_STRING "0.1.0"
const char *seqcl_version(void);
/* 1 when the library was built with OpenCL support. */
int seqcl_has_opencl(void);

#ifdef __cplusplus
}
#endif
#endif
