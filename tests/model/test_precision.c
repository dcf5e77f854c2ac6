/* Reduced precision (seqcl_model_options.precision): the 16-bit conversions
 * themselves, over every 16-bit pattern; a bf16/f16 model computing exactly
 * what the float32 path computes for the same rounded weights (forward logits
 * bit for bit, greedy tokens equal), on golden models of several layouts; the
 * agreement rule against the unrounded float32 model (logits within 1e-2 of
 * each row's largest |logit|); the host's 16-bit products against its
 * float32 product, bit for bit, at shapes around its 16-lane steps, and a
 * model wider than one vector, at batch 1 and 6; and the refusals: a weight beyond binary16's
 * range names its tensor, a device without the 16-bit products says so,
 * before anything is uploaded. Exits 77 (skip) on a CPU without AVX-512F. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include <seqcl/seqcl.h>

#include "../harden/harden_util.h"
#include "backend/host/gemm_nt.h"
#include "core/halfwidth.h"
#include "model/safetensors.h"
#include "model/tokens.h"
#include "ops/ops.h"

#ifndef GOLDEN_DIR
#define GOLDEN_DIR "tests/golden"
#endif
#define AGREE_REL 1e-2

static const char *const fixtures[] = {"bi1_additive_final_ctx", "bi2_general_nobias_zeros_ctx",
                                       "bi1_dot_bridge_state", "bi2_scaled_dot_zeros_state"};

/* ---- the conversions ---- */

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Every pattern of a 16-bit format widens and narrows back to itself; the
 * midpoint between two neighbours (exact in float: one bit more than the
 * format has) rounds to the even one, a float above it up, one below it down.
 * largest: the pattern of the largest finite value (no upper neighbour). */
static void check_all_patterns(float (*widen)(uint16_t), uint16_t (*narrow)(float),
                               uint32_t largest) {
  for (uint32_t h = 0; h < 0x10000u; h++) {
    const float f = widen((uint16_t)h);
    if (isnan(f)) {
      assert_true(isnan(widen(narrow(f))));
      continue;
    }
    assert_int_equal(narrow(f), h);
    if ((h & 0x7fffu) >= largest) continue;
    const float next = widen((uint16_t)(h + 1)); /* away from 0 for either sign */
    const float mid = (float)(((double)f + next) / 2);
    assert_int_equal(narrow(mid), (h & 1u) ? h + 1 : h);
    assert_int_equal(narrow(nextafterf(mid, next)), h + 1);
    assert_int_equal(narrow(nextafterf(mid, f)), h);
  }
}

static void test_bf16_all_patterns(void **state) {
  (void)state;
  check_all_patterns(sq_bf16_to_float, sq_float_to_bf16, 0x7f7fu);
  assert_int_equal(sq_float_to_bf16(INFINITY), 0x7f80u);
  assert_int_equal(sq_float_to_bf16(3.4e38f), 0x7f80u); /* rounds past the largest: inf */
}

static void test_f16_all_patterns(void **state) {
  (void)state;
  check_all_patterns(sq_half_to_float, sq_float_to_half, 0x7bffu);
  assert_int_equal(sq_float_to_half(65519.0f), 0x7bffu); /* below the midpoint to inf */
  assert_int_equal(sq_float_to_half(65520.0f), 0x7c00u); /* the midpoint ties to even: inf */
  assert_int_equal(sq_float_to_half(-1e6f), 0xfc00u);
  assert_int_equal(sq_float_to_half(1e-9f), 0); /* below half the smallest subnormal */
  assert_int_equal(bits(sq_round_halfwidth(0.1f, SQ_HALF_NONE)), bits(0.1f));
}

/* The whole-array forms (what a model load runs) give the one-value forms'
 * answers: every float of a seeded spread of magnitudes, the midpoints and
 * both infinities and NaN among them; rounding stops at the first value that
 * does not fit, leaving it and what follows untouched. */
