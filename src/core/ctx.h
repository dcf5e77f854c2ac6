/* The context object behind the public seqcl_ctx handle. */
#ifndef SQ_CORE_CTX_H
#define SQ_CORE_CTX_H

#include <seqcl/seqcl.h>

#include "backend/backend.h"
#include "core/error.h"

struct seqcl_ctx {
  seqcl_device_info info;
  sq_backend *be;
  char message[SQ_MSG_MAX];
};

#endif
