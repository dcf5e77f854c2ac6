/* A random model directory for `seqcl bench` (bench.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "core/error.h"

double sq_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double sq_bench_median(double *v, int n) {
  if (n <= 0) return 0.0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct tensor_spec {
  char name[64];
  int rows, cols; /* cols 0: a vector of `rows` */
} tensor_spec;

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static float rng_uniform(uint64_t *s, float bound) {
  double u = (double)(rng_next(s) >> 11) / 9007199254740992.0; /* [0, 1) */
  return (float)((2.0 * u - 1.0) * bound);
}

static size_t count_of(const tensor_spec *t) { return (size_t)t->rows * (t->cols ? t->cols : 1); }

static seqcl_status io_fail(const char *path) {
  return sq_fail(NULL, SEQCL_ERR_IO, "bench: cannot write %s: %s", path, strerror(errno));
}

seqcl_status sq_bench_write_model(const char *dir, int D, int H, int A, int V, const char *score,
                                  int block_eos, unsigned seed) {
  const sq_bench_model_spec sp = {.D = D, .H = H, .layers = 1, .bidirectional = 0, .Hd = H,
                                  .A = A, .V = V, .score = score, .state_context = 0};
  return sq_bench_write_model_spec(dir, &sp, block_eos, seed);
}

seqcl_status sq_bench_write_model_spec(const char *dir, const sq_bench_model_spec *sp,
                                       int block_eos, unsigned seed) {
  const int D = sp->D, H = sp->H, Hd = sp->Hd, A = sp->A, V = sp->V;
  const int dirs = sp->bidirectional ? 2 : 1, He = dirs * H;
  const char *score = sp->score;
  const int additive = !strcmp(score, "additive");
  enum { MAX_T = 12 + 4 * 2 * 4 };
  tensor_spec t[MAX_T];
  int nt = 0;
  if (sp->layers < 1 || sp->layers > 4)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "bench: %d encoder layers (1..4)",
                   sp->layers);
#define T_(n, r, c)                                        \
  do {                                                     \
    snprintf(t[nt].name, sizeof t[nt].name, "%s", n);      \
    t[nt].rows = (r);                                      \
    t[nt].cols = (c);                                      \
    nt++;                                                  \
  } while (0)
  T_("encoder.embedding.weight", V, D);
  for (int l = 0; l < sp->layers; l++)
    for (int d = 0; d < dirs; d++) {
      const char *sfx = d ? "_reverse" : "";
      char n[64];
      snprintf(n, sizeof n, "encoder.rnn.weight_ih_l%d%s", l, sfx);
      T_(n, 3 * H, l ? He : D);
      snprintf(n, sizeof n, "encoder.rnn.weight_hh_l%d%s", l, sfx);
      T_(n, 3 * H, H);
      snprintf(n, sizeof n, "encoder.rnn.bias_ih_l%d%s", l, sfx);
      T_(n, 3 * H, 0);
      snprintf(n, sizeof n, "encoder.rnn.bias_hh_l%d%s", l, sfx);
      T_(n, 3 * H, 0);
    }
  T_("decoder.embedding.weight", V, D);
  if (additive) {
    T_("decoder.attention.key.weight", A, He);
    T_("decoder.attention.key.bias", A, 0);
    T_("decoder.attention.query.weight", A, Hd);
    T_("decoder.attention.query.bias", A, 0);
    T_("decoder.attention.energy.weight", 1, A);
    T_("decoder.attention.energy.bias", 1, 0);
  } else {
    T_("decoder.attention.query.weight", He, Hd);
    T_("decoder.attention.query.bias", He, 0);
  }
  T_("decoder.rnn.weight_ih", 3 * Hd, D + He);
  T_("decoder.rnn.weight_hh", 3 * Hd, Hd);
  T_("decoder.rnn.bias_ih", 3 * Hd, 0);
  T_("decoder.rnn.bias_hh", 3 * Hd, 0);
  T_("decoder.output.weight", V, sp->state_context ? Hd + He : Hd);
  T_("decoder.output.bias", V, 0);
#undef T_
  const int bos = V - 2, eos = V - 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "w");
  if (!f) return io_fail(path);
  fprintf(f,
          "{\"format\": \"seqcl.seq2seq\", \"version\": 1, \"src_vocab_size\": %d, "
          "\"tgt_vocab_size\": %d, \"embed_dim\": %d, \"bos_id\": %d, \"eos_id\": %d, "
          "\"pad_id\": null, \"encoder\": {\"hidden_size\": %d, \"num_layers\": %d, "
          "\"bidirectional\": %s}, \"decoder\": {\"hidden_size\": %d, \"init\": \"zeros\"}, "
          "\"attention\": {\"score\": \"%s\"",
          V, V, D, bos, eos, H, sp->layers, sp->bidirectional ? "true" : "false", Hd, score);
  if (additive) fprintf(f, ", \"dim\": %d", A);
  fprintf(f, "}, \"output\": \"%s\"}\n", sp->state_context ? "state_context" : "state");
  if (fclose(f) != 0) return io_fail(path);

  /* header: {"name": {"dtype": "F32", "shape": [...], "data_offsets": [a, b]}, ...} */
  size_t cap = 256 + (size_t)nt * 160, len = 0, off = 0;
  char *hdr = malloc(cap);
  if (!hdr) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
  len += (size_t)snprintf(hdr + len, cap - len, "{");
  for (int i = 0; i < nt; i++) {
    size_t bytes = count_of(&t[i]) * 4;
    if (t[i].cols)
      len += (size_t)snprintf(hdr + len, cap - len,
                              "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}",
                              i ? "," : "", t[i].name, t[i].rows, t[i].cols, off, off + bytes);
    else
      len += (size_t)snprintf(hdr + len, cap - len,
                              "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}",
                              i ? "," : "", t[i].name, t[i].rows, off, off + bytes);
    off += bytes;
  }
  len += (size_t)snprintf(hdr + len, cap - len, "}");
  while (len % 8) hdr[len++] = ' ';
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  f = fopen(path, "wb");
  if (!f) {
    free(hdr);
    return io_fail(path);
  }
  unsigned char n8[8];
  for (int i = 0; i < 8; i++) n8[i] = (unsigned char)((uint64_t)len >> (8 * i));
  int ok = fwrite(n8, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
  free(hdr);
  uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
  const float bound = (float)(1.0 / sqrt((double)Hd));
  for (int i = 0; i < nt && ok; i++) {
    size_t n = count_of(&t[i]);
    float *v = malloc(n * sizeof(float));
    if (!v) {
      fclose(f);
      return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
    }
    /* embeddings ~ N(0,1) in PyTorch; uniform +-1 keeps the same order */
    float b = strstr(t[i].name, "embedding") ? 1.0f : bound;
    for (size_t k = 0; k < n; k++) v[k] = rng_uniform(&s, b);
    if (block_eos && !strcmp(t[i].name, "decoder.output.bias")) v[eos] = -1e4f;
    ok = fwrite(v, sizeof(float), n, f) == n; /* little-endian hosts only (x86, arm) */
    free(v);
  }
  if (fclose(f) != 0 || !ok) return io_fail(path);
  return SEQCL_OK;
}
