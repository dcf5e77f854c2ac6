/* Outputs through the seqcl binary: the rules of src/core/fileio.h and the
 * --save rules of src/train/save_dir.h, as a user meets them.
 *   - a symlink stays a link and its target gets the bytes;
 *   - a FIFO stays a FIFO and delivers the bytes; a character device (a
 *     private null device) stays a device; /dev/fd/1 is standard output;
 *   - a read-only file is not overwritten (exit 2), checked as an unprivileged
 *     user (root ignores file modes; skipped where setpriv is missing);
 *   - every output path is checked before any work: a bad one fails within a
 *     second whatever the job, naming the option;
 *   - on failure nothing is left at any output path;
 *   - --save: new or empty folder, an existing model folder only with
 *     --overwrite (then replaced whole), never a folder of other files. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <math.h>

#include "../common/test_main.h"
#include "harden_util.h"

static char root[256];     /* model, token files */
static char model[320];    /* a finite model */
static char nanmodel[320]; /* a NaN in the decoder's attention key weights */
static char attnmodel[320]; /* finite, but every attention score overflows to NaN */
static char srcf[320], tgtf[320];
static char out[320];      /* each test's output folder, emptied between tests */
static char errtext[8192]; /* the last run's stderr */
static double seconds;     /* the last run's wall time */
static int as_nobody_ok;   /* setpriv can drop to uid 65534 */

/* Runs "SEQCL_BIN args" through the shell (stdout to /dev/null unless args
 * redirect it), optionally as uid/gid 65534; returns the exit status. */