static void test_array_forms(void **state) {
  (void)state;
  enum { N = 4099 };
  static float x[N], y[N];
  static uint16_t got[N];
  uint32_t u = 2463534242u;
  for (int i = 0; i < N; i++) { /* xorshift bits: every exponent, both signs */
    u ^= u << 13, u ^= u >> 17, u ^= u << 5;
    memcpy(&x[i], &u, sizeof u);
  }
  x[7] = INFINITY, x[8] = -INFINITY, x[9] = NAN, x[10] = 65520.0f, x[11] = 3.4e38f;
  const sq_halfwidth widths[] = {SQ_HALF_BF16, SQ_HALF_F16};
  for (int wi = 0; wi < 2; wi++) {
    const sq_halfwidth w = widths[wi];
    sq_halfwidth_bits_n(x, got, N, w);
    for (int i = 0; i < N; i++) assert_int_equal(got[i], sq_halfwidth_bits(x[i], w));
    /* values that round to finite ones only, then one that overflows at 3001 */
    for (int i = 0; i < N; i++) y[i] = isfinite(sq_round_halfwidth(x[i], w)) ? x[i] : 1.5f;
    y[3001] = w == SQ_HALF_F16 ? 7e4f : INFINITY;
    static float before[N];
    memcpy(before, y, sizeof y);
    assert_int_equal(sq_round_halfwidth_n(y, N, w), 3001);
    for (int i = 0; i < 3001; i++)
      assert_int_equal(bits(y[i]), bits(sq_round_halfwidth(before[i], w)));
    assert_memory_equal(y + 3001, before + 3001, (N - 3001) * sizeof(float));
    y[3001] = 0.25f;
    assert_int_equal(sq_round_halfwidth_n(y, N, w), N);
  }
}

/* ---- models ---- */

/* A copy of a golden model folder with every weight rounded to width w
 * (poke: also one weight of `poke_tensor` set to poke_value, unrounded). */
static void write_model(const char *from, const char *to, sq_halfwidth w, const char *poke_tensor,
                        float poke_value) {
  char path[8400];
  snprintf(path, sizeof path, "%s/config.json", from);
  FILE *in = fopen(path, "rb");
  assert_non_null(in);
  char cfg[65536];
  size_t n = fread(cfg, 1, sizeof cfg, in);
  fclose(in);
  snprintf(path, sizeof path, "%s/config.json", to);
  FILE *out = fopen(path, "wb");
  assert_non_null(out);
  assert_int_equal(fwrite(cfg, 1, n, out), n);
  fclose(out);
  snprintf(path, sizeof path, "%s/model.safetensors", from);
  sq_st_file *f = NULL;
  assert_int_equal(sq_st_read(path, 0, &f), SEQCL_OK);
  sq_st_out *t = calloc(f->count, sizeof *t);
  float **data = calloc(f->count, sizeof *data);
  for (size_t k = 0; k < f->count; k++) {
    const sq_st_tensor *s = &f->tensors[k];
    data[k] = malloc((s->nelem ? s->nelem : 1) * sizeof(float));
    sq_st_to_f32(f, s, data[k]);
    for (size_t i = 0; i < s->nelem; i++) data[k][i] = sq_round_halfwidth(data[k][i], w);
    if (poke_tensor && !strcmp(s->name, poke_tensor)) data[k][s->nelem / 2] = poke_value;
    t[k].name = s->name;
    t[k].ndim = s->ndim;
    memcpy(t[k].shape, s->shape, sizeof t[k].shape);
    t[k].data = data[k];
  }
  snprintf(path, sizeof path, "%s/model.safetensors", to);
  assert_int_equal(sq_st_write(path, t, f->count), SEQCL_OK);
  for (size_t k = 0; k < f->count; k++) free(data[k]);
  free(data);
  free(t);
  sq_st_free(f);
}

