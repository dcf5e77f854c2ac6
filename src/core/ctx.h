/* The context object behind the public seqcl_ctx handle. It is opened by the
 * composition root (src/context.c); this header only describes it, so every
 * floor below the root can read a context's device, backend, settings and
 * message buffer without including what sits above it. */
#ifndef SQ_CORE_CTX_H
#define SQ_CORE_CTX_H

#include <seqcl/seqcl.h>

#include "core/error.h"
#include "core/settings.h"

struct sq_backend; /* backend/backend.h */

struct seqcl_ctx {
  seqcl_device_info info;
  struct sq_backend *be;
  sq_settings settings; /* read once when the context opened */
  char message[SQ_MSG_MAX];
  /* batches decoded as parts on the backend's task threads, and the parts
   * (model/decode.c): for the tests and the benchmark */
  unsigned long long split_batches, split_parts;
};

/* The ablation switches now off in this context (SQ_ABL_*). */
static inline unsigned sq_ablated(const seqcl_ctx *ctx) { return ctx->settings.ablated; }
/* The benchmark's way to switch optimisations off (and back on) in one
 * context; nothing else changes them. */
static inline void sq_ctx_set_ablated(seqcl_ctx *ctx, unsigned mask) {
  ctx->settings.ablated = mask;
}

#endif
