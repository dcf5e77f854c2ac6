/* Per-context settings from the environment (settings.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/settings.h"

void sq_settings_default(sq_settings *s) { memset(s, 0, sizeof *s); }

/* The index of env's value in names (NULL-terminated); 0 (the first, the
 * default) when unset or empty; -1 for anything else. */
static int pick(const char *env, const char *const *names) {
  if (!env || !*env) return 0;
  for (int i = 0; names[i]; i++)
    if (!strcmp(env, names[i])) return i;
  return -1;
}

static seqcl_status bad(seqcl_ctx *ctx, const char *var, const char *value, const char *want) {
  return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                 "%s='%s' (from the environment) is not valid: expected %s", var, value, want);
}

seqcl_status sq_settings_from_env(seqcl_ctx *ctx, sq_settings *out) {
  sq_settings_default(out);
  /* in enum order */
  static const char *const forms[] = {"auto", "cpu", "gpu", NULL};
  static const char *const gemms[] = {"auto", "small", "clblast", "measured", NULL};
  const char *v = getenv("SEQCL_KERNELS");
  int i = pick(v, forms);
  if (i < 0) return bad(ctx, "SEQCL_KERNELS", v, "auto, cpu or gpu");
  out->kernels = (sq_kernel_forms)i;
  v = getenv("SEQCL_GEMM");
  if ((i = pick(v, gemms)) < 0) return bad(ctx, "SEQCL_GEMM", v, "auto, small, clblast or measured");
  out->gemm = (sq_gemm_choice)i;
  if ((out->threads = sq_threads_env(&v)) < 0)
    return bad(ctx, "SEQCL_THREADS", v, SQ_THREADS_WANT);
  if (sq_host_isa_env(&v) == -2) return bad(ctx, "SEQCL_HOST_ISA", v, SQ_HOST_ISA_WANT);
  return SEQCL_OK;
}

int sq_host_isa_env(const char **value) {
  static const char *const levels[] = {"auto", "v4", "v3", "base", NULL};
  static const int level_of[] = {-1, 4, 3, 0};
  const char *v = getenv("SEQCL_HOST_ISA");
  if (value) *value = v;
  const int i = pick(v, levels);
  return i < 0 ? -2 : level_of[i];
}

int sq_threads_env(const char **value) {
  const char *v = getenv("SEQCL_THREADS");
  if (value) *value = v;
  if (!v || !*v) return 0;
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  return errno || !end || *end != '\0' || n < 1 || n > 64 ? -1 : (int)n;
}
