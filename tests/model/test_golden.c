/* Every PyTorch golden fixture in tests/golden/ (layout: tests/golden/README.md)
 * on every device, by SPEC §5's rule: over valid positions max |seqcl - torch|
 * <= 1e-4 x max |torch| for logits, alignments and the loss; greedy and beam
 * outputs identical except on a line where near_ties.txt lists a near-tie at or
 * before the first differing step (either choice is then right, and the rest of
 * that line may differ). */
#include <dirent.h>
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
#include <jansson.h>

#include <seqcl/seqcl.h>

#include "model/safetensors.h"
#include "model/tokens.h"

#ifndef GOLDEN_DIR
#define GOLDEN_DIR "tests/golden"
#endif
#define REL_TOL 1e-4

static int checked_fixtures;

/* Lines of ids; empty lines allowed (decode outputs may be empty). */
typedef struct lines {
  size_t count;
  int32_t *ids;
  size_t *off;
} lines;

static int read_lines(const char *path, lines *out) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t cap = 256, lcap = 16;
  out->ids = malloc(cap * sizeof(int32_t));
  out->off = malloc(lcap * sizeof(size_t));
  out->count = 0;
  out->off[0] = 0;
  size_t n = 0;
  char buf[65536];
  while (fgets(buf, sizeof buf, f)) {
    char *p = buf, *end;
    for (long v; (v = strtol(p, &end, 10)), end != p; p = end) {
      if (n == cap) out->ids = realloc(out->ids, (cap *= 2) * sizeof(int32_t));
      out->ids[n++] = (int32_t)v;
    }
    if (out->count + 2 > lcap) out->off = realloc(out->off, (lcap *= 2) * sizeof(size_t));
    out->off[++out->count] = n;
  }
  fclose(f);
  return 0;
}

static void free_lines(lines *l) {
  free(l->ids);
  free(l->off);
}

typedef struct tie {
  char kind[32];
  int line, step;
} tie;

static int read_ties(const char *path, tie *ties, int cap) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0;
  double gap;
  while (n < cap && fscanf(f, "%31s %d %d %lf", ties[n].kind, &ties[n].line, &ties[n].step, &gap) == 4) n++;
  fclose(f);
  return n;
}

static const float *tensor_f32(const sq_st_file *f, const char *name, float **owned,
                               const sq_st_tensor **t) {
  *t = sq_st_find(f, name);
  if (!*t) fail_msg("%s: no tensor '%s'", f->path, name);
  *owned = malloc(((*t)->nelem + 1) * sizeof(float));
  sq_st_to_f32(f, *t, *owned);
  return *owned;
}

typedef struct worst {
  double err, ref;
} worst;
static void track(worst *w, double got, double ref) {
  double e = fabs(got - ref);
  if (!(e <= w->err)) w->err = isnan(e) ? INFINITY : e;
  if (fabs(ref) > w->ref) w->ref = fabs(ref);
}
static int agrees(const worst *w) { return w->err <= REL_TOL * w->ref; }

/* A fixture of a model with score "none" (fixture.json "alignments": false)
 * has no alignments anywhere: forward returns none, decode refuses them. */
