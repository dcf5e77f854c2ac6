/* The backend registry: which backend serves a device. The context code
 * (src/context.c) creates backends only through here, so a new backend (CUDA,
 * Level Zero) is one more row in registry.c's table. */
#ifndef SQ_BACKEND_REGISTRY_H
#define SQ_BACKEND_REGISTRY_H

#include <seqcl/seqcl.h>

#include "backend/backend.h"

/* Creates the backend that serves `device` for ctx (ctx->info is that device
 * already). SEQCL_ERR_UNSUPPORTED, naming the device, when the backend for it
 * was not built in. *out is NULL on failure. */
seqcl_status sq_backend_create(seqcl_ctx *ctx, const seqcl_device_info *device,
                               sq_backend **out);

/* 1 when this build has the backend of this kind. */
int sq_backend_built(sq_backend_kind kind);

#endif