static void read_ids(const char *dir, const char *name, int vocab, sq_seqs *out) {
  char path[8400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(sq_tokens_read(path, vocab, NULL, out), SEQCL_OK);
}

static seqcl_model *load(seqcl_ctx *ctx, const char *dir, seqcl_precision p) {
  seqcl_model_options o;
  seqcl_model_options_init(&o);
  o.precision = p;
  seqcl_model *m = NULL;
  seqcl_status st = seqcl_model_load_with(ctx, dir, &o, &m);
  if (st != SEQCL_OK) fail_msg("loading %s at %s: %s", dir, seqcl_precision_name(p),
                               seqcl_last_message());
  assert_int_equal(seqcl_model_precision(m), p);
  return m;
}

typedef struct run {
  seqcl_forward_result *fw;
  seqcl_decode_result *greedy;
} run;

static run run_model(seqcl_model *m, const sq_seqs *src, const sq_seqs *tgt) {
  run r = {0};
  seqcl_seqs s = {src->count, src->ids, src->offsets}, t = {tgt->count, tgt->ids, tgt->offsets};
  assert_int_equal(seqcl_model_forward(m, &s, &t, 0, &r.fw), SEQCL_OK);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 30;
  assert_int_equal(seqcl_model_decode(m, &s, &o, &r.greedy), SEQCL_OK);
  return r;
}

static void free_run(run *r) {
  seqcl_forward_result_free(r->fw);
  seqcl_decode_result_free(r->greedy);
}

static int same_tokens(const seqcl_decode_result *a, const seqcl_decode_result *b, size_t i) {
  const size_t na = a->offsets[i + 1] - a->offsets[i], nb = b->offsets[i + 1] - b->offsets[i];
  return na == nb && !memcmp(a->ids + a->offsets[i], b->ids + b->offsets[i], na * sizeof(int32_t));
}

/* For each fixture and width: the reduced model equals the float32 model of
 * the rounded weights bit for bit, and agrees with the unrounded one. */
static void test_models(void **state) {
  (void)state;
  const char *tmp = hu_tmpdir;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  const sq_halfwidth widths[] = {SQ_HALF_BF16, SQ_HALF_F16};
  const seqcl_precision precs[] = {SEQCL_PRECISION_BF16, SEQCL_PRECISION_F16};
  for (size_t fx = 0; fx < sizeof fixtures / sizeof fixtures[0]; fx++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", GOLDEN_DIR, fixtures[fx]);
    seqcl_model *f32 = load(ctx, dir, SEQCL_PRECISION_F32);
    sq_seqs src, tgt;
    read_ids(dir, "src.txt", seqcl_model_src_vocab_size(f32), &src);
    read_ids(dir, "tgt.txt", seqcl_model_tgt_vocab_size(f32), &tgt);
    run ref = run_model(f32, &src, &tgt);
    for (int wi = 0; wi < 2; wi++) {
      char rounded[4200];
      snprintf(rounded, sizeof rounded, "%s/%s_%d", tmp, fixtures[fx], wi);
      assert_int_equal(mkdir(rounded, 0777), 0);
      write_model(dir, rounded, widths[wi], NULL, 0);
      seqcl_model *half = load(ctx, dir, precs[wi]);
      seqcl_model *pre = load(ctx, rounded, SEQCL_PRECISION_F32);
      run h = run_model(half, &src, &tgt), p = run_model(pre, &src, &tgt);
      const seqcl_forward_result *a = h.fw, *b = p.fw, *r = ref.fw;
      const size_t nl = a->N * (size_t)a->T * (size_t)a->V;
      assert_int_equal(nl, b->N * (size_t)b->T * (size_t)b->V);
      /* the same floats, bit for bit: the 16-bit copy holds the rounded values */
      assert_memory_equal(a->logits, b->logits, nl * sizeof(float));
      assert_memory_equal(&a->loss, &b->loss, sizeof a->loss);
      size_t agree = 0;
      for (size_t i = 0; i < src.count; i++) {
        assert_true(same_tokens(h.greedy, p.greedy, i));
        agree += same_tokens(h.greedy, ref.greedy, i);
      }
      /* the agreement rule against the unrounded weights, row by row */
      double worst = 0;
      for (size_t row = 0; row < a->N * (size_t)a->T; row++) {
        const float *x = a->logits + row * (size_t)a->V, *y = r->logits + row * (size_t)r->V;
        double big = 0, d = 0;
        for (int v = 0; v < a->V; v++) {
          big = fmax(big, fabs(y[v]));
          d = fmax(d, fabs((double)x[v] - y[v]));
        }
        if (big > 0) worst = fmax(worst, d / big);
      }
      print_message("%-32s %s: logits within %.2e of each row's largest (rule %.0e); greedy "
                    "%zu/%zu lines as float32\n",
                    fixtures[fx], seqcl_precision_name(precs[wi]), worst, AGREE_REL, agree,
                    src.count);
      assert_true(worst <= AGREE_REL);
      free_run(&h);
      free_run(&p);
      seqcl_model_free(half);
      seqcl_model_free(pre);
    }
    free_run(&ref);
    sq_seqs_free(&src);
    sq_seqs_free(&tgt);
    seqcl_model_free(f32);
  }
  seqcl_ctx_close(ctx);
}

/* The test's seeded generator (a 64-bit LCG): the next value in [-0.5, 0.5). */
static float next_uniform(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(*state >> 11) / 9007199254740992.0 - 0.5);
}