static void check_forward(const char *dir, const char *dev, seqcl_model *m, const sq_seqs *src,
                          const sq_seqs *tgt, int has_align) {
  char path[600];
  snprintf(path, sizeof path, "%s/expected.safetensors", dir);
  sq_st_file *ef = NULL;
  if (sq_st_read(path, 0, &ef) != SEQCL_OK) fail_msg("%s", seqcl_last_message());
  float *lg, *al = NULL, *ls;
  const sq_st_tensor *tl, *ta = NULL, *tlo;
  tensor_f32(ef, "logits", &lg, &tl);
  if (has_align) tensor_f32(ef, "alignments", &al, &ta);
  tensor_f32(ef, "loss", &ls, &tlo);
  seqcl_seqs s = {src->count, src->ids, src->offsets}, t = {tgt->count, tgt->ids, tgt->offsets};
  seqcl_forward_result *r = NULL;
  if (seqcl_model_forward(m, &s, &t, 0, &r) != SEQCL_OK)
    fail_msg("%s %s: forward: %s", dir, dev, seqcl_last_message());
  assert_int_equal(tl->shape[0], (int64_t)r->N);
  assert_int_equal(tl->shape[1], r->T);
  assert_int_equal(tl->shape[2], r->V);
  if (has_align) {
    assert_int_equal(ta->shape[2], r->S);
  } else {
    assert_null(sq_st_find(ef, "alignments"));
    assert_null(r->alignments);
  }
  worst wl = {0, 0}, wa = {0, 0};
  for (size_t n = 0; n < r->N; n++) {
    const int L = (int)sq_seq_len(src, n);
    for (int st = 0; st < r->steps[n]; st++) {
      const size_t row = n * r->T + st;
      for (int v = 0; v < r->V; v++) track(&wl, r->logits[row * r->V + v], lg[row * r->V + v]);
      for (int j = 0; has_align && j < r->S; j++) {
        if (j < L)
          track(&wa, r->alignments[row * r->S + j], al[row * r->S + j]);
        else
          assert_true(r->alignments[row * r->S + j] == 0.0f);
      }
    }
  }
  const double dloss = fabs((double)r->loss - ls[0]);
  if (has_align)
    print_message("  %-9s %-34s logits %.1e (rel %.1e)  alignments %.1e (rel %.1e)  loss %.1e\n",
                  dev, strrchr(dir, '/') + 1, wl.err, wl.err / wl.ref, wa.err, wa.err / wa.ref,
                  dloss / fabs(ls[0]));
  else
    print_message("  %-9s %-34s logits %.1e (rel %.1e)  no alignments (score none)  loss %.1e\n",
                  dev, strrchr(dir, '/') + 1, wl.err, wl.err / wl.ref, dloss / fabs(ls[0]));
  if (!agrees(&wl) || !agrees(&wa) || !(dloss <= REL_TOL * fabs(ls[0])))
    fail_msg("%s on %s: forward disagrees with PyTorch", dir, dev);
  seqcl_forward_result_free(r);
  free(lg);
  free(al);
  free(ls);
  sq_st_free(ef);
}

static void check_decode(const char *dir, const char *dev, seqcl_model *m, const sq_seqs *src,
                         const char *kind, json_t *spec, int max_steps, const tie *ties,
                         int nties, const sq_st_file *af) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(spec, "file")));
  lines want = {0, NULL, NULL};
  if (read_lines(path, &want)) fail_msg("cannot read %s", path);
  assert_int_equal(want.count, src->count);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.beam = (int)json_integer_value(json_object_get(spec, "beam"));
  o.length_penalty = json_number_value(json_object_get(spec, "length_penalty"));
  o.max_steps = max_steps;
  o.want_alignments = af != NULL;
  seqcl_seqs s = {src->count, src->ids, src->offsets};
  seqcl_decode_result *r = NULL;
  if (!af) {
    /* no alignments to give: asking for them is an error, not zeros */
    o.want_alignments = 1;
    assert_int_equal(seqcl_model_decode(m, &s, &o, &r), SEQCL_ERR_INVALID_ARGUMENT);
    assert_null(r);
    assert_non_null(strstr(seqcl_last_message(), "none"));
    o.want_alignments = 0;
  }
  if (seqcl_model_decode(m, &s, &o, &r) != SEQCL_OK)
    fail_msg("%s %s %s: decode: %s", dir, dev, kind, seqcl_last_message());
  float *ral = NULL;
  const sq_st_tensor *ta = NULL;
  if (af) tensor_f32(af, kind, &ral, &ta);
  const int Tr = ta ? (int)ta->shape[1] : 0, Sr = ta ? (int)ta->shape[2] : 0;
  int same = 0, tied = 0;
  worst wa = {0, 0};
  for (size_t n = 0; n < r->count; n++) {
    const size_t len = r->offsets[n + 1] - r->offsets[n], wlen = want.off[n + 1] - want.off[n];
    const int32_t *got = r->ids + r->offsets[n], *ref = want.ids + want.off[n];
    size_t diff = 0;
    while (diff < len && diff < wlen && got[diff] == ref[diff]) diff++;
    if (diff == len && diff == wlen) {
      same++;
      const int L = af ? (int)sq_seq_len(src, n) : 0;
      for (int t = 0; t < r->steps[n]; t++)
        for (int j = 0; j < L; j++)
          track(&wa, r->alignments[((size_t)n * r->T + t) * r->S + j],
                t < Tr && j < Sr ? ral[((size_t)n * Tr + t) * Sr + j] : 0.0);
      continue;
    }
    int excused = 0;
    for (int k = 0; k < nties; k++)
      excused |= !strcmp(ties[k].kind, kind) && ties[k].line == (int)n && ties[k].step <= (int)diff;
    if (!excused)
      fail_msg("%s on %s, %s line %zu: differs from PyTorch at token %zu without a near-tie",
               strrchr(dir, '/') + 1, dev, kind, n + 1, diff);
    tied++;
  }
  print_message("  %-9s %-34s %-8s %d/%zu lines identical, %d at near-ties; alignments rel %.1e\n",
                dev, "", kind, same, r->count, tied, wa.ref > 0 ? wa.err / wa.ref : 0.0);
  if (!agrees(&wa)) fail_msg("%s on %s: %s alignments disagree", dir, dev, kind);
  free(ral);
  free_lines(&want);
  seqcl_decode_result_free(r);
}

