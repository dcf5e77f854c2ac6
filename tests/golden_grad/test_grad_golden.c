/* The training graph's gradients against PyTorch autograd (make_grad_golden.py):
 * for each case in cases.txt, load the model and the fixed ragged batch, run
 * forward + backward on every device whose backend has the backward table, and
 * compare the loss and every parameter's gradient with the float64 reference.
 *
 * Tolerance (SPEC §5): max |seqcl - torch| <= 1e-4 * max |torch| per tensor.
 * The graph is float32 over at most 5 encoder and 5 decoder steps with widths
 * <= 12, so its rounding is a few float32 ulps amplified by a short chain of
 * products (~1e-6 relative to the tensor's scale); 1e-4 leaves two decades of
 * margin, while a wrong or missing gradient path is off by O(max |torch|). The
 * scale is max |torch| over the tensor, not per element, because individual
 * entries are sums of terms that cancel. One gradient is zero in exact
 * arithmetic: the additive energy bias (a softmax ignores a shift of all its
 * scores), which float32 computes as a cancelling sum with rounding noise of
 * ~1e-9. So the scale of a tensor is never taken below FLOOR x the largest
 * |torch| of any gradient of the model: such a tensor must be within
 * REL_TOL x FLOOR = 1e-7 of the model's gradient scale.
 *
 * Cases with dropout carry the probability and the (seed, step) key in
 * batch.safetensors; their reference applies the same masks as explicit
 * multiplications, so the same tolerance holds (a mask that differed in one
 * element would move the gradients by O(max |torch|)). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "test_devices.h"

#include "core/ctx.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "ops/ops.h"
#include "train/tmodel.h"

#define REL_TOL 1e-4
#define FLOOR 1e-3

static int compared;

static sq_st_file *read_st(const char *dir, const char *file) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  sq_st_file *f = NULL;
  if (sq_st_read(path, 1, &f) != SEQCL_OK) fail_msg("%s: %s", path, seqcl_last_message());
  return f;
}

static const sq_st_tensor *need(const sq_st_file *f, const char *name) {
  const sq_st_tensor *t = sq_st_find(f, name);
  if (!t) fail_msg("%s: no tensor %s", f->path, name);
  return t;
}

static void run_case(const char *dir, const seqcl_device_info *dev) {
  char path[1100];
  snprintf(path, sizeof path, "%s/config.json", dir);
  sq_config cfg;
  if (sq_config_load(path, &cfg) != SEQCL_OK) fail_msg("%s", seqcl_last_message());
  seqcl_ctx *ctx = NULL;
  if (seqcl_ctx_open_info(dev, &ctx) != SEQCL_OK)
    fail_msg("%s: %s", dev->selector, seqcl_last_message());
  if (!ctx->be->ops->attn_bwd) {
    printf("  %-22s %-10s skipped: the backend has no backward table\n", strrchr(dir, '/') + 1,
           dev->selector);
    seqcl_ctx_close(ctx);
    return;
  }
  sq_tlayout L;
  assert_int_equal(sq_tlayout_make(ctx, &cfg, &L), SEQCL_OK);
  sq_st_file *model = read_st(dir, "model.safetensors");
  sq_st_file *batch = read_st(dir, "batch.safetensors");
  sq_st_file *ref = read_st(dir, "grads.safetensors");
  float *params = malloc(L.total * sizeof(float)), *grads = malloc(L.total * sizeof(float));
  assert_non_null(params);
  assert_non_null(grads);
  for (int i = 0; i < L.nparams; i++) {
    const sq_st_tensor *t = need(model, L.p[i].name);
    assert_int_equal(t->nelem, L.p[i].count);
    sq_st_to_f32(model, t, params + L.p[i].off);
  }
  const sq_st_tensor *ts = need(batch, "src"), *tl = need(batch, "lens"), *tt = need(batch, "tgt");
  const int N = (int)ts->shape[0], S = (int)ts->shape[1], T = (int)tt->shape[1] - 1;
  int32_t *src = malloc(ts->nelem * 4), *lens = malloc(tl->nelem * 4), *tgt = malloc(tt->nelem * 4);
  assert_int_equal(sq_st_to_i32(batch, ts, src), 0);
  assert_int_equal(sq_st_to_i32(batch, tl, lens), 0);
  assert_int_equal(sq_st_to_i32(batch, tt, tgt), 0);

  sq_graph *g = NULL;
  assert_int_equal(sq_graph_create(ctx, &L, N, S, T, &g), SEQCL_OK);
  sq_ref P = sq_graph_params(g), G = sq_graph_grads(g);
  assert_int_equal(sq_write(ctx, P, params, L.total * sizeof(float)), SEQCL_OK);
  assert_int_equal(sq_fill(ctx, G, L.total, 0.0f), SEQCL_OK);
  assert_int_equal(sq_graph_set_batch(g, N, src, lens, tgt), SEQCL_OK);
  /* dropout cases: the reference multiplied seqcl's masks in explicitly */
  const sq_st_tensor *tp = sq_st_find(batch, "dropout_p");
  if (tp) {
    float p;
    int32_t key[3];
    sq_st_to_f32(batch, tp, &p);
    assert_int_equal(sq_st_to_i32(batch, need(batch, "dropout_key"), key), 0);
    uint64_t seed = (uint64_t)(uint32_t)key[0] | (uint64_t)(uint32_t)key[1] << 32;
    assert_int_equal(sq_graph_set_dropout(g, p, seed, (uint64_t)key[2]), SEQCL_OK);
  }
  float loss = 0;
  if (sq_graph_forward(g, &loss) != SEQCL_OK || sq_graph_backward(g) != SEQCL_OK)
    fail_msg("%s on %s: %s", dir, dev->selector, seqcl_last_message());
  assert_int_equal(sq_read(ctx, G, grads, L.total * sizeof(float)), SEQCL_OK);

  float ref_loss;
  sq_st_to_f32(ref, need(ref, "loss"), &ref_loss);
  double worst = fabs((double)loss - ref_loss) / fabs((double)ref_loss);
  const char *worst_name = "loss";
  int bad = worst > REL_TOL;
  if (bad) printf("  loss %.8g vs torch %.8g\n", (double)loss, (double)ref_loss);
  double model_scale = 0;
  for (int i = 0; i < L.nparams; i++) {
    const sq_st_tensor *t = need(ref, L.p[i].name);
    float *r = malloc(t->nelem * sizeof(float));
    sq_st_to_f32(ref, t, r);
    for (size_t k = 0; k < t->nelem; k++)
      if (fabs(r[k]) > model_scale) model_scale = fabs(r[k]);
    free(r);
  }
  for (int i = 0; i < L.nparams; i++) {
    const sq_tparam *p = &L.p[i];
    const sq_st_tensor *t = need(ref, p->name);
    assert_int_equal(t->nelem, p->count);
    float *r = malloc(p->count * sizeof(float));
    sq_st_to_f32(ref, t, r);
    double maxref = 0, maxdiff = 0;
    size_t at = 0;
    for (size_t k = 0; k < p->count; k++) {
      double d = fabs((double)grads[p->off + k] - r[k]);
      if (!isfinite(grads[p->off + k])) d = INFINITY;
      if (fabs(r[k]) > maxref) maxref = fabs(r[k]);
      if (d > maxdiff) maxdiff = d, at = k;
    }
    double scale = maxref > FLOOR * model_scale ? maxref : FLOOR * model_scale;
    double rel = maxdiff / scale;
    if (rel > worst) worst = rel, worst_name = p->name;
    if (rel > REL_TOL) {
      bad = 1;
      printf("  %s: max |diff| %.3g at %zu (seqcl %.8g, torch %.8g), max |torch| %.3g\n",
             p->name, maxdiff, at, (double)grads[p->off + at], (double)r[at], maxref);
    }
    free(r);
  }
  printf("  %-22s %-10s loss %.6f  worst relative error %.2e (%s)\n", strrchr(dir, '/') + 1,
         dev->selector, (double)loss, worst, worst_name);
  compared++;
  sq_graph_free(g);
  free(src), free(lens), free(tgt), free(params), free(grads);
  sq_st_free(model), sq_st_free(batch), sq_st_free(ref);
  seqcl_ctx_close(ctx);
  if (bad) fail_msg("%s on %s: a gradient differs from PyTorch's beyond %g", dir, dev->selector,
                    REL_TOL);
}

static void test_grad_golden(void **state) {
  (void)state;
  char list[1024], line[256], dir[1000];
  snprintf(list, sizeof list, "%s/cases.txt", GOLDEN_GRAD_DIR);
  FILE *f = fopen(list, "r");
  if (!f) fail_msg("cannot open %s", list);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0]) continue;
    snprintf(dir, sizeof dir, "%s/%s", GOLDEN_GRAD_DIR, line);
    for (size_t d = 0; d < device_count; d++) run_case(dir, &devices[d]);
  }
  fclose(f);
  assert_true(compared > 0);
}

SQ_TEST_MAIN(test_devices_setup, test_devices_teardown, cmocka_unit_test(test_grad_golden))