/* got and want [M, N] hold the same bits, element by element. */
static void same_bits(const float *got, const float *want, int M, int N, const char *what, int K,
                      int ldb, int beta) {
  for (size_t i = 0; i < (size_t)M * N; i++)
    if (memcmp(&got[i], &want[i], sizeof(float)))
      fail_msg("%s M %d N %d K %d ldb %d beta %d: element %zu %.9g (16-bit) != %.9g (float32)",
               what, M, N, K, ldb, beta, i, (double)got[i], (double)want[i]);
}

/* One product of the test below at width w: B's values rounded to w (NaN stays
 * NaN), the float32 product over them against the 16-bit one, both betas;
 * then the same for the packed forms: the float32 panels against the
 * 16-bit panels, the whole product and columns from a later panel on. */
static void check_product_bits(int M, int N, int K, int ldb, int off, const float *a,
                               const float *b, sq_halfwidth w) {
  const size_t nb = (size_t)off + (size_t)N * ldb;
  float *bw = malloc(nb * sizeof *bw), *c32 = malloc((size_t)M * N * sizeof *c32);
  float *c16 = malloc((size_t)M * N * sizeof *c16);
  uint16_t *p = malloc(nb * sizeof *p);
  /* 64-byte aligned, as the packed copies */
  float *panels = aligned_alloc(64, sq_gemm_panels_floats(N, K) * sizeof *panels);
  uint32_t *half = aligned_alloc(64, sq_gemm_half_panels_words(N, K) * sizeof *half);
  assert_true(bw && c32 && c16 && p && panels && half);
  for (size_t i = 0; i < nb; i++) {
    bw[i] = sq_round_halfwidth(b[i], w);
    p[i] = w == SQ_HALF_F16 ? sq_float_to_half(bw[i]) : sq_float_to_bf16(bw[i]);
  }
  /* the packs read only k < K of each row: the NaN padding must not reach them */
  sq_gemm_pack(N, K, bw + off, ldb, panels);
  sq_gemm_pack_half_panels(N, K, bw + off, ldb, w, half);
  const char *name = w == SQ_HALF_F16 ? "f16" : "bf16";
  for (int beta = 0; beta < 2; beta++) {
    for (size_t i = 0; i < (size_t)M * N; i++) c32[i] = c16[i] = (float)i * 0.25f - 1.0f;
    sq_gemm_nt(M, N, K, 0.75f, a, K, bw + off, ldb, beta * 0.5f, c32, N);
    sq_gemm_nt_half(M, N, K, 0.75f, a, K, p + off, ldb, w, beta * 0.5f, c16, N);
    for (size_t i = 0; i < (size_t)M * N; i++)
      if (!isfinite(c32[i])) fail_msg("M %d N %d K %d: float32 result %zu not finite", M, N, K, i);
    same_bits(c16, c32, M, N, name, K, ldb, beta);
    for (size_t i = 0; i < (size_t)M * N; i++) c32[i] = c16[i] = (float)i * 0.25f - 1.0f;
    sq_gemm_nt_panels(M, N, K, 0.75f, a, K, panels, 0, beta * 0.5f, c32, N);
    sq_gemm_nt_half_panels(M, N, K, 0.75f, a, K, half, 0, w, beta * 0.5f, c16, N);
    for (size_t i = 0; i < (size_t)M * N; i++)
      if (!isfinite(c32[i])) fail_msg("M %d N %d K %d: panels' result %zu not finite", M, N, K, i);
    same_bits(c16, c32, M, N, w == SQ_HALF_F16 ? "f16 panels" : "bf16 panels", K, ldb, beta);
    const int n0 = N / 2 / 16 * 16; /* a panel's first column */
    for (size_t i = 0; i < (size_t)M * N; i++) c16[i] = (float)i * 0.25f - 1.0f;
    sq_gemm_nt_half_panels(M, N - n0, K, 0.75f, a, K, half, n0, w, beta * 0.5f, c16 + n0, N);
    for (int i = 0; i < M; i++)
      for (int j = 0; j < n0; j++) { /* columns before n0: untouched, then compared as equal */
        const size_t at = (size_t)i * N + j;
        assert_true(c16[at] == (float)at * 0.25f - 1.0f);
        c16[at] = c32[at];
      }
    same_bits(c16, c32, M, N, w == SQ_HALF_F16 ? "f16 panels from n0" : "bf16 panels from n0", K,
              ldb, beta);
  }
  free(bw), free(c32), free(c16), free(p), free(panels), free(half);
}

