/* The composition root: opening a context picks the device, reads the
 * context's settings from the environment, creates the backend through the
 * registry and runs the first-use self-check. It sits above every other part
 * of the library (nothing below includes it); core/ctx.h only describes the
 * object it builds. */
#include <stdlib.h>
#include <string.h>

#include "backend/registry.h"
#include "check/selfcheck.h"
#include "core/ctx.h"

/* The self-check's reference: the host path, opened as any context is (no
 * self-check runs on the host, so this does not recurse). */
static seqcl_status open_host_reference(seqcl_ctx **out) {
  *out = NULL;
  seqcl_device_info *hosts = NULL;
  size_t nh = 0;
  SQ_TRY(seqcl_devices_select("cpu", &hosts, &nh));
  seqcl_status st = nh == 1 ? seqcl_ctx_open_info(&hosts[0], out) : SEQCL_ERR_INTERNAL;
  seqcl_devices_free(hosts);
  return st;
}

seqcl_status seqcl_ctx_open_info(const seqcl_device_info *device, seqcl_ctx **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_ctx_open_info: out is NULL");
  *out = NULL;
  if (!device)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_ctx_open_info: device is NULL");
  seqcl_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "seqcl_ctx_open: out of host memory");
  ctx->info = *device;
  seqcl_status st = sq_settings_from_env(NULL, &ctx->settings);
  if (st == SEQCL_OK) st = sq_backend_create(ctx, device, &ctx->be);
  if (st != SEQCL_OK) {
    free(ctx);
    return st;
  }
  /* First use of a (device, driver, seqcl version): the quick self-check. */
  if (device->type != SEQCL_DEVICE_HOST &&
      (st = sq_selfcheck(ctx, open_host_reference)) != SEQCL_OK) {
    seqcl_ctx_close(ctx);
    return st;
  }
  *out = ctx;
  return SEQCL_OK;
}

seqcl_status seqcl_ctx_open(const char *selector, seqcl_ctx **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_ctx_open: out is NULL");
  *out = NULL;
  seqcl_device_info *list = NULL;
  size_t count = 0;
  SQ_TRY(seqcl_devices_select(selector, &list, &count));
  seqcl_status st;
  if (count != 1) {
    st = sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                 "device selector '%s' names %zu devices; this command uses exactly one",
                 selector && *selector ? selector : (seqcl_device_env() ? seqcl_device_env() : "auto"),
                 count);
  } else {
    st = seqcl_ctx_open_info(&list[0], out);
  }
  seqcl_devices_free(list);
  return st;
}

void seqcl_ctx_close(seqcl_ctx *ctx) {
  if (!ctx) return;
  if (ctx->be) ctx->be->ops->destroy(ctx->be);
  free(ctx);
}

const seqcl_device_info *seqcl_ctx_device(const seqcl_ctx *ctx) { return ctx ? &ctx->info : NULL; }

const char *seqcl_ctx_message(const seqcl_ctx *ctx) { return ctx ? ctx->message : ""; }

int seqcl_has_opencl(void) { return sq_backend_built(SQ_BACKEND_OPENCL); }
