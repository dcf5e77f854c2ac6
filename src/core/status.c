#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/ctx.h"
#include "core/error.h"

const char *seqcl_status_name(seqcl_status status) {
  switch (status) {
#define SQ_NAME_(name, value, msg) \
  case SEQCL_##name:               \
    return "SEQCL_" #name;
    SEQCL_STATUS_MAP(SQ_NAME_)
#undef SQ_NAME_
  }
  return "SEQCL_UNKNOWN_STATUS";
}

const char *seqcl_status_str(seqcl_status status) {
  switch (status) {
#define SQ_STR_(name, value, msg) \
  case SEQCL_##name:              \
    return msg;
    SEQCL_STATUS_MAP(SQ_STR_)
#undef SQ_STR_
  }
  return "unknown status";
}

int seqcl_status_is_input_error(seqcl_status status) {
  switch (status) {
  case SEQCL_ERR_INVALID_ARGUMENT:
  case SEQCL_ERR_SHAPE:
  case SEQCL_ERR_EMPTY_SEQUENCE:
  case SEQCL_ERR_BAD_SELECTOR:
  case SEQCL_ERR_NO_DEVICE:
  case SEQCL_ERR_IO:
  case SEQCL_ERR_BAD_MODEL:
  case SEQCL_ERR_BAD_TOKENS:
    return 1;
  default:
    return 0;
  }
}

static _Thread_local char tl_message[SQ_MSG_MAX];
static _Thread_local int tl_private; /* sq_message_private */

const char *seqcl_last_message(void) { return tl_message; }

void sq_clear_message(void) { tl_message[0] = '\0'; }

static void finish_truncated(char *buf, size_t cap, int written) {
  if (written >= 0 && (size_t)written >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
}

int sq_message_private(int on) {
  const int was = tl_private;
  tl_private = on;
  return was;
}

static void publish(seqcl_ctx *ctx) {
  if (ctx && !tl_private) {
    size_t n = strlen(tl_message);
    if (n >= sizeof ctx->message) n = sizeof ctx->message - 1;
    memcpy(ctx->message, tl_message, n);
    ctx->message[n] = '\0';
  }
}

seqcl_status sq_fail(seqcl_ctx *ctx, seqcl_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tl_message, sizeof tl_message, fmt, ap);
  va_end(ap);
  finish_truncated(tl_message, sizeof tl_message, n);
  publish(ctx);
  return status;
}

seqcl_status sq_fail_wrap(seqcl_ctx *ctx, seqcl_status status, const char *fmt, ...) {
  char inner[SQ_MSG_MAX];
  memcpy(inner, tl_message, sizeof inner);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tl_message, sizeof tl_message, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof tl_message && inner[0]) {
    int m = snprintf(tl_message + n, sizeof tl_message - (size_t)n, ": %s", inner);
    finish_truncated(tl_message + n, sizeof tl_message - (size_t)n, m);
  } else {
    finish_truncated(tl_message, sizeof tl_message, n);
  }
  publish(ctx);
  return status;
}

const char *seqcl_version(void) { return SEQCL_VERSION_STRING; }
