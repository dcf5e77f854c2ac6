/* The first-use self-check: the first time a (device, driver version, seqcl
 * version) is opened for compute, the quick subset of the op list runs on it
 * against the host backend; the verdict is kept in the cache folder, and a
 * device that fails is refused with SEQCL_ERR_SELFCHECK. */
#ifndef SQ_CHECK_SELFCHECK_H
#define SQ_CHECK_SELFCHECK_H

#include "core/ctx.h"

/* Opens the host reference context (the composition root, src/context.c,
 * passes its own opener: the check never calls up into the root). */
typedef seqcl_status (*sq_open_host_fn)(seqcl_ctx **out);

/* Called by seqcl_ctx_open_info for every non-host device once its backend
 * exists. SEQCL_SELFCHECK=0 skips it. */
seqcl_status sq_selfcheck(seqcl_ctx *ctx, sq_open_host_fn open_host);

/* `seqcl check` runs the whole list itself: while suppressed (a process-wide
 * switch), opening a device runs no self-check. */
void sq_selfcheck_suppress(int on);

/* The cache file holding the verdict for this device (for messages and tests). */
seqcl_status sq_selfcheck_path(const seqcl_device_info *info, char *buf, size_t cap);

#endif