static int run(int nobody, const char *fmt, ...) {
  char args[3000], cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  char errpath[340];
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", root);
  /* root drops to nobody; anyone else already is an unprivileged user */
  const char *drop = nobody && geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups"
                                              : "";
  snprintf(cmd, sizeof cmd, "%s env SEQCL_DEVICE=cpu SEQCL_CACHE=0 %s %s 2>%s%s", drop, SEQCL_BIN,
           args, errpath, strchr(args, '>') ? "" : " >/dev/null");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = system(cmd);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  errtext[0] = '\0';
  FILE *f = fopen(errpath, "r");
  if (f) {
    size_t n = fread(errtext, 1, sizeof errtext - 1, f);
    errtext[n] = '\0';
    fclose(f);
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static void expect_rc(int got, int want, const char *w1, const char *w2) {
  if (got != want || (w1 && !strstr(errtext, w1)) || (w2 && !strstr(errtext, w2)))
    fail_msg("exit %d '%s'; want %d naming '%s' and '%s'", got, errtext, want, w1 ? w1 : "",
             w2 ? w2 : "");
}

static const char *at(const char *name) { return hu_join(out, name); }

static size_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (size_t)sb.st_size : (size_t)-1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = calloc(1, 1 << 16);
  if (buf) buf[fread(buf, 1, (1 << 16) - 1, f)] = '\0';
  fclose(f);
  return buf;
}

/* ---- what the path is stays what it was ---- */

static void test_symlink_keeps_link(void **state) {
  (void)state;
  /* the reference bytes, through a plain file */
  assert_int_equal(run(0, "decode --model %s --src %s --out %s", model, srcf, at("plain.txt")), 0);
  char *want = slurp(at("plain.txt"));
  assert_non_null(want);
  assert_true(strlen(want) > 0);
  hu_write_text(out, "target.txt", "old\n");
  assert_int_equal(symlink("target.txt", at("link.txt")), 0);
  assert_int_equal(run(0, "decode --model %s --src %s --out %s", model, srcf, at("link.txt")), 0);
  struct stat sb;
  assert_int_equal(lstat(at("link.txt"), &sb), 0);
  assert_true(S_ISLNK(sb.st_mode)); /* before: replaced by a regular file */
  char *got = slurp(at("target.txt"));
  assert_string_equal(got, want);
  free(got);
  /* a dangling link: its target is created, the link stays */
  assert_int_equal(symlink("made.txt", at("dangling.txt")), 0);
  assert_int_equal(run(0, "decode --model %s --src %s --out %s", model, srcf, at("dangling.txt")),
                   0);
  assert_int_equal(lstat(at("dangling.txt"), &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  got = slurp(at("made.txt"));
  assert_string_equal(got, want);
  free(got);
  free(want);
  /* no temporary file anywhere: plain, target, link, made, dangling */
  assert_int_equal(hu_count_entries(out), 5);
}

static void test_fifo_delivers(void **state) {
  (void)state;
  assert_int_equal(run(0, "decode --model %s --src %s --out %s", model, srcf, at("plain.txt")), 0);
  char *want = slurp(at("plain.txt"));
  assert_int_equal(mkfifo(at("fifo"), 0600), 0);
  char reader[1200];
  snprintf(reader, sizeof reader, "cat %s > %s &", at("fifo"), at("got.txt"));
  assert_int_equal(system(reader), 0);
  assert_int_equal(run(0, "decode --model %s --src %s --out %s", model, srcf, at("fifo")), 0);
  struct stat sb;
  assert_int_equal(lstat(at("fifo"), &sb), 0);
  assert_true(S_ISFIFO(sb.st_mode)); /* before: replaced by a regular file */
  /* the reader ends once the writer closed: wait for its file to fill */
  for (int i = 0; i < 100 && file_size(at("got.txt")) != strlen(want); i++) usleep(20000);
  char *got = slurp(at("got.txt"));
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
  free(want);
}

/* A character device stays a device. The test never aims at the system's
 * /dev/null (a regression would replace it for the whole machine): it makes
 * its own null device where mknod is allowed (root), else skips that part. */
static void test_char_device_stays(void **state) {
  (void)state;
  struct stat sb;
  if (mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    assert_int_equal(run(0, "decode --model %s --src %s --out %s --alignments %s", model, srcf,
                         at("null"), at("null")),
                     0);
    assert_int_equal(
        run(0, "forward --model %s --src %s --tgt %s --out %s", model, srcf, tgtf, at("null")), 0);
    assert_int_equal(lstat(at("null"), &sb), 0);
    assert_true(S_ISCHR(sb.st_mode)); /* before: replaced by a regular file */
    assert_int_equal(hu_count_entries(out), 1);
  }
  /* /dev/fd/1 is the standard output: the bytes arrive, nothing is renamed
   * (a rename there fails harmlessly: /dev/fd lies on /proc) */
  assert_int_equal(
      run(0, "decode --model %s --src %s --out /dev/fd/1 > %s", model, srcf, at("stdout.txt")), 0);
  assert_true(file_size(at("stdout.txt")) > 0);
  assert_int_equal(lstat("/dev/fd", &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
}

/* ---- permissions: as an unprivileged user ---- */

static void test_read_only_not_overwritten(void **state) {
  (void)state;
  if (!as_nobody_ok) skip();
  assert_int_equal(chmod(out, 0777), 0);
  hu_write_text(out, "ro.txt", "keep me\n");
  assert_int_equal(chmod(at("ro.txt"), 0444), 0);
  expect_rc(run(1, "decode --model %s --src %s --out %s", model, srcf, at("ro.txt")), 2,
            "ro.txt", "not writable");
  char *got = slurp(at("ro.txt"));
  assert_string_equal(got, "keep me\n");
  free(got);
  /* a read-only folder: --out into it and --save into it fail within a second */
  assert_int_equal(mkdir(at("rodir"), 0555), 0);
  assert_int_equal(chmod(at("rodir"), 0555), 0);
  expect_rc(run(1, "decode --model %s --src %s --out %s/x.txt", model, srcf, at("rodir")), 2,
            "--out", "not writable");
  expect_rc(run(1, "train --task reverse --steps 100000 --save %s/m", at("rodir")), 2, "--save",
            "not writable");
  assert_true(seconds < 1.0);
  expect_rc(run(1, "train --src %s --tgt %s --config %s/config.json --steps 100000 --save %s",
                srcf, tgtf, model, at("rodir")),
            2, "--save", "not writable");
  assert_true(seconds < 1.0);
  assert_int_equal(hu_count_entries(at("rodir")), 0);
  assert_int_equal(hu_count_entries(out), 2);
}

/* ---- every output path is checked before the work ---- */

static void test_fail_fast(void **state) {
  (void)state;
  const char *bad = "/nonexistent-seqcl-folder/x";
  /* training for 100000 steps would take minutes: the run must end at once */
  expect_rc(run(0, "train --task reverse --steps 100000 --save %s", bad), 2, "--save",
            "does not exist");
  assert_true(seconds < 1.0);
  expect_rc(run(0, "train --src %s --tgt %s --config %s/config.json --steps 100000 --save %s",
                srcf, tgtf, model, bad),
            2, "--save", "does not exist");
  assert_true(seconds < 1.0);
  /* the model does not exist either: the output path is what is named */
  expect_rc(run(0, "decode --model /nonexistent-model --src %s --out %s", srcf, bad), 2, "--out",
            "does not exist");
  expect_rc(run(0, "decode --model %s --src %s --alignments %s", model, srcf, bad), 2,
            "--alignments", NULL);
  expect_rc(run(0, "decode --model %s --src %s --heatmap %s", model, srcf, bad), 2, "--heatmap",
            NULL);
  expect_rc(run(0, "decode --model %s --src %s --out %s", model, srcf, out), 2, "--out",
            "folder");
  expect_rc(run(0, "forward --model /nonexistent-model --src %s --tgt %s --out %s", srcf, tgtf,
                bad),
            2, "--out", NULL);
  /* check --json would run the whole suite first (minutes on PoCL) */
  expect_rc(run(0, "check --device cpu --json %s", bad), 2, "--json", NULL);
  assert_true(seconds < 1.0);
  expect_rc(run(0, "demo --steps 100000 --svg %s", bad), 2, "--svg", NULL);
  assert_true(seconds < 1.0);
  expect_rc(run(0, "heatmap --alignments /nonexistent.safetensors --src %s --svg %s", srcf, bad),
            2, "--svg", NULL);
  assert_int_equal(hu_count_entries(out), 0);
}

/* ---- nothing is left on failure ---- */

static void test_nothing_left(void **state) {
  (void)state;
  /* a NaN weight: refused at load (exit 2), after the paths were accepted */
  expect_rc(run(0, "decode --model %s --src %s --out %s --alignments %s --heatmap %s", nanmodel,
                srcf, at("o.txt"), at("a.safetensors"), at("h.svg")),
            2, "decoder.attention.key.weight", "flat index");
  expect_rc(run(0, "forward --model %s --src %s --tgt %s --out %s", nanmodel, srcf, tgtf,
                at("f.safetensors")),
            2, "decoder.attention.key.weight", NULL);
  assert_int_equal(hu_count_entries(out), 0);
  /* an old file at the path stays as it was */
  hu_write_text(out, "o.txt", "previous\n");
  expect_rc(run(0, "decode --model %s --src %s --out %s", nanmodel, srcf, at("o.txt")), 2, NULL,
            NULL);
  char *got = slurp(at("o.txt"));
  assert_string_equal(got, "previous\n");
  free(got);
  assert_int_equal(hu_count_entries(out), 1);
}

/* Finite weights whose attention scores are all NaN at run time (the general
 * score's query projection all 3e38): on every device, decode (greedy and
 * beam) and forward exit 1 naming the line, and leave nothing at --out.
 * Before the softmax's maximum saw NaN, such lines got a zero context and
 * the host and PoCL decoded them with exit 0. */
static void test_run_time_non_finite(void **state) {
  (void)state;
  size_t ndev = 0;
  seqcl_device_info *devs = hu_devices(&ndev);
  for (size_t d = 0; d < ndev; d++) {
    const char *dev = devs[d].selector;
    expect_rc(run(0, "decode --device %s --model %s --src %s --out %s", dev, attnmodel, srcf,
                  at("o.txt")),
              1, "greedy decoding: logits of line 1", "not finite");
    expect_rc(run(0, "decode --device %s --beam 2 --model %s --src %s --out %s", dev, attnmodel,
                  srcf, at("o.txt")),
              1, "beam search: logits of line 1", "not finite");
    expect_rc(run(0, "forward --device %s --model %s --src %s --tgt %s --out %s", dev, attnmodel,
                  srcf, tgtf, at("f.safetensors")),
              1, "of line 1", "not finite");
    assert_int_equal(hu_count_entries(out), 0);
  }
  seqcl_devices_free(devs);
}

/* ---- --save ---- */

static void test_save_rules(void **state) {
  (void)state;
  char m[400], mine[400];
  snprintf(m, sizeof m, "%s", at("m"));
  assert_int_equal(run(0, "train --task reverse --steps 2 --save %s", m), 0);
  assert_int_equal(hu_count_entries(m), 3); /* config, weights, the checkpoint to resume */
  /* again without --overwrite: refused before training, the model untouched */
  const size_t before = file_size(hu_join(m, "model.safetensors"));
  expect_rc(run(0, "train --task reverse --steps 2 --seed 3 --save %s", m), 2, "--overwrite", m);
  assert_int_equal(file_size(hu_join(m, "model.safetensors")), before);
  /* --overwrite replaces the folder whole: an old checkpoint and vocabulary go */
  /* (the reversal run made m/checkpoint: its training.json becomes a stale one) */
  hu_write_text(hu_join(m, "checkpoint"), "training.json", "{}\n");
  hu_write_text(m, "src.vocab", "a\n");
  assert_int_equal(run(0, "train --task reverse --steps 2 --seed 3 --save %s --overwrite", m), 0);
  assert_int_equal(hu_count_entries(m), 3); /* the vocabulary went; the checkpoint is this run's */
  assert_int_equal(access(hu_join(m, "config.json"), R_OK), 0);
  assert_int_equal(access(hu_join(m, "model.safetensors"), R_OK), 0);
  char *ck = slurp(hu_join(m, "checkpoint/training.json"));
  assert_non_null(strstr(ck, "seqcl.checkpoint"));
  free(ck);
  /* training on files with --overwrite: this run's checkpoint is kept */
  assert_int_equal(run(0, "train --src %s --tgt %s --config %s/config.json --steps 2 --save %s "
                          "--overwrite",
                       srcf, tgtf, model, m),
                   0);
  assert_int_equal(hu_count_entries(m), 3);
  assert_int_equal(access(hu_join(m, "checkpoint/training.json"), R_OK), 0);
  /* --resume naming the folder continues it in place */
  assert_int_equal(
      run(0, "train --src %s --tgt %s --resume %s --steps 4 --save %s", srcf, tgtf, m, m), 0);
  assert_int_equal(hu_count_entries(m), 3);
  /* a folder of other files: never, not even with --overwrite */
  snprintf(mine, sizeof mine, "%s", at("mine"));
  assert_int_equal(mkdir(mine, 0755), 0);
  hu_write_text(mine, "photo.jpg", "x");
  expect_rc(run(0, "train --task reverse --steps 2 --save %s --overwrite", mine), 2, "photo.jpg",
            "not a seqcl model folder");
  assert_int_equal(hu_count_entries(mine), 1);
  /* a file: refused */
  hu_write_text(out, "file", "x");
  expect_rc(run(0, "train --task reverse --steps 2 --save %s", at("file")), 2, "not a folder",
            NULL);
  /* an empty folder is written into */
  assert_int_equal(mkdir(at("empty"), 0755), 0);
  assert_int_equal(run(0, "train --task reverse --steps 2 --save %s", at("empty")), 0);
  assert_int_equal(hu_count_entries(at("empty")), 3); /* with the checkpoint */
  /* no temporary folder next to them */
  assert_int_equal(hu_count_entries(out), 4);
}

static int clean_out(void **state) {
  (void)state;
  hu_rmtree(out);
  return mkdir(out, 0755);
}

static int setup(void **state) {
  (void)state;
  if (hu_mkdtemp(root, sizeof root, "outputs")) return -1;
  /* an unprivileged user must reach the model and the token files */
  if (chmod(root, 0755)) return -1;
  snprintf(model, sizeof model, "%s/model", root);
  snprintf(nanmodel, sizeof nanmodel, "%s/nanmodel", root);
  snprintf(out, sizeof out, "%s/out", root);
  if (hu_make_model_dir(model, NULL, 5, NULL, 0, 0) ||
      hu_make_model_dir(nanmodel, NULL, 5, "decoder.attention.key.weight", 8, NAN))
    return -1;
  snprintf(attnmodel, sizeof attnmodel, "%s/attnmodel", root);
  sq_config g;
  hu_tiny_config(&g);
  g.score = SQ_SCORE_GENERAL;
  if (hu_make_model_dir(attnmodel, &g, 5, "decoder.attention.query.weight", HU_ALL, 3e38f))
    return -1;
  snprintf(srcf, sizeof srcf, "%s", hu_write_text(root, "src.txt", hu_src_text));
  snprintf(tgtf, sizeof tgtf, "%s", hu_write_text(root, "tgt.txt", hu_tgt_text));
  /* as root, modes are ignored: drop to nobody for the permission tests */
  as_nobody_ok = geteuid() != 0 ||
                 system("setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null") == 0;
  return mkdir(out, 0755);
}

static int teardown(void **state) {
  (void)state;
  hu_rmtree(root);
  return 0;
}

SQ_TEST_MAIN(setup, teardown,
      cmocka_unit_test_setup(test_symlink_keeps_link, clean_out),
      cmocka_unit_test_setup(test_fifo_delivers, clean_out),
      cmocka_unit_test_setup(test_char_device_stays, clean_out),
      cmocka_unit_test_setup(test_read_only_not_overwritten, clean_out),
      cmocka_unit_test_setup(test_fail_fast, clean_out),
      cmocka_unit_test_setup(test_nothing_left, clean_out),
      cmocka_unit_test_setup(test_run_time_non_finite, clean_out),
      cmocka_unit_test_setup(test_save_rules, clean_out))
