/* The thread-safety contract of include/seqcl/device.h: 4 threads, each with
 * its own context on the same device, load the same model and decode (greedy
 * and beam) and run the teacher-forced forward on the same input while they
 * also list devices; every thread's results must equal a single-threaded
 * run's exactly (same device, same code path: bit for bit). On the host and
 * on every OpenCL device present. Run under ASan (scripts/sanitize.sh) too. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <seqcl/seqcl.h>

#include "../common/test_main.h"
#include "harden_util.h"
#include "model/tokens.h"

#define THREADS 4
#define ROUNDS 3

static char root[256];
static char model[320];
static sq_seqs src, tgt;

typedef struct outcome {
  seqcl_status st;
  char msg[512];
  size_t nids;
  int32_t ids[2][256]; /* greedy, beam */
  size_t offsets[2][16];
  double beam_scores[16];
  float loss;
  float logits[4096];
  size_t nlogits;
} outcome;

typedef struct job {
  const seqcl_device_info *dev;
  outcome *out;
} job;

static seqcl_status run_once(const seqcl_device_info *dev, outcome *o) {
  seqcl_ctx *ctx = NULL;
  seqcl_model *m = NULL;
  seqcl_decode_result *d = NULL;
  seqcl_forward_result *f = NULL;
  seqcl_device_info *list = NULL;
  size_t count = 0;
  seqcl_status st = seqcl_devices_list(&list, &count);
  seqcl_devices_free(list);
  if (st == SEQCL_OK) (void)seqcl_device_env();
  if (st == SEQCL_OK) st = seqcl_ctx_open_info(dev, &ctx);
  if (st == SEQCL_OK) st = seqcl_model_load(ctx, model, &m);
  seqcl_seqs s = {src.count, src.ids, src.offsets}, t = {tgt.count, tgt.ids, tgt.offsets};
  seqcl_decode_options opt;
  seqcl_decode_options_init(&opt);
  for (int pass = 0; pass < 2 && st == SEQCL_OK; pass++) {
    opt.beam = pass ? 3 : 1;
    opt.want_alignments = pass;
    st = seqcl_model_decode(m, &s, &opt, &d);
    if (st != SEQCL_OK) break;
    memcpy(o->offsets[pass], d->offsets, (d->count + 1) * sizeof(size_t));
    memcpy(o->ids[pass], d->ids, d->offsets[d->count] * sizeof(int32_t));
    if (pass) memcpy(o->beam_scores, d->scores, d->count * sizeof(double));
    seqcl_decode_result_free(d);
    d = NULL;
  }
  if (st == SEQCL_OK) st = seqcl_model_forward(m, &s, &t, 0, &f);
  if (st == SEQCL_OK) {
    o->loss = f->loss;
    o->nlogits = f->N * (size_t)f->T * (size_t)f->V;
    if (o->nlogits > sizeof o->logits / sizeof o->logits[0]) o->nlogits = 0;
    memcpy(o->logits, f->logits, o->nlogits * sizeof(float));
  }
  if (st != SEQCL_OK) snprintf(o->msg, sizeof o->msg, "%s", seqcl_last_message());
  seqcl_forward_result_free(f);
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  return st;
}

static void *worker(void *arg) {
  job *j = arg;
  for (int r = 0; r < ROUNDS && j->out->st == SEQCL_OK; r++) {
    memset(j->out, 0, sizeof *j->out);
    j->out->st = run_once(j->dev, j->out);
  }
  return NULL;
}

static void same(const outcome *a, const outcome *b, const char *dev, int thread) {
  if (b->st != SEQCL_OK) fail_msg("%s thread %d: %s: %s", dev, thread, seqcl_status_name(b->st), b->msg);
  for (int p = 0; p < 2; p++) {
    if (memcmp(a->offsets[p], b->offsets[p], (src.count + 1) * sizeof(size_t)) ||
        memcmp(a->ids[p], b->ids[p], a->offsets[p][src.count] * sizeof(int32_t)))
      fail_msg("%s thread %d: %s output differs from the single-threaded run", dev, thread,
               p ? "beam" : "greedy");
  }
  if (memcmp(a->beam_scores, b->beam_scores, src.count * sizeof(double)) ||
      memcmp(&a->loss, &b->loss, sizeof(float)) || a->nlogits != b->nlogits ||
      memcmp(a->logits, b->logits, a->nlogits * sizeof(float)))
    fail_msg("%s thread %d: scores, loss or logits differ from the single-threaded run", dev,
             thread);
}

static void test_threads(void **state) {
  (void)state;
  size_t ndev = 0;
  seqcl_device_info *devs = hu_devices(&ndev);
  assert_true(ndev >= 1);
  for (size_t d = 0; d < ndev; d++) {
    static outcome ref, outs[THREADS];
    memset(&ref, 0, sizeof ref);
    ref.st = run_once(&devs[d], &ref);
    if (ref.st != SEQCL_OK) fail_msg("%s: %s: %s", devs[d].selector, seqcl_status_name(ref.st), ref.msg);
    assert_true(ref.nlogits > 0);
    pthread_t th[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
      memset(&outs[i], 0, sizeof outs[i]);
      jobs[i].dev = &devs[d];
      jobs[i].out = &outs[i];
      assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) same(&ref, &outs[i], devs[d].selector, i);
    print_message("%-10s %d threads x %d rounds: identical to the single-threaded run\n",
                  devs[d].selector, THREADS, ROUNDS);
  }
  seqcl_devices_free(devs);
}

static int setup(void **state) {
  (void)state;
  if (hu_mkdtemp(root, sizeof root, "threads")) return -1;
  snprintf(model, sizeof model, "%s/model", root);
  if (hu_make_model_dir(model, NULL, 21, NULL, 0, 0.0f)) return -1;
  if (sq_tokens_parse(hu_src_text, strlen(hu_src_text), "src", 7, NULL, &src) != SEQCL_OK ||
      sq_tokens_parse(hu_tgt_text, strlen(hu_tgt_text), "tgt", 9, NULL, &tgt) != SEQCL_OK)
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  sq_seqs_free(&src);
  sq_seqs_free(&tgt);
  hu_rmtree(root);
  return 0;
}

SQ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_threads))
