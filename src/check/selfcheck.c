#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check/oplist.h"
#include "check/selfcheck.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/paths.h"

static volatile int suppressed = 0;

void sq_selfcheck_suppress(int on) { suppressed = on != 0; }

/* Everything whose change can change the verdict. */
static void device_key(const seqcl_device_info *info, char *buf, size_t cap) {
  snprintf(buf, cap, "%s|%s|%s|%s|seqcl %s", info->platform, info->name, info->driver_version,
           info->opencl_version, seqcl_version());
  for (char *p = buf; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
}

seqcl_status sq_selfcheck_path(const seqcl_device_info *info, char *buf, size_t cap) {
  char dir[4096], key[1024];
  SQ_TRY(sq_cache_dir(dir, sizeof dir, 0));
  device_key(info, key, sizeof key);
  int n = snprintf(buf, cap, "%s/selfcheck/%016llx.txt", dir,
                   (unsigned long long)sq_hash_str(0, key));
  if (n < 0 || (size_t)n >= cap)
    return sq_fail(NULL, SEQCL_ERR_IO, "self-check: cache path too long under %s", dir);
  return SEQCL_OK;
}

static void copy_text(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

typedef struct verdict {
  int known, passed;
  char op[64], shape[160], message[600];
} verdict;

/* Reads a recorded verdict; anything unreadable or for another key is "unknown". */
static void read_verdict(const char *path, const char *key, verdict *v) {
  memset(v, 0, sizeof *v);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[1024];
  int key_ok = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, "key=", 4)) key_ok = !strcmp(line + 4, key);
    else if (!strcmp(line, "verdict=pass")) v->known = 1, v->passed = 1;
    else if (!strcmp(line, "verdict=fail")) v->known = 1, v->passed = 0;
    else if (!strncmp(line, "op=", 3)) copy_text(v->op, sizeof v->op, line + 3);
    else if (!strncmp(line, "shape=", 6)) copy_text(v->shape, sizeof v->shape, line + 6);
    else if (!strncmp(line, "message=", 8)) copy_text(v->message, sizeof v->message, line + 8);
  }
  fclose(f);
  if (!key_ok) v->known = 0;
}

static int mkdir_p(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode) ? 0 : -1;
  return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* Through the shared writer (temporary file, then rename): readers never see half a verdict.
 * Failing to record is not an error (the check simply runs again next time). */
static void write_verdict(const char *path, const char *key, const verdict *v) {
  char dir[4096];
  if (sq_cache_dir(dir, sizeof dir, 1) != SEQCL_OK) return;
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/selfcheck", dir);
  if (mkdir_p(sub) != 0) return;
  char msg[600];
  snprintf(msg, sizeof msg, "%s", v->message);
  for (char *p = msg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  sq_outfile f;
  if (sq_outfile_open(path, &f) != SEQCL_OK) {
    sq_clear_message();
    return;
  }
  fprintf(f.f, "seqcl-selfcheck 1\nkey=%s\nverdict=%s\n", key, v->passed ? "pass" : "fail");
  if (!v->passed) fprintf(f.f, "op=%s\nshape=%s\nmessage=%s\n", v->op, v->shape, msg);
  if (sq_outfile_commit(&f) != SEQCL_OK) sq_clear_message();
}

/* The quick subset: the first quick shape of every entry (one small CLBlast
 * GEMM included), against the host backend. */
static seqcl_status run_subset(seqcl_ctx *ctx, sq_open_host_fn open_host, verdict *v) {
  seqcl_ctx *host = NULL;
  seqcl_status st = open_host(&host);
  if (st != SEQCL_OK) return sq_fail_wrap(ctx, st, "self-check: opening the host reference");
  sq_reference ref = sq_reference_host(host);
  size_t nops = 0;
  const sq_op *const *ops = sq_op_list(&nops);
  v->known = 1;
  v->passed = 1;
  for (size_t i = 0; i < nops && v->passed; i++) {
    sq_case_result r;
    st = sq_check_case(ctx, ops[i], ops[i]->quick[0], 0, &ref, &r);
    if (st != SEQCL_OK) break;
    if (r.verdict == SQ_FAIL) {
      v->passed = 0;
      copy_text(v->op, sizeof v->op, ops[i]->name);
      copy_text(v->shape, sizeof v->shape, ops[i]->quick[0]);
      copy_text(v->message, sizeof v->message, r.message);
    }
  }
  seqcl_ctx_close(host);
  return st;
}

seqcl_status sq_selfcheck(seqcl_ctx *ctx, sq_open_host_fn open_host) {
  if (suppressed || ctx->info.type == SEQCL_DEVICE_HOST) return SEQCL_OK;
  const char *env = getenv("SEQCL_SELFCHECK");
  if (env && !strcmp(env, "0")) return SEQCL_OK;
  char key[1024], path[4400] = "";
  device_key(&ctx->info, key, sizeof key);
  /* Kernels loaded from SEQCL_KERNEL_DIR change without changing the key:
   * while developing them, check every time and record nothing. */
  const char *kdir = getenv("SEQCL_KERNEL_DIR");
  int cache = sq_cache_enabled() && !(kdir && *kdir) &&
              sq_selfcheck_path(&ctx->info, path, sizeof path) == SEQCL_OK;
  verdict v;
  memset(&v, 0, sizeof v);
  if (cache) read_verdict(path, key, &v);
  if (!v.known) {
    /* The check opens the host only (open_host): no recursion. */
    SQ_TRY(run_subset(ctx, open_host, &v));
    if (cache) write_verdict(path, key, &v);
  }
  if (v.passed) {
    sq_clear_message();
    return SEQCL_OK;
  }
  return sq_fail(ctx, SEQCL_ERR_SELFCHECK,
                 "device %s (%s) failed its self-check in %s (shape %s): %s; "
                 "`seqcl check --device %s --op %s --shape %s` shows the details "
                 "(SEQCL_SELFCHECK=0 skips the self-check)",
                 ctx->info.selector, ctx->info.name, v.op, v.shape, v.message, ctx->info.selector,
                 v.op, v.shape);
}
