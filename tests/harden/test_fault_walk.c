/* Fault walk: for every fault kind and device, makes the 1st, 2nd, ... event of
 * that kind fail (src/core/fault.h) during a whole workload, until a run goes
 * through without reaching the armed event. Every injected failure must come
 * back as the status the failed call maps to, with a message naming the call,
 * without a crash (and, in the ASan build, without a leak), and with nothing
 * left in the output folder. Workloads:
 *   forward   open + load + teacher-forced forward + write the result file
 *   decode    open + load + greedy decode + beam decode (nbest, alignments) +
 *             write the alignments file
 *   ensemble  open + load two models + their greedy and beam (nbest) decode
 *   train     open + two Adam steps from token files with validation, saving
 *   reverse   open + two steps of the reversal task + evaluation, saving
 *   cli-*     the seqcl binary itself (forward, beam decode) with
 *             SEQCL_FAULT=KIND:N in its environment: exit status 1, a message
 *             on stderr, nothing at --out / --alignments
 * The host backend has allocations only; OpenCL devices have all three kinds.
 * The number of fault points walked is printed per workload, kind and device. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <seqcl/seqcl.h>

#include "core/error.h"
#include "core/fault.h"
#include "harden_util.h"
#include "model/safetensors.h"
#include "model/tokens.h"

#ifndef SEQCL_FAULT_INJECTION
int main(void) {
  fprintf(stderr, "built without fault injection (-Dfault_injection=disabled, or auto in a "
                  "release build): skipped\n");
  return 77;
}
#else

/* A run that still fails past this many events is walking in circles. */
#define WALK_LIMIT 20000

static char root[256];     /* model, token files */
static char outdir[300];   /* root/out: where runs write */
static char g_msg[SQ_MSG_MAX]; /* the message of the first failing call */
static seqcl_device_info *devices;
static size_t ndevices;

static const char *kind_name[SQ_FAULT_KINDS_] = {"alloc", "build", "launch"};

/* Records the message of the first failure of a run (clean-up after it must
 * not be able to hide it). */
static seqcl_status note(seqcl_status st) {
  if (st != SEQCL_OK && !g_msg[0]) snprintf(g_msg, sizeof g_msg, "%s", seqcl_last_message());
  return st;
}
#define TRY(expr)                                   \
  do {                                              \
    if ((st = note(expr)) != SEQCL_OK) goto done;   \
  } while (0)

typedef seqcl_status (*workload_fn)(const seqcl_device_info *dev, const char *out);

static seqcl_status read_pair(sq_seqs *src, sq_seqs *tgt) {
  seqcl_status st = sq_tokens_read(hu_join(root, "src.txt"), 7, NULL, src);
  if (st == SEQCL_OK && tgt) st = sq_tokens_read(hu_join(root, "tgt.txt"), 9, NULL, tgt);
  return st;
}

static seqcl_seqs view(const sq_seqs *s) {
  seqcl_seqs v = {s->count, s->ids, s->offsets};
  return v;
}

static seqcl_status wl_forward(const seqcl_device_info *dev, const char *out) {
  seqcl_status st;
  seqcl_ctx *ctx = NULL;
  seqcl_model *m = NULL;
  seqcl_forward_result *r = NULL;
  sq_seqs src = {0}, tgt = {0};
  TRY(read_pair(&src, &tgt));
  TRY(seqcl_ctx_open_info(dev, &ctx));
  TRY(seqcl_model_load(ctx, hu_join(root, "model"), &m));
  seqcl_seqs s = view(&src), t = view(&tgt);
  TRY(seqcl_model_forward(m, &s, &t, 2, &r));
  const sq_st_out o[2] = {sq_st_out3("logits", (int64_t)r->N, r->T, r->V, r->logits),
                          sq_st_scalar("loss", &r->loss)};
  TRY(sq_st_write(hu_join(out, "forward.safetensors"), o, 2));
done:
  seqcl_forward_result_free(r);
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  sq_seqs_free(&src);
  sq_seqs_free(&tgt);
  return st;
}