static void run_fixture(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/fixture.json", dir);
  json_error_t jerr;
  json_t *fx = json_load_file(path, 0, &jerr);
  if (!fx) fail_msg("%s: %s", path, jerr.text);
  const int max_steps = (int)json_integer_value(json_object_get(fx, "max_steps"));
  json_t *decode = json_object_get(fx, "decode");
  tie ties[256];
  snprintf(path, sizeof path, "%s/near_ties.txt", dir);
  const int nties = read_ties(path, ties, 256);
  const json_t *ha = json_object_get(fx, "alignments");
  const int has_align = !ha || json_is_true(ha);
  sq_st_file *af = NULL;
  snprintf(path, sizeof path, "%s/decode_alignments.safetensors", dir);
  if (has_align && sq_st_read(path, 0, &af) != SEQCL_OK) fail_msg("%s", seqcl_last_message());

  for (size_t d = 0; d < device_count; d++) {
    const char *dev = devices[d].selector;
    seqcl_ctx *ctx = NULL;
    if (seqcl_ctx_open_info(&devices[d], &ctx) != SEQCL_OK) fail_msg("%s: %s", dev, seqcl_last_message());
    seqcl_model *m = NULL;
    if (seqcl_model_load(ctx, dir, &m) != SEQCL_OK) fail_msg("%s: %s", dir, seqcl_last_message());
    sq_seqs src = {0}, tgt = {0};
    snprintf(path, sizeof path, "%s/src.txt", dir);
    if (sq_tokens_read(path, seqcl_model_src_vocab_size(m), NULL, &src) != SEQCL_OK)
      fail_msg("%s", seqcl_last_message());
    snprintf(path, sizeof path, "%s/tgt.txt", dir);
    if (sq_tokens_read(path, seqcl_model_tgt_vocab_size(m), NULL, &tgt) != SEQCL_OK)
      fail_msg("%s", seqcl_last_message());
    check_forward(dir, dev, m, &src, &tgt, has_align);
    const char *kind;
    json_t *spec;
    json_object_foreach(decode, kind, spec) {
      check_decode(dir, dev, m, &src, kind, spec, max_steps, ties, nties, af);
    }
    sq_seqs_free(&src);
    sq_seqs_free(&tgt);
    seqcl_model_free(m);
    seqcl_ctx_close(ctx);
  }
  sq_st_free(af);
  json_decref(fx);
  checked_fixtures++;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static void test_golden(void **state) {
  (void)state;
  struct dirent **names = NULL;
  int n = scandir(GOLDEN_DIR, &names, NULL, by_name);
  if (n < 0) fail_msg("cannot list %s", GOLDEN_DIR);
  for (int i = 0; i < n; i++) {
    char dir[512], probe[600];
    snprintf(dir, sizeof dir, "%s/%s", GOLDEN_DIR, names[i]->d_name);
    snprintf(probe, sizeof probe, "%s/fixture.json", dir);
    FILE *f = names[i]->d_name[0] != '.' ? fopen(probe, "r") : NULL;
    if (f) {
      fclose(f);
      run_fixture(dir);
    }
    free(names[i]);
  }
  free(names);
  if (checked_fixtures == 0) skip();
}

SQ_TEST_MAIN(test_devices_setup, test_devices_teardown, cmocka_unit_test(test_golden))
