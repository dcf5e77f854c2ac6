/* Internal error reporting: every failure path calls sq_fail, which formats the
 * detailed message into the thread's last-message buffer and the context's. */
#ifndef SQ_CORE_ERROR_H
#define SQ_CORE_ERROR_H

#include <seqcl/seqcl.h>

/* Long enough for a program build log; longer messages are truncated with "...". */
#define SQ_MSG_MAX 16384

#if defined(__GNUC__)
#define SQ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SQ_PRINTF(a, b)
#endif

/* Records "fmt..." as the message of a failure with this status and returns the
 * status. ctx may be NULL (only the thread's message is set). */
seqcl_status sq_fail(seqcl_ctx *ctx, seqcl_status status, const char *fmt, ...) SQ_PRINTF(3, 4);

/* Prefixes the current thread message with "what: " (keeps the detail of a failure
 * that happened deeper down) and returns status unchanged. */
seqcl_status sq_fail_wrap(seqcl_ctx *ctx, seqcl_status status, const char *fmt, ...) SQ_PRINTF(3, 4);

/* Clears the thread's message (used at the start of public calls that may succeed). */
void sq_clear_message(void);

/* While on (per thread), failures set only the thread's message, not the
 * context's: tasks running at once on one context (sq_run_tasks) would
 * otherwise write the context's message from several threads; the caller
 * raises a failed task's message again on its own thread. Returns the
 * previous setting. */
int sq_message_private(int on);

/* Propagate a failure: SQ_TRY(expr) returns the status of expr when it is not OK. */
#define SQ_TRY(expr)                                                                 \
  do {                                                                               \
    seqcl_status sq_try_st_ = (expr);                                                \
    if (sq_try_st_ != SEQCL_OK) return sq_try_st_;                                   \
  } while (0)

#endif