/* The host's 16-bit products (bfloat16 and binary16 B read in place, and
 * their 16-bit panels): over M (the one-row and the 4 x 4 kernels; one row
 * over four panels, blocks of 1 to 8 rows), N (whole and partial blocks of
 * columns and panels, a product from a later panel on) and K around the
 * 16-lane steps and the pairs of k (tails of 1..15, odd K, padded rows),
 * each gives the float32 product's bits for the same values. The padding of
 * each row is NaN: a lane read past K would show. */
static void test_kernel_bits(void **state) {
  (void)state;
  const int Ms[] = {1, 2, 3, 4, 5, 8, 13, 24}, Ns[] = {1, 3, 8, 9, 17, 29, 50, 77};
  const int Ks[] = {1, 2, 15, 16, 17, 31, 32, 33, 48, 63, 64, 100, 288};
  uint64_t rng = 12345;
  for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
    for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
      for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
        const int M = Ms[mi], N = Ns[ni], K = Ks[ki];
        const int ldb = K + (int)(ki % 3) * 7, off = 5;
        const size_t nb = (size_t)off + (size_t)N * ldb;
        float *a = malloc((size_t)M * K * sizeof *a), *b = malloc(nb * sizeof *b);
        assert_true(a && b);
        for (size_t i = 0; i < (size_t)M * K; i++) a[i] = next_uniform(&rng);
        for (size_t i = 0; i < nb; i++) {
          const float v = next_uniform(&rng);
          b[i] = (i < (size_t)off || (i - off) % ldb >= (size_t)K) ? NAN : v;
        }
        check_product_bits(M, N, K, ldb, off, a, b, SQ_HALF_BF16);
        check_product_bits(M, N, K, ldb, off, a, b, SQ_HALF_F16);
        free(a), free(b);
      }
}

/* A model whose weight rows span several vectors (E 32, H_e 2 x 16, H_d 64,
 * A 32; the golden models are narrower than one), decoded at batch 1 (the
 * one-row kernel) and 6 (the 4 x 4 blocks) with alignments: the bits of the
 * float32 model of the rounded weights. */
static void test_wide_model(void **state) {
  (void)state;
  sq_config c;
  hu_tiny_config(&c);
  c.src_vocab = 40, c.tgt_vocab = 40, c.bos_id = 1, c.eos_id = 2, c.embed_dim = 32;
  c.enc_hidden = 16, c.dec_hidden = 64, c.attn_dim = 32, c.output = SQ_OUTPUT_STATE_CONTEXT;
  char dir[128], rounded[128];
  snprintf(dir, sizeof dir, "%s/m", hu_tmpdir);
  snprintf(rounded, sizeof rounded, "%s/r", hu_tmpdir);
  assert_int_equal(mkdir(dir, 0777), 0);
  assert_int_equal(mkdir(rounded, 0777), 0);
  assert_int_equal(hu_write_model(dir, &c, 7, NULL, 0, 0.0f), 0);
  write_model(dir, rounded, SQ_HALF_BF16, NULL, 0);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_model *half = load(ctx, dir, SEQCL_PRECISION_BF16), *pre = load(ctx, rounded, SEQCL_PRECISION_F32);
  int32_t ids[6 * 9], tids[6 * 9];
  size_t offs[7] = {0}; /* source and target lines of the same lengths */
  uint64_t rng = 99;
  for (int l = 0; l < 6; l++) {
    const int n = 3 + 2 * l % 7;
    for (int i = 0; i < n; i++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      ids[offs[l] + i] = 3 + (int)(rng >> 33) % 37;
      tids[offs[l] + i] = 3 + (int)(rng >> 40) % 37;
    }
    offs[l + 1] = offs[l] + n;
  }
  sq_seqs src = {6, ids, offs}, tgt = {6, tids, offs};
  run h = run_model(half, &src, &tgt), p = run_model(pre, &src, &tgt);
  const size_t nl = h.fw->N * (size_t)h.fw->T * (size_t)h.fw->V;
  assert_memory_equal(h.fw->logits, p.fw->logits, nl * sizeof(float));
  for (size_t i = 0; i < src.count; i++) assert_true(same_tokens(h.greedy, p.greedy, i));
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 12, o.batch_size = 1, o.want_alignments = 1;
  seqcl_decode_result *g1 = NULL, *g2 = NULL;
  seqcl_seqs s = {src.count, src.ids, src.offsets};
  assert_int_equal(seqcl_model_decode(half, &s, &o, &g1), SEQCL_OK);
  assert_int_equal(seqcl_model_decode(pre, &s, &o, &g2), SEQCL_OK);
  for (size_t i = 0; i < src.count; i++) assert_true(same_tokens(g1, g2, i));
  assert_int_equal(g1->T, g2->T);
  assert_memory_equal(g1->alignments, g2->alignments,
                      g1->count * (size_t)g1->T * (size_t)g1->S * sizeof(float));
  seqcl_decode_result_free(g1), seqcl_decode_result_free(g2);
  free_run(&h), free_run(&p);
  seqcl_model_free(half), seqcl_model_free(pre);
  seqcl_ctx_close(ctx);
}