static seqcl_status wl_decode(const seqcl_device_info *dev, const char *out) {
  seqcl_status st;
  seqcl_ctx *ctx = NULL;
  seqcl_model *m = NULL;
  seqcl_decode_result *greedy = NULL, *beam = NULL;
  sq_seqs src = {0};
  TRY(read_pair(&src, NULL));
  TRY(seqcl_ctx_open_info(dev, &ctx));
  TRY(seqcl_model_load(ctx, hu_join(root, "model"), &m));
  seqcl_seqs s = view(&src);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.batch_size = 3;
  TRY(seqcl_model_decode(m, &s, &o, &greedy));
  o.beam = 3;
  o.nbest = 2;
  o.want_alignments = 1;
  TRY(seqcl_model_decode(m, &s, &o, &beam));
  const sq_st_out a =
      sq_st_out3("alignments", (int64_t)beam->count, beam->T, beam->S, beam->alignments);
  TRY(sq_st_write(hu_join(out, "alignments.safetensors"), &a, 1));
done:
  seqcl_decode_result_free(greedy);
  seqcl_decode_result_free(beam);
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  sq_seqs_free(&src);
  return st;
}

static seqcl_status wl_ensemble(const seqcl_device_info *dev, const char *out) {
  (void)out;
  seqcl_status st;
  seqcl_ctx *ctx = NULL;
  seqcl_model *m[2] = {NULL, NULL};
  seqcl_decode_result *greedy = NULL, *beam = NULL;
  sq_seqs src = {0};
  TRY(read_pair(&src, NULL));
  TRY(seqcl_ctx_open_info(dev, &ctx));
  TRY(seqcl_model_load(ctx, hu_join(root, "model"), &m[0]));
  TRY(seqcl_model_load(ctx, hu_join(root, "model2"), &m[1]));
  seqcl_seqs s = view(&src);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.batch_size = 3;
  TRY(seqcl_ensemble_decode(m, 2, &s, &o, &greedy));
  o.beam = 3;
  o.nbest = 2;
  TRY(seqcl_ensemble_decode(m, 2, &s, &o, &beam));
done:
  seqcl_decode_result_free(greedy);
  seqcl_decode_result_free(beam);
  seqcl_model_free(m[0]);
  seqcl_model_free(m[1]);
  seqcl_ctx_close(ctx);
  sq_seqs_free(&src);
  return st;
}

static seqcl_status wl_train(const seqcl_device_info *dev, const char *out) {
  seqcl_status st;
  seqcl_ctx *ctx = NULL;
  TRY(seqcl_ctx_open_info(dev, &ctx));
  seqcl_train_files_options o;
  seqcl_train_files_options_init(&o);
  o.src_path = hu_join(root, "src.txt");
  o.tgt_path = hu_join(root, "tgt.txt");
  o.valid_src_path = o.src_path;
  o.valid_tgt_path = o.tgt_path;
  o.config_path = hu_join(root, "model/config.json");
  o.save_dir = hu_join(out, "trained");
  o.steps = 2;
  o.batch_size = 3;
  o.seed = 1;
  o.valid_every = 1;
  seqcl_train_files_result r;
  TRY(seqcl_train_files(ctx, &o, &r));
done:
  seqcl_ctx_close(ctx);
  return st;
}

static seqcl_status wl_reverse(const seqcl_device_info *dev, const char *out) {
  seqcl_status st;
  seqcl_ctx *ctx = NULL;
  TRY(seqcl_ctx_open_info(dev, &ctx));
  seqcl_train_options o;
  seqcl_train_options_init(&o);
  o.length = 3;
  o.steps = 2;
  o.batch_size = 4;
  o.save_dir = hu_join(out, "reverse");
  seqcl_train_result r;
  TRY(seqcl_train_reverse(ctx, &o, &r));
done:
  seqcl_ctx_close(ctx);
  return st;
}

/* ---- the seqcl binary ---- */

