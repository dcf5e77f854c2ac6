/* The backend registry (registry.h): one row per backend kind. The only place
 * that knows which backends this build has; also the allocation the
 * constructors share (sq_backend_new). */
#include <stddef.h>
#include <stdlib.h>

#include "backend/registry.h"
#include "core/error.h"

typedef struct backend_row {
  sq_backend_kind kind;
  const char *what; /* for "built without ..." */
  /* whether this backend serves a device of this type */
  int (*serves)(seqcl_device_type type);
  /* NULL when the build leaves the backend out */
  seqcl_status (*create)(seqcl_ctx *ctx, sq_backend **out);
} backend_row;

static int serves_host(seqcl_device_type type) { return type == SEQCL_DEVICE_HOST; }
/* every device the enumeration found through OpenCL */
static int serves_opencl(seqcl_device_type type) { return type != SEQCL_DEVICE_HOST; }

static const backend_row rows[] = {
    {SQ_BACKEND_HOST, "the host path", serves_host, sq_host_backend_create},
#ifdef SEQCL_HAVE_OPENCL
    {SQ_BACKEND_OPENCL, "OpenCL", serves_opencl, sq_opencl_backend_create},
#else
    {SQ_BACKEND_OPENCL, "OpenCL", serves_opencl, NULL},
#endif
};

sq_backend *sq_backend_new(seqcl_ctx *ctx, const sq_backend_ops *ops, size_t impl_bytes) {
  sq_backend *be = calloc(1, sizeof *be);
  void *impl = calloc(1, impl_bytes);
  if (!be || !impl) {
    free(be);
    free(impl);
    return NULL;
  }
  be->ops = ops;
  be->ctx = ctx;
  be->impl = impl;
  return be;
}

seqcl_status sq_backend_create(seqcl_ctx *ctx, const seqcl_device_info *device,
                               sq_backend **out) {
  *out = NULL;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (!rows[i].serves(device->type)) continue;
    if (!rows[i].create)
      return sq_fail(NULL, SEQCL_ERR_UNSUPPORTED, "device %s: this seqcl was built without %s",
                     device->selector, rows[i].what);
    return rows[i].create(ctx, out);
  }
  return sq_fail(NULL, SEQCL_ERR_UNSUPPORTED, "device %s: no backend serves this device type",
                 device->selector);
}

int sq_backend_built(sq_backend_kind kind) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].kind == kind) return rows[i].create != NULL;
  return 0;
}
