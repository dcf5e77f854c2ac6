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
#include "core/settings.h"
#include "ops/ops.h"

static volatile int suppressed = 0;

void sq_selfcheck_suppress(int on) { suppressed = on != 0; }

/* Everything whose change can change the code run, and so the verdict: the
 * device and its driver, seqcl's version, and the settings that pick kernel
 * forms (SEQCL_KERNELS) and GEMM paths (SEQCL_GEMM). */
static void device_key(const seqcl_device_info *info, const sq_settings *set, char *buf,
                       size_t cap) {
  static const char *const forms[] = {"auto", "cpu", "gpu"};
  static const char *const gemms[] = {"auto", "small", "clblast"};
  const unsigned k = (unsigned)set->kernels, g = (unsigned)set->gemm;
  snprintf(buf, cap, "%s|%s|%s|%s|seqcl %s|SEQCL_KERNELS=%s|SEQCL_GEMM=%s", info->platform,
           info->name, info->driver_version, info->opencl_version, seqcl_version(),
           k < 3 ? forms[k] : "?", g < 3 ? gemms[g] : "?");
  for (char *p = buf; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
}

static seqcl_status verdict_path(const seqcl_device_info *info, const sq_settings *set,
                                 char *buf, size_t cap) {
  char dir[4096], key[1024];
  SQ_TRY(sq_cache_dir(dir, sizeof dir, 0));
  device_key(info, set, key, sizeof key);
  int n = snprintf(buf, cap, "%s/selfcheck/%016llx.txt", dir,
                   (unsigned long long)sq_hash_str(0, key));
  if (n < 0 || (size_t)n >= cap)
    return sq_fail(NULL, SEQCL_ERR_IO, "self-check: cache path too long under %s", dir);
  return SEQCL_OK;
}

seqcl_status sq_selfcheck_path(const seqcl_device_info *info, char *buf, size_t cap) {
  sq_settings set;
  SQ_TRY(sq_settings_from_env(NULL, &set));
  return verdict_path(info, &set, buf, cap);
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
  if (stat(dir, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return 0;
    errno = ENOTDIR;
    return -1;
  }
  return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* Through the shared writer (temporary file, then rename): readers never see half a verdict.
 * Failing to record is not an error (the check simply runs again next time);
 * returns 0, or -1 with the reason in why. */
static int write_verdict(const char *path, const char *key, const verdict *v, char *why,
                         size_t cap) {
  char dir[4096];
  if (sq_cache_dir(dir, sizeof dir, 1) != SEQCL_OK) {
    snprintf(why, cap, "%s", seqcl_last_message());
    sq_clear_message();
    return -1;
  }
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/selfcheck", dir);
  if (mkdir_p(sub) != 0) {
    const char *reason = strerror(errno);
    if (snprintf(why, cap, "%s: %s", sub, reason) >= (int)cap && cap > 4)
      memcpy(why + cap - 4, "...", 4); /* a long path: its end is dropped */
    return -1;
  }
  char msg[600];
  snprintf(msg, sizeof msg, "%s", v->message);
  for (char *p = msg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  sq_outfile f;
  if (sq_outfile_open(path, &f) != SEQCL_OK) {
    snprintf(why, cap, "%s", seqcl_last_message());
    sq_clear_message();
    return -1;
  }
  fprintf(f.f, "seqcl-selfcheck 1\nkey=%s\nverdict=%s\n", key, v->passed ? "pass" : "fail");
  if (!v->passed) fprintf(f.f, "op=%s\nshape=%s\nmessage=%s\n", v->op, v->shape, msg);
  if (sq_outfile_commit(&f) != SEQCL_OK) {
    snprintf(why, cap, "%s", seqcl_last_message());
    sq_clear_message();
    return -1;
  }
  return 0;
}

/* Runs one case; records the first failure in v. */
static seqcl_status run_one(seqcl_ctx *ctx, const sq_op *op, const char *shape,
                            const sq_reference *ref, verdict *v) {
  sq_case_result r;
  SQ_TRY(sq_check_case(ctx, op, shape, 0, ref, &r));
  if (r.verdict == SQ_FAIL && v->passed) {
    v->passed = 0;
    copy_text(v->op, sizeof v->op, op->name);
    copy_text(v->shape, sizeof v->shape, shape);
    copy_text(v->message, sizeof v->message, r.message);
  }
  return SEQCL_OK;
}

/* The GEMM paths beyond the op list's first shapes: the encoder's hoisted
 * products, training and the batched calls take CLBlast kernels that small
 * products never reach (its "indirect" path: padded tiles and the tuned Xgemm
 * kernel, wrong on some Intel GPUs in CLBlast 1.5.3), and decoder steps take
 * the device's own kernel on CPU-type devices. Integer inputs (int=1): every
 * result is exact, and the reference costs no more than the product. */
static seqcl_status run_gemm_paths(seqcl_ctx *ctx, const sq_reference *ref, verdict *v) {
  const sq_op *gemm = sq_op_find("gemm");
  if (!gemm) return SEQCL_OK;
  static const char *const common[] = {
      "M=4,N=67,K=129,tb=1",               /* the nn.Linear layout of a decode step */
      "M=33,N=29,K=47,int=1",              /* CLBlast, direct */
      "M=33,N=29,K=47,batch=3,pad=2,int=1", /* CLBlast, strided-batched */
  };
  for (size_t i = 0; i < sizeof common / sizeof *common && v->passed; i++)
    SQ_TRY(run_one(ctx, gemm, common[i], ref, v));
  size_t side = 0;
  SQ_TRY(sq_gemm_paths(ctx, -1, &side));
  if (!side || !v->passed) return SEQCL_OK;
  if (strstr(ctx->info.platform, "Oclgrind")) {
    /* A simulator runs side^3 (896^3 here) for hours: CLBlast is told to take
     * the indirect path for every product while small ones run, then given
     * its own threshold back. */
    SQ_TRY(sq_gemm_paths(ctx, 1, &side));
    seqcl_status st = run_one(ctx, gemm, "M=67,N=45,K=83,int=1", ref, v);
    if (st == SEQCL_OK && v->passed) st = run_one(ctx, gemm, "M=37,N=21,K=53,batch=2,int=1", ref, v);
    seqcl_status back = sq_gemm_paths(ctx, 0, &side);
    return st != SEQCL_OK ? st : back;
  }
  /* The smallest product that takes the indirect path: M*N*K >= side^3, no
   * transposes (so no other kernel serves it); on GPUs at least 400^3, where
   * the tuned tiles of a large device are all in use. */
  if (ctx->info.type == SEQCL_DEVICE_GPU && side < 400) side = 400;
  char shape[96];
  snprintf(shape, sizeof shape, "M=%zu,N=%zu,K=%zu,int=1", side, side, side);
  return run_one(ctx, gemm, shape, ref, v);
}

/* The quick subset: the first quick shape of every entry (the kernel forms the
 * device uses: SEQCL_KERNELS picks them), then every GEMM path, against the
 * host backend. */
static seqcl_status run_subset(seqcl_ctx *ctx, sq_open_host_fn open_host, verdict *v) {
  seqcl_ctx *host = NULL;
  seqcl_status st = open_host(&host);
  if (st != SEQCL_OK) return sq_fail_wrap(ctx, st, "self-check: opening the host reference");
  sq_reference ref = sq_reference_host(host);
  size_t nops = 0;
  const sq_op *const *ops = sq_op_list(&nops);
  v->known = 1;
  v->passed = 1;
  for (size_t i = 0; i < nops && v->passed && st == SEQCL_OK; i++)
    st = run_one(ctx, ops[i], ops[i]->quick[0], &ref, v);
  if (st == SEQCL_OK && v->passed) st = run_gemm_paths(ctx, &ref, v);
  seqcl_ctx_close(host);
  return st;
}

seqcl_status sq_selfcheck(seqcl_ctx *ctx, sq_open_host_fn open_host) {
  if (suppressed || ctx->info.type == SEQCL_DEVICE_HOST) return SEQCL_OK;
  const char *env = getenv("SEQCL_SELFCHECK");
  if (env && !strcmp(env, "0")) return SEQCL_OK;
  char key[1024], path[4400] = "";
  device_key(&ctx->info, &ctx->settings, key, sizeof key);
  /* Kernels loaded from SEQCL_KERNEL_DIR change without changing the key:
   * while developing them, check every time and record nothing. */
  const char *kdir = getenv("SEQCL_KERNEL_DIR");
  int cache = sq_cache_enabled() && !(kdir && *kdir) &&
              verdict_path(&ctx->info, &ctx->settings, path, sizeof path) == SEQCL_OK;
  verdict v;
  memset(&v, 0, sizeof v);
  if (cache) read_verdict(path, key, &v);
  if (!v.known) {
    /* The check opens the host only (open_host): no recursion. */
    SQ_TRY(run_subset(ctx, open_host, &v));
    char why[600] = "";
    if (cache && write_verdict(path, key, &v, why, sizeof why) != 0)
      fprintf(stderr,
              "seqcl: warning: the self-check verdict for %s (%s) could not be recorded in %s "
              "(%s); the self-check will run again at the next open\n",
              ctx->info.selector, ctx->info.name, path, why);
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