static int cli_run(const char *selector, const char *fault, const char *out, int decode,
                   char *err, size_t err_cap) {
  const char *errpath = hu_join(root, "stderr.txt");
  pid_t pid = fork();
  if (pid == 0) {
    if (fault) setenv("SEQCL_FAULT", fault, 1);
    else unsetenv("SEQCL_FAULT");
    if (!freopen("/dev/null", "w", stdout) || !freopen(errpath, "w", stderr)) _exit(126);
    char o1[600], o2[600];
    snprintf(o1, sizeof o1, "%s/%s", out, decode ? "decoded.txt" : "forward.safetensors");
    snprintf(o2, sizeof o2, "%s/alignments.safetensors", out);
    char model[600], src[600], tgt[600];
    snprintf(model, sizeof model, "%s/model", root);
    snprintf(src, sizeof src, "%s/src.txt", root);
    snprintf(tgt, sizeof tgt, "%s/tgt.txt", root);
    if (decode)
      execl(SEQCL_BIN, "seqcl", "decode", "--device", selector, "--model", model, "--src", src,
            "--beam", "2", "--out", o1, "--alignments", o2, (char *)NULL);
    else
      execl(SEQCL_BIN, "seqcl", "forward", "--device", selector, "--model", model, "--src", src,
            "--tgt", tgt, "--out", o1, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  err[0] = '\0';
  FILE *f = fopen(errpath, "r");
  if (f) {
    size_t n = fread(err, 1, err_cap - 1, f);
    err[n] = '\0';
    fclose(f);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- the walk ---- */

/* What a failure of this kind on this device must look like. */
static seqcl_status expected_status(sq_fault_kind kind, const seqcl_device_info *dev) {
  if (kind == SQ_FAULT_BUILD) return SEQCL_ERR_BUILD;
  if (kind == SQ_FAULT_ALLOC && dev->type == SEQCL_DEVICE_HOST) return SEQCL_ERR_OUT_OF_MEMORY;
  /* the injected launch failure is CL_OUT_OF_RESOURCES: a launch the device
   * cannot run, which is not a lack of memory */
  if (kind == SQ_FAULT_LAUNCH) return SEQCL_ERR_OPENCL;
  return SEQCL_ERR_DEVICE_OUT_OF_MEMORY;
}

static const char *expected_words(sq_fault_kind kind, const seqcl_device_info *dev) {
  if (kind == SQ_FAULT_BUILD) return "injected failure";
  if (kind == SQ_FAULT_LAUNCH) return "clEnqueueNDRangeKernel";
  return dev->type == SEQCL_DEVICE_HOST ? "cannot allocate a buffer" : "clCreateBuffer";
}

static void fresh_out(const char *out) {
  hu_rmtree(out);
  assert_int_equal(mkdir(out, 0755), 0);
}

/* Returns the number of fault points walked (runs that failed on purpose). */
static unsigned walk(const char *name, workload_fn fn, const seqcl_device_info *dev,
                     sq_fault_kind kind) {
  const char *out = outdir;
  for (unsigned n = 1; n <= WALK_LIMIT; n++) {
    fresh_out(out);
    g_msg[0] = '\0';
    sq_clear_message();
    sq_fault_arm(kind, n);
    seqcl_status st = fn(dev, out);
    const unsigned left = sq_fault_pending(kind);
    sq_fault_arm(kind, 0);
    if (left != 0) { /* the run ended before the armed event */
      if (st != SEQCL_OK)
        fail_msg("%s on %s, %s fault #%u never reached, yet the run failed: %s: %s", name,
                 dev->selector, kind_name[kind], n, seqcl_status_name(st), g_msg);
      hu_rmtree(out);
      return n - 1;
    }
    if (st == SEQCL_OK)
      fail_msg("%s on %s: %s fault #%u was swallowed (the run reported success)", name,
               dev->selector, kind_name[kind], n);
    if (st != expected_status(kind, dev) || !g_msg[0] ||
        !strstr(g_msg, expected_words(kind, dev)))
      fail_msg("%s on %s, %s fault #%u: got %s with message '%s'; want %s naming '%s'", name,
               dev->selector, kind_name[kind], n, seqcl_status_name(st), g_msg,
               seqcl_status_name(expected_status(kind, dev)), expected_words(kind, dev));
    if (hu_count_entries(out) != 0) {
      /* a training run may create its save folder; it must stay empty */
      char sub[400];
      snprintf(sub, sizeof sub, "%s/%s", out, strcmp(name, "train") ? "reverse" : "trained");
      if (hu_count_entries(out) != 1 || hu_count_entries(sub) != 0)
        fail_msg("%s on %s, %s fault #%u: the failed run left files in %s", name, dev->selector,
                 kind_name[kind], n, out);
    }
  }
  fail_msg("%s on %s: %s faults still failing after %d events", name, dev->selector,
           kind_name[kind], WALK_LIMIT);
  return 0;
}

static unsigned walk_cli(int decode, const seqcl_device_info *dev, sq_fault_kind kind) {
  const char *name = decode ? "cli-decode" : "cli-forward";
  const char *out = outdir;
  static char err[SQ_MSG_MAX];
  for (unsigned n = 1; n <= WALK_LIMIT; n++) {
    fresh_out(out);
    char fault[64];
    snprintf(fault, sizeof fault, "%s:%u", kind_name[kind], n);
    int rc = cli_run(dev->selector, fault, out, decode, err, sizeof err);
    if (rc == 0) {
      hu_rmtree(out);
      return n - 1;
    }
    if (rc != 1 || !strstr(err, expected_words(kind, dev)))
      fail_msg("%s on %s with SEQCL_FAULT=%s: exit status %d (want 1), stderr '%s' (want it to "
               "name '%s')",
               name, dev->selector, fault, rc, err, expected_words(kind, dev));
    if (hu_count_entries(out) != 0)
      fail_msg("%s on %s with SEQCL_FAULT=%s: the failed run left files in %s", name,
               dev->selector, fault, out);
  }
  fail_msg("%s on %s: %s faults still failing after %d events", name, dev->selector,
           kind_name[kind], WALK_LIMIT);
  return 0;
}

static void walk_all(const char *name, workload_fn fn) {
  for (size_t d = 0; d < ndevices; d++) {
    const seqcl_device_info *dev = &devices[d];
    const int kinds = dev->type == SEQCL_DEVICE_HOST ? 1 : SQ_FAULT_KINDS_;
    /* A clean run first: the workload itself must succeed here. */
    g_msg[0] = '\0';
    const char *out = outdir;
    fresh_out(out);
    seqcl_status st = fn(dev, out);
    if (st == SEQCL_ERR_UNSUPPORTED) {
      print_message("%-12s %-10s unsupported here: %s\n", name, dev->selector, g_msg);
      continue;
    }
    if (st != SEQCL_OK)
      fail_msg("%s on %s fails without any fault: %s: %s", name, dev->selector,
               seqcl_status_name(st), g_msg);
    for (int k = 0; k < kinds; k++) {
      unsigned points = walk(name, fn, dev, (sq_fault_kind)k);
      print_message("%-12s %-10s %-6s %4u fault points walked\n", name, dev->selector,
                    kind_name[k], points);
      assert_true(k != SQ_FAULT_ALLOC || points > 0);
    }
  }
}

/* One cmocka test per library workload, so that main's filter can pick one. */
#define WALK_TEST(test, name, workload)                                                      \
  static void test(void **state) {                                                           \
    (void)state;                                                                             \
    walk_all(name, workload);                                                                \
  }
WALK_TEST(test_forward, "forward", wl_forward)
WALK_TEST(test_decode, "decode", wl_decode)
WALK_TEST(test_ensemble, "ensemble", wl_ensemble)
WALK_TEST(test_train_files, "train", wl_train)
WALK_TEST(test_train_reverse, "reverse", wl_reverse)

static void test_cli(void **state) {
  (void)state;
  static char err[SQ_MSG_MAX];
  for (size_t d = 0; d < ndevices; d++) {
    const seqcl_device_info *dev = &devices[d];
    const char *out = outdir;
    for (int decode = 0; decode < 2; decode++) {
      fresh_out(out);
      int rc = cli_run(dev->selector, NULL, out, decode, err, sizeof err);
      if (rc != 0) fail_msg("seqcl on %s fails without any fault (%d): %s", dev->selector, rc, err);
      assert_int_equal(hu_count_entries(out), decode ? 2 : 1);
      const int kinds = dev->type == SEQCL_DEVICE_HOST ? 1 : SQ_FAULT_KINDS_;
      for (int k = 0; k < kinds; k++) {
        unsigned points = walk_cli(decode, dev, (sq_fault_kind)k);
        print_message("%-12s %-10s %-6s %4u fault points walked\n",
                      decode ? "cli-decode" : "cli-forward", dev->selector, kind_name[k], points);
        assert_true(k != SQ_FAULT_ALLOC || points > 0);
      }
    }
    hu_rmtree(out);
  }
}

static int setup(void **state) {
  (void)state;
  if (hu_mkdtemp(root, sizeof root, "fault")) return -1;
  snprintf(outdir, sizeof outdir, "%s/out", root);
  if (hu_make_model_dir(hu_join(root, "model"), NULL, 11, NULL, 0, 0.0f)) return -1;
  if (hu_make_model_dir(hu_join(root, "model2"), NULL, 12, NULL, 0, 0.0f)) return -1;
  hu_write_text(root, "src.txt", hu_src_text);
  hu_write_text(root, "tgt.txt", hu_tgt_text);
  devices = hu_devices(&ndevices);
  return ndevices ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  hu_rmtree(root);
  seqcl_devices_free(devices);
  return 0;
}

/* An optional argument selects tests by name pattern (cmocka's filter). */
int main(int argc, char **argv) {
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),     cmocka_unit_test(test_decode),
      cmocka_unit_test(test_ensemble),
      cmocka_unit_test(test_train_files), cmocka_unit_test(test_train_reverse),
      cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