/* A weight of 1e5 fits bfloat16 but not binary16: the f16 load names it. */
static void test_f16_range(void **state) {
  (void)state;
  const char *tmp = hu_tmpdir;
  char dir[4096], big[4200];
  snprintf(dir, sizeof dir, "%s/%s", GOLDEN_DIR, fixtures[0]);
  snprintf(big, sizeof big, "%s/big", tmp);
  assert_int_equal(mkdir(big, 0777), 0);
  write_model(dir, big, SQ_HALF_NONE, "decoder.output.weight", 1e5f);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_model_options o;
  seqcl_model_options_init(&o);
  o.precision = SEQCL_PRECISION_F16;
  seqcl_model *m = NULL;
  assert_int_equal(seqcl_model_load_with(ctx, big, &o, &m), SEQCL_ERR_BAD_MODEL);
  assert_null(m);
  assert_non_null(strstr(seqcl_last_message(), "decoder.output.weight"));
  assert_non_null(strstr(seqcl_last_message(), "65504"));
  o.precision = SEQCL_PRECISION_BF16;
  assert_int_equal(seqcl_model_load_with(ctx, big, &o, &m), SEQCL_OK);
  seqcl_model_free(m);
  o.precision = (seqcl_precision)7;
  assert_int_equal(seqcl_model_load_with(ctx, big, &o, &m), SEQCL_ERR_INVALID_ARGUMENT);
  seqcl_ctx_close(ctx);
  seqcl_precision p;
  assert_int_equal(seqcl_precision_parse("bf16", &p), SEQCL_OK);
  assert_int_equal(p, SEQCL_PRECISION_BF16);
  assert_int_equal(seqcl_precision_parse("fp16", &p), SEQCL_ERR_INVALID_ARGUMENT);
  assert_null(seqcl_precision_name((seqcl_precision)3));
}

/* OpenCL devices have no 16-bit products: refused with a message naming the
 * device, nothing loaded. */
static void test_opencl_refused(void **state) {
  (void)state;
  size_t n = 0;
  seqcl_device_info *devs = hu_devices(&n); /* the host first, then OpenCL devices */
  if (n < 2) {
    free(devs);
    skip();
  }
  const char *sel = devs[1].selector;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open(sel, &ctx), SEQCL_OK);
  seqcl_model_options o;
  seqcl_model_options_init(&o);
  o.precision = SEQCL_PRECISION_BF16;
  seqcl_model *m = NULL;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", GOLDEN_DIR, fixtures[0]);
  assert_int_equal(seqcl_model_load_with(ctx, dir, &o, &m), SEQCL_ERR_UNSUPPORTED);
  assert_null(m);
  assert_non_null(strstr(seqcl_last_message(), sel));
  seqcl_ctx_close(ctx);
  free(devs);
}

int main(void) {
  seqcl_ctx *ctx = NULL;
  if (seqcl_ctx_open("cpu", &ctx) != SEQCL_OK) return 1;
  const int usable = sq_halfwidth_supported(ctx);
  seqcl_ctx_close(ctx);
  const struct CMUnitTest conv[] = {
      cmocka_unit_test(test_bf16_all_patterns),
      cmocka_unit_test(test_f16_all_patterns),
      cmocka_unit_test(test_array_forms),
  };
  int rc = cmocka_run_group_tests(conv, NULL, NULL);
  if (!usable) {
    fprintf(stderr, "this CPU has no AVX-512F: the reduced-precision models are skipped\n");
    return rc ? rc : 77;
  }
  const struct CMUnitTest models[] = {
      cmocka_unit_test_setup_teardown(test_models, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_f16_range, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test(test_kernel_bits),
      cmocka_unit_test_setup_teardown(test_wide_model, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test(test_opencl_refused),
  };
  return rc | cmocka_run_group_tests(models, NULL, NULL);
}
