/* safetensors reader and writer: valid files built here byte by byte, a
 * catalogue of malformed headers (exact status + message), every truncation of
 * a valid file, seeded random corruption, exact F16/BF16 conversion, and the
 * writer's round trip and "nothing left behind" guarantee. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "../harden/harden_util.h"

#include "model/safetensors.h"

/* ---- fixtures ---- */

typedef struct bytes {
  unsigned char *p;
  size_t n;
} bytes;

/* 8-byte length (hlen, or strlen(header) when hlen is -1), header, data. */
static bytes make_file(const char *header, long long hlen, const unsigned char *data, size_t dlen) {
  size_t h = strlen(header);
  bytes b = {malloc(8 + h + dlen + 1), 8 + h + dlen};
  uint64_t len = hlen < 0 ? (uint64_t)h : (uint64_t)hlen;
  for (int i = 0; i < 8; i++) b.p[i] = (unsigned char)(len >> (8 * i));
  memcpy(b.p + 8, header, h);
  if (dlen) memcpy(b.p + 8 + h, data, dlen);
  return b;
}

/* Data section of the valid fixture: a = F32 [2] {1.5, -2}, b = F16 [3] {1, -0.5, 65504}. */
static const unsigned char VALID_DATA[14] = {0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0,
                                             0x00, 0x3c, 0x00, 0xb8, 0xff, 0x7b};
static const char VALID_HEADER[] =
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
    "\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[8,14]}}";

static bytes valid_file(void) { return make_file(VALID_HEADER, -1, VALID_DATA, sizeof VALID_DATA); }

static void expect_bad(const char *what, bytes b, int allow_i32, const char *message) {
  sq_st_file *f = (sq_st_file *)1;
  seqcl_status st = sq_st_parse(b.p, b.n, "t.safetensors", allow_i32, &f);
  const char *msg = seqcl_last_message();
  if (st != SEQCL_ERR_BAD_MODEL || !strstr(msg, message) || !strstr(msg, "t.safetensors: "))
    fail_msg("%s: status %s, message '%s'; expected SEQCL_ERR_BAD_MODEL and '%s'", what,
             seqcl_status_name(st), msg, message);
  assert_null(f);
}

static sq_st_file *expect_ok(bytes b, int allow_i32) {
  sq_st_file *f = NULL;
  seqcl_status st = sq_st_parse(b.p, b.n, "t.safetensors", allow_i32, &f);
  if (st != SEQCL_OK) fail_msg("expected success, got %s: %s", seqcl_status_name(st), seqcl_last_message());
  assert_non_null(f);
  return f;
}

/* ---- valid files ---- */

static void test_valid(void **state) {
  (void)state;
  bytes b = valid_file();
  sq_st_file *f = expect_ok(b, 0);
  assert_int_equal(f->count, 2);
  assert_int_equal(f->data_bytes, 14);
  const sq_st_tensor *a = sq_st_find(f, "a"), *t = sq_st_find(f, "b");
  assert_non_null(a);
  assert_non_null(t);
  assert_null(sq_st_find(f, "c"));
  assert_int_equal(a->dtype, SQ_DT_F32);
  assert_int_equal(a->ndim, 1);
  assert_int_equal(a->shape[0], 2);
  assert_int_equal(a->nelem, 2);
  assert_int_equal(t->dtype, SQ_DT_F16);
  assert_int_equal(t->begin, 8);
  assert_int_equal(t->end, 14);
  float va[2], vb[3];
  sq_st_to_f32(f, a, va);
  sq_st_to_f32(f, t, vb);
  assert_true(va[0] == 1.5f && va[1] == -2.0f);
  assert_true(vb[0] == 1.0f && vb[1] == -0.5f && vb[2] == 65504.0f);
  sq_st_free(f);
  free(b.p);
}

static void test_valid_variants(void **state) {
  (void)state;
  /* Header padded with spaces to a multiple of 8, with __metadata__. */
  const char *h = "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"\"},"
                  "\"w\":{\"dtype\":\"BF16\",\"shape\":[2,1],\"data_offsets\":[0,4]}}      ";
  const unsigned char d[4] = {0x80, 0x3f, 0x49, 0xc0}; /* bf16 1.0, -3.140625 */
  bytes b = make_file(h, -1, d, 4);
  sq_st_file *f = expect_ok(b, 0);
  assert_int_equal(f->count, 1);
  const sq_st_tensor *w = sq_st_find(f, "w");
  assert_non_null(w);
  assert_int_equal(w->ndim, 2);
  assert_int_equal(w->nelem, 2);
  float v[2];
  sq_st_to_f32(f, w, v);
  assert_true(v[0] == 1.0f && v[1] == -3.140625f);
  sq_st_free(f);
  free(b.p);

  /* Scalars, empty tensors (anywhere in the order), I32 when allowed. */
  h = "{\"e\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[4,4]},"
      "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
      "\"i\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[4,8]},"
      "\"z\":{\"dtype\":\"F16\",\"shape\":[3,0,7],\"data_offsets\":[8,8]}}";
  const unsigned char d2[8] = {0x00, 0x00, 0x80, 0xbf, 0xfe, 0xff, 0xff, 0xff};
  b = make_file(h, -1, d2, 8);
  expect_bad("I32 not allowed", b, 0, "tensor 'i': dtype I32 is not supported (F32, F16 or BF16 expected)");
  f = expect_ok(b, 1);
  assert_int_equal(f->count, 4);
  const sq_st_tensor *s = sq_st_find(f, "s"), *i = sq_st_find(f, "i"), *e = sq_st_find(f, "e");
  assert_int_equal(s->ndim, 0);
  assert_int_equal(s->nelem, 1);
  assert_int_equal(e->nelem, 0);
  float sv;
  sq_st_to_f32(f, s, &sv);
  assert_true(sv == -1.0f);
  int32_t iv;
  assert_int_equal(sq_st_to_i32(f, i, &iv), 0);
  assert_int_equal(iv, -2);
  assert_int_equal(sq_st_to_i32(f, s, &iv), -1);
  sq_st_free(f);
  free(b.p);

  /* No tensors at all. */
  b = make_file("{}", -1, NULL, 0);
  f = expect_ok(b, 0);
  assert_int_equal(f->count, 0);
  sq_st_free(f);
  free(b.p);
}

/* ---- malformed files ---- */

typedef struct bad_header {
  const char *header;
  size_t data_len; /* bytes of data section (zeros) */
  const char *message;
} bad_header;

#define T2(a, b) "{\"a\":" a ",\"b\":" b "}"
#define F32_2(b, e) "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" #b "," #e "]}"
#define F16_3(b, e) "{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[" #b "," #e "]}"

static const bad_header BAD_HEADERS[] = {
    {"[1,2]", 0, "the JSON header (byte offset 8) is not an object"},
    {"{\"a\":1,", 0, "malformed JSON header at byte offset"},
    {"{\"a\":{}} x", 0, "malformed JSON header at byte offset"},
    {"{\"a\":{\"dtype\":\"F32\",\"sh\0ape\":[1],\"data_offsets\":[0,4]}}", 4, "malformed JSON header"},
    {T2(F32_2(0, 8), F32_2(8, 16)), 16, ""}, /* the valid baseline of the tiling cases */
    {"{\"a\":" F32_2(0, 8) ",\"a\":" F32_2(8, 16) "}", 16, "duplicate object key near '\"a\"'"},
    {"{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
     "tensor 'a': dtype I64 is not supported (F32, F16 or BF16 expected)"},
    {"{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "tensor 'a': dtype F64 is not supported"},
    {"{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': dtype f32 is not supported"},
    {"{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': dtype must be a string"},
    {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': dtype is missing"},
    {"{\"a\":[1]}", 0, "tensor 'a': header entry must be an object"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, "tensor 'a': shape[0] must be a non-negative integer"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,2.0],\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape[1] must be a non-negative integer"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape must be an array"},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape is missing"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': 9 dimensions (at most 8 supported)"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, "tensor 'a': the shape's element count overflows"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[65536,65536,65536,65536],\"data_offsets\":[0,0]}}", 0, "tensor 'a': the shape's element count overflows"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0, "tensor 'a': the shape's element count overflows"},
    {"{\"a\":{\"dtype\":\"BF16\",\"shape\":[9223372036854775807,3],\"data_offsets\":[0,0]}}", 0, "tensor 'a': the shape's element count overflows"},
    /* 2 x (2^63 - 1) bytes still fits in size_t: no overflow, but the offsets disagree. */
    {"{\"a\":{\"dtype\":\"BF16\",\"shape\":[9223372036854775807],\"data_offsets\":[0,0]}}", 0,
     "tensor 'a': data_offsets [0, 0] hold 0 bytes but dtype BF16 x shape needs 18446744073709551614"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "tensor 'a': data_offsets [0, 4] hold 4 bytes but dtype F32 x shape needs 8"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "tensor 'a': data_offsets [8, 0] end before they begin"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "tensor 'a': data_offsets is missing"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, "tensor 'a': data_offsets must be [begin, end]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8, "tensor 'a': data_offsets must be [begin, end]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":\"0-8\"}}", 8, "tensor 'a': data_offsets must be [begin, end]"},
    {T2(F32_2(0, 8), F16_3(4, 10)), 14, "tensor 'b': bytes [4, 10) overlap tensor 'a'"},
    {T2(F32_2(0, 8), F32_2(0, 8)), 8, "overlap tensor 'a'"},
    {T2(F32_2(0, 8), F16_3(10, 16)), 16, "gap in the data section: bytes [8, 10)"},
    {T2(F32_2(2, 10), F16_3(10, 16)), 16, "gap in the data section: bytes [0, 2)"},
    {T2(F32_2(0, 8), F16_3(8, 14)), 12, "tensor 'b': bytes [8, 14) of the data section run past the end of the file"},
    {T2(F32_2(0, 8), F16_3(8, 14)), 0, "tensor 'a': bytes [0, 8) of the data section run past the end of the file"},
    {T2(F32_2(0, 8), F32_2(9223372036854775800, 9223372036854775808)), 8, "malformed JSON header"},
    {T2(F32_2(0, 8), F32_2(9223372036854775799, 9223372036854775807)), 8, "tensor 'b': bytes [9223372036854775799, 9223372036854775807) of the data section run past the end"},
    {T2(F32_2(0, 8), F16_3(8, 14)), 16, "2 trailing bytes at byte offset"},
    {"{}", 3, "3 trailing bytes at byte offset"},
    {"{\"__metadata__\":{\"format\":1}}", 0, "__metadata__ must map strings to strings; the value of 'format' is not a string"},
    {"{\"__metadata__\":{\"a\":\"b\",\"n\":null}}", 0, "the value of 'n' is not a string"},
    {"{\"__metadata__\":[\"pt\"]}", 0, "__metadata__ must be an object mapping strings to strings"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate object key"},
};

static void test_bad_headers(void **state) {
  (void)state;
  unsigned char zeros[64] = {0};
  size_t n = 0;
  for (size_t i = 0; i < sizeof BAD_HEADERS / sizeof BAD_HEADERS[0]; i++) {
    const bad_header *c = &BAD_HEADERS[i];
    /* The embedded-NUL case needs its true length: build it by hand. */
    bytes b;
    if (strstr(c->header, "\"sh") && !strstr(c->header, "shape")) {
      static const char with_nul[] = "{\"a\":{\"dtype\":\"F32\",\"sh\0ape\":[1],\"data_offsets\":[0,4]}}";
      size_t h = sizeof with_nul - 1;
      b.n = 8 + h + 4;
      b.p = calloc(1, b.n);
      b.p[0] = (unsigned char)h;
      memcpy(b.p + 8, with_nul, h);
    } else {
      b = make_file(c->header, -1, zeros, c->data_len);
    }
    if (c->message[0] == '\0') {
      sq_st_free(expect_ok(b, 0)); /* the tiling baseline really is valid */
    } else {
      char what[32];
      snprintf(what, sizeof what, "bad header case %zu", i);
      expect_bad(what, b, 0, c->message);
      n++;
    }
    free(b.p);
  }
  printf("safetensors bad-header cases: %zu\n", n);
}

static void test_bad_lengths(void **state) {
  (void)state;
  bytes b = make_file("{}", 0, NULL, 0);
  expect_bad("length 0", b, 0, "header length at byte offset 0 is 0");
  free(b.p);
  b = make_file("{}", 100000001, NULL, 0);
  expect_bad("length 100 MB + 1", b, 0, "header length 100000001 at byte offset 0 exceeds the format's limit");
  free(b.p);
  b = make_file("{}", (long long)0x7fffffffffffffffLL, NULL, 0);
  expect_bad("length 2^63-1", b, 0, "exceeds the format's limit");
  free(b.p);
  b = make_file("{}", 3, NULL, 0);
  expect_bad("length past EOF", b, 0, "the 3-byte header starting at byte offset 8 runs past the end of the file (10 bytes)");
  free(b.p);
  /* Exactly 100 MB is allowed by the length check (then fails as past EOF). */
  b = make_file("{}", 100000000, NULL, 0);
  expect_bad("length 100 MB", b, 0, "runs past the end of the file");
  free(b.p);
  unsigned char five[5] = {2, 0, 0, 0, 0};
  b.p = five;
  b.n = 5;
  expect_bad("5-byte file", b, 0, "file is 5 bytes, too short for the 8-byte header length at byte offset 0");
  b.n = 0;
  expect_bad("empty file", b, 0, "file is 0 bytes");
}

/* Every proper prefix of a valid file is an error, never a crash or a success. */
static void test_truncation(void **state) {
  (void)state;
  bytes b = valid_file();
  for (size_t n = 0; n < b.n; n++) {
    unsigned char *copy = malloc(n ? n : 1); /* exact-size copy so ASan sees over-reads */
    memcpy(copy, b.p, n);
    sq_st_file *f = (sq_st_file *)1;
    seqcl_status st = sq_st_parse(copy, n, "t.safetensors", 0, &f);
    if (st != SEQCL_ERR_BAD_MODEL) fail_msg("prefix of %zu bytes: %s", n, seqcl_status_name(st));
    assert_null(f);
    assert_non_null(strstr(seqcl_last_message(), "t.safetensors: "));
    free(copy);
  }
  /* One extra byte is an error too. */
  unsigned char *longer = malloc(b.n + 1);
  memcpy(longer, b.p, b.n);
  longer[b.n] = 0;
  bytes l = {longer, b.n + 1};
  char want[64];
  snprintf(want, sizeof want, "1 trailing bytes at byte offset %zu", b.n);
  expect_bad("one byte too many", l, 0, want);
  free(longer);
  free(b.p);
}

/* Seeded random corruption: each result is either a valid file or a clean error. */
static void test_random_corruption(void **state) {
  (void)state;
  bytes b = valid_file();
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  size_t ok = 0, bad = 0;
  for (int iter = 0; iter < 20000; iter++) {
    unsigned char *copy = malloc(b.n);
    memcpy(copy, b.p, b.n);
    int flips = 1 + iter % 3;
    for (int k = 0; k < flips; k++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)(rng >> 33) % b.n;
      copy[at] = (unsigned char)(rng >> 17);
    }
    sq_st_file *f = NULL;
    seqcl_status st = sq_st_parse(copy, b.n, "t.safetensors", iter & 1, &f);
    if (st == SEQCL_OK) {
      ok++;
      for (size_t i = 0; i < f->count; i++) {
        float *dst = malloc((f->tensors[i].nelem ? f->tensors[i].nelem : 1) * sizeof *dst);
        sq_st_to_f32(f, &f->tensors[i], dst);
        free(dst);
      }
      sq_st_free(f);
    } else {
      if (st != SEQCL_ERR_BAD_MODEL) fail_msg("iteration %d: %s", iter, seqcl_status_name(st));
      assert_null(f);
      bad++;
    }
    free(copy);
  }
  printf("random corruption: %zu still valid, %zu rejected\n", ok, bad);
  assert_true(bad > 10000);
  free(b.p);
}

/* ---- F16 / BF16 conversion ---- */

static double half_reference(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * ldexp(m, -24);
  if (e == 31) return m ? NAN : s * INFINITY;
  return s * ldexp(1024 + m, e - 25);
}

typedef struct code_value {
  uint16_t code;
  double value;
} code_value;

/* The 16-bit codes in table convert to exactly their values; specials holds
 * +inf, -inf, two NaNs (the second a signalling one, which must stay NaN, not
 * become inf) and -0. */
static void check_codes(const char *what, float (*to_float)(uint16_t), const code_value *table,
                        size_t n, const uint16_t specials[5]) {
  for (size_t i = 0; i < n; i++) {
    float f = to_float(table[i].code);
    if ((double)f != table[i].value)
      fail_msg("%s 0x%04x -> %.17g, expected %.17g", what, table[i].code, f, table[i].value);
  }
  assert_true(isinf(to_float(specials[0])) && to_float(specials[0]) > 0);
  assert_true(isinf(to_float(specials[1])) && to_float(specials[1]) < 0);
  assert_true(isnan(to_float(specials[2])));
  assert_true(isnan(to_float(specials[3])));
  assert_true(to_float(specials[4]) == 0.0f && signbit(to_float(specials[4])));
}

static void test_half_table(void **state) {
  (void)state;
  static const code_value table[] = {
      {0x0000, 0.0},
      {0x0001, 5.9604644775390625e-08},   /* smallest subnormal, 2^-24 */
      {0x0002, 1.1920928955078125e-07},
      {0x03ff, 6.097555160522461e-05},    /* largest subnormal */
      {0x0400, 6.103515625e-05},          /* smallest normal, 2^-14 */
      {0x3555, 0.333251953125},
      {0x3bff, 0.99951171875},
      {0x3c00, 1.0},
      {0x3c01, 1.0009765625},
      {0x4000, 2.0},
      {0x4248, 3.140625},
      {0x7bff, 65504.0},
      {0xc000, -2.0},
      {0x8001, -5.9604644775390625e-08},
      {0xfbff, -65504.0},
  };
  static const uint16_t specials[5] = {0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x8000};
  check_codes("half", sq_half_to_float, table, sizeof table / sizeof table[0], specials);
  /* Every one of the 65536 values against the ldexp definition. */
  for (uint32_t h = 0; h < 65536; h++) {
    float f = sq_half_to_float((uint16_t)h);
    double r = half_reference((uint16_t)h);
    if (isnan(r)) {
      if (!isnan(f)) fail_msg("half 0x%04x should be NaN", h);
    } else if ((double)f != r || !signbit(f) != !signbit(r)) {
      fail_msg("half 0x%04x -> %.17g, expected %.17g", h, f, r);
    }
  }
}

static void test_bf16_table(void **state) {
  (void)state;
  static const code_value table[] = {
      {0x0000, 0.0},
      {0x0001, 9.183549615799121e-41},   /* smallest subnormal, 2^-133 */
      {0x007f, 1.1663108012064884e-38},  /* largest subnormal, 127 * 2^-133 */
      {0x0080, 1.1754943508222875e-38},  /* smallest normal, 2^-126 */
      {0x3f80, 1.0},
      {0x3f81, 1.0078125},
      {0x4049, 3.140625},
      {0xbf00, -0.5},
      {0x7f7f, 3.3895313892515355e+38},  /* largest finite */
      {0xc2f7, -123.5},
  };
  static const uint16_t specials[5] = {0x7f80, 0xff80, 0x7fc0, 0xff81, 0x8000};
  check_codes("bf16", sq_bf16_to_float, table, sizeof table / sizeof table[0], specials);
}

/* ---- writer ---- */

static float uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void test_write_round_trip(void **state) {
  (void)state;
  uint64_t seed = 42;
  float logits[2 * 3 * 5], align[2 * 3 * 4], loss = 0.75f;
  for (size_t i = 0; i < sizeof logits / sizeof logits[0]; i++) logits[i] = uniform(&seed);
  for (size_t i = 0; i < sizeof align / sizeof align[0]; i++) align[i] = uniform(&seed);
  sq_st_out out[4] = {
      {"logits", 3, {2, 3, 5}, logits},
      {"alignments", 3, {2, 3, 4}, align},
      {"loss", 0, {0}, &loss},
      {"empty", 2, {0, 7}, NULL},
  };
  char path[128];
  snprintf(path, sizeof path, "%s/out.safetensors", hu_tmpdir);
  assert_int_equal(sq_st_write(path, out, 4), SEQCL_OK);
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);

  /* The raw layout: header length a multiple of 8, padding made of spaces. */
  FILE *fp = fopen(path, "rb");
  unsigned char raw[2048];
  size_t n = fread(raw, 1, sizeof raw, fp);
  fclose(fp);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | raw[i];
  assert_int_equal(hlen % 8, 0);
  assert_int_equal(n, 8 + hlen + sizeof logits + sizeof align + sizeof loss);
  assert_int_equal(raw[8], '{');
  size_t last = 8 + hlen - 1;
  while (raw[last] == ' ') last--;
  assert_int_equal(raw[last], '}');

  sq_st_file *f = NULL;
  assert_int_equal(sq_st_read(path, 0, &f), SEQCL_OK);
  assert_int_equal(f->count, 4);
  const sq_st_tensor *t = sq_st_find(f, "logits");
  assert_int_equal(t->ndim, 3);
  assert_int_equal(t->shape[2], 5);
  float back[30];
  sq_st_to_f32(f, t, back);
  assert_memory_equal(back, logits, sizeof logits);
  sq_st_to_f32(f, sq_st_find(f, "alignments"), back);
  assert_memory_equal(back, align, sizeof align);
  t = sq_st_find(f, "loss");
  assert_int_equal(t->ndim, 0);
  sq_st_to_f32(f, t, back);
  assert_true(back[0] == 0.75f);
  assert_int_equal(sq_st_find(f, "empty")->nelem, 0);
  sq_st_free(f);

  /* Overwriting replaces the file whole. */
  assert_int_equal(sq_st_write(path, out + 2, 1), SEQCL_OK);
  assert_int_equal(sq_st_read(path, 0, &f), SEQCL_OK);
  assert_int_equal(f->count, 1);
  sq_st_free(f);
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);
}

static void test_write_failures_leave_nothing(void **state) {
  (void)state;
  float v[2] = {0.5f, -0.25f};
  sq_st_out good = {"x", 1, {2}, v};
  char path[256];

  /* A folder that does not exist. */
  snprintf(path, sizeof path, "%s/missing/out.safetensors", hu_tmpdir);
  assert_int_equal(sq_st_write(path, &good, 1), SEQCL_ERR_IO);
  assert_non_null(strstr(seqcl_last_message(), path));
  assert_int_equal(hu_count_entries(hu_tmpdir), 0);

  /* Invalid tensors: nothing is created. */
  snprintf(path, sizeof path, "%s/out.safetensors", hu_tmpdir);
  sq_st_out bad[2] = {{"x", 1, {-2}, v}, {"x", 1, {2}, v}};
  assert_int_equal(sq_st_write(path, bad, 1), SEQCL_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(seqcl_last_message(), "tensor 'x': bad extent -2"));
  assert_int_equal(sq_st_write(path, bad + 1, 1), SEQCL_OK);
  unlink(path);
  sq_st_out twice[2] = {{"x", 1, {2}, v}, {"x", 1, {2}, v}};
  assert_int_equal(sq_st_write(path, twice, 2), SEQCL_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(seqcl_last_message(), "tensor 'x' is listed twice"));
  assert_int_equal(hu_count_entries(hu_tmpdir), 0);

  /* The rename fails (the target is a non-empty folder): the temporary file goes. */
  snprintf(path, sizeof path, "%s/taken", hu_tmpdir);
  assert_int_equal(mkdir(path, 0700), 0);
  char inner[300];
  snprintf(inner, sizeof inner, "%s/keep", path);
  fclose(fopen(inner, "w"));
  assert_int_equal(sq_st_write(path, &good, 1), SEQCL_ERR_IO);
  assert_non_null(strstr(seqcl_last_message(), path));
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);
  assert_int_equal(hu_count_entries(path), 1);
  unlink(inner);
  rmdir(path);

  /* A read-only folder (root ignores permissions, so only checked as a user). */
  snprintf(path, sizeof path, "%s/ro", hu_tmpdir);
  assert_int_equal(mkdir(path, 0500), 0);
  char target[300];
  snprintf(target, sizeof target, "%s/out.safetensors", path);
  seqcl_status st = sq_st_write(target, &good, 1);
  if (geteuid() != 0) {
    assert_int_equal(st, SEQCL_ERR_IO);
    assert_non_null(strstr(seqcl_last_message(), "cannot create a temporary file"));
    assert_int_equal(hu_count_entries(path), 0);
  } else {
    assert_int_equal(st, SEQCL_OK);
    unlink(target);
  }
  rmdir(path);
  assert_int_equal(hu_count_entries(hu_tmpdir), 0);
}

static void test_read_errors(void **state) {
  (void)state;
  char path[128];
  sq_st_file *f = (sq_st_file *)1;
  snprintf(path, sizeof path, "%s/none.safetensors", hu_tmpdir);
  assert_int_equal(sq_st_read(path, 0, &f), SEQCL_ERR_IO);
  assert_null(f);
  assert_non_null(strstr(seqcl_last_message(), path));
  f = (sq_st_file *)1;
  assert_int_equal(sq_st_read(hu_tmpdir, 0, &f), SEQCL_ERR_IO);
  assert_null(f);
  assert_non_null(strstr(seqcl_last_message(), hu_tmpdir));

  /* A truncated file on disk: the message names the file path. */
  bytes b = valid_file();
  snprintf(path, sizeof path, "%s/cut.safetensors", hu_tmpdir);
  FILE *fp = fopen(path, "wb");
  fwrite(b.p, 1, b.n - 3, fp);
  fclose(fp);
  assert_int_equal(sq_st_read(path, 0, &f), SEQCL_ERR_BAD_MODEL);
  char want[200];
  snprintf(want, sizeof want, "%s: tensor 'b': bytes [8, 14) of the data section run past the end", path);
  assert_non_null(strstr(seqcl_last_message(), want));
  unlink(path);
  free(b.p);
}

static void write_bytes(const char *path, bytes b, size_t n) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(b.p, 1, n, fp), n);
  assert_int_equal(fclose(fp), 0);
}

typedef struct fifo_writer {
  const char *path;
  bytes b;
} fifo_writer;

static void *write_fifo(void *arg) {
  const fifo_writer *w = arg;
  FILE *fp = fopen(w->path, "wb"); /* waits for the reader */
  if (fp) {
    fwrite(w->b.p, 1, w->b.n, fp);
    fclose(fp);
  }
  return NULL;
}

/* A pipe goes the whole-file way, opened once: every byte the writer sent
 * arrives (a first open to look at it would lose what it took). */
static void test_open_pipe(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/pipe.safetensors", hu_tmpdir);
  assert_int_equal(mkfifo(path, 0600), 0);
  fifo_writer w = {path, valid_file()};
  for (int i = 0; i < 20; i++) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, write_fifo, &w), 0);
    sq_st_file *f = NULL;
    const seqcl_status st = sq_st_open(path, 0, &f);
    pthread_join(t, NULL);
    if (st != SEQCL_OK) fail_msg("round %d: %s", i, seqcl_last_message());
    float v[2];
    assert_int_equal(sq_st_tensor_f32(f, sq_st_find(f, "a"), v), SEQCL_OK);
    assert_true(v[0] == 1.5f && v[1] == -2.0f);
    sq_st_free(f);
  }
  unlink(path);
  free(w.b.p);
}

/* sq_st_open: the header alone read, every tensor then read into place with
 * sq_st_tensor_f32 (F32 and F16), values as sq_st_read gives them; every
 * prefix of the file, a byte too many and a folder fail as sq_st_read does,
 * with its status and message; a NaN is reported with sq_st_check_finite's
 * message; a file cut short after it was opened is an I/O error naming the
 * tensor, never values read past its end. */
static void test_open_reads_in_place(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/m.safetensors", hu_tmpdir);
  bytes b = valid_file();
  write_bytes(path, b, b.n);
  sq_st_file *f = NULL, *whole = NULL;
  assert_int_equal(sq_st_open(path, 0, &f), SEQCL_OK);
  assert_int_equal(sq_st_read(path, 0, &whole), SEQCL_OK);
  assert_null(f->data);
  assert_true(f->fd >= 0);
  assert_int_equal(f->count, whole->count);
  assert_int_equal(f->data_bytes, whole->data_bytes);
  for (size_t i = 0; i < f->count; i++) {
    const sq_st_tensor *t = &f->tensors[i];
    float got[4] = {-7, -7, -7, -7}, want[4] = {-7, -7, -7, -7};
    assert_int_equal(sq_st_tensor_f32(f, t, got), SEQCL_OK);
    assert_int_equal(sq_st_tensor_f32(whole, sq_st_find(whole, t->name), want), SEQCL_OK);
    assert_memory_equal(got, want, sizeof got); /* the values, and nothing past nelem */
  }
  /* the in-memory helpers refuse it rather than answer for bytes not read */
  assert_int_equal(sq_st_check_finite(f, &f->tensors[0]), SEQCL_ERR_INTERNAL);
  sq_st_free(whole);

  /* cut after opening: the read of 'b' (bytes [8, 14)) comes up short */
  assert_int_equal(truncate(path, (off_t)(b.n - 3)), 0);
  float v[4];
  assert_int_equal(sq_st_tensor_f32(f, sq_st_find(f, "a"), v), SEQCL_OK);
  assert_int_equal(sq_st_tensor_f32(f, sq_st_find(f, "b"), v), SEQCL_ERR_IO);
  assert_non_null(strstr(seqcl_last_message(), "tensor 'b': read failed"));
  assert_non_null(strstr(seqcl_last_message(), path));
  sq_st_free(f);

  /* every malformed length fails as the whole-file reader does */
  for (size_t n = 0; n <= b.n + 1; n++) {
    if (n == b.n) continue;
    unsigned char *longer = calloc(b.n + 1, 1);
    memcpy(longer, b.p, b.n);
    write_bytes(path, (bytes){longer, b.n + 1}, n);
    free(longer);
    f = whole = (sq_st_file *)1;
    const seqcl_status want = sq_st_read(path, 0, &whole);
    char want_msg[512];
    snprintf(want_msg, sizeof want_msg, "%s", seqcl_last_message());
    const seqcl_status got = sq_st_open(path, 0, &f);
    if (got != want || strcmp(seqcl_last_message(), want_msg))
      fail_msg("%zu bytes: open %s '%s', read %s '%s'", n, seqcl_status_name(got),
               seqcl_last_message(), seqcl_status_name(want), want_msg);
    assert_int_equal(want, SEQCL_ERR_BAD_MODEL);
    assert_null(f);
  }
  f = (sq_st_file *)1;
  assert_int_equal(sq_st_open(hu_tmpdir, 0, &f), SEQCL_ERR_IO);
  assert_null(f);

  /* a NaN in 'a' (its second float's exponent bytes) */
  b.p[8 + strlen(VALID_HEADER) + 6] = 0xc0;
  b.p[8 + strlen(VALID_HEADER) + 7] = 0x7f;
  write_bytes(path, b, b.n);
  assert_int_equal(sq_st_read(path, 0, &whole), SEQCL_OK);
  assert_int_equal(sq_st_check_finite(whole, sq_st_find(whole, "a")), SEQCL_ERR_BAD_MODEL);
  char want_msg[512];
  snprintf(want_msg, sizeof want_msg, "%s", seqcl_last_message());
  assert_int_equal(sq_st_open(path, 0, &f), SEQCL_OK);
  assert_int_equal(sq_st_tensor_f32(f, sq_st_find(f, "a"), v), SEQCL_ERR_BAD_MODEL);
  assert_string_equal(seqcl_last_message(), want_msg);
  assert_non_null(strstr(want_msg, "(flat index 1) is NaN"));
  sq_st_free(f);
  sq_st_free(whole);
  unlink(path);
  free(b.p);
}

/* sq_st_first_non_finite over F32 data: 1 000 values (blocks of 256 and a
 * partial last one) of every magnitude up to FLT_MAX, with NaN, +inf and -inf
 * placed at positions inside and at the edges of the blocks; the first one is
 * found wherever the others are, and none where there are none. */
static void test_first_non_finite_f32(void **state) {
  (void)state;
  enum { N = 1000 };
  static const uint32_t bad[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu};
  static const size_t where[] = {0, 1, 255, 256, 300, 511, 700, 768, 998, 999};
  unsigned char data[4 * N];
  uint64_t s = 7;
  char header[128];
  snprintf(header, sizeof header, "{\"w\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[0,%d]}}",
           N, 4 * N);
  for (size_t a = 0; a < sizeof where / sizeof where[0]; a++)
    for (size_t b = 0; b <= sizeof where / sizeof where[0]; b++) {
      for (int i = 0; i < N; i++) { /* finite: exponents up to 0xfe, both signs */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t w = (uint32_t)(s >> 33) % 0x7f800000u | (uint32_t)(s >> 11 & 1) << 31;
        for (int k = 0; k < 4; k++) data[4 * i + k] = (unsigned char)(w >> (8 * k));
      }
      const size_t at[2] = {where[a], b < sizeof where / sizeof where[0] ? where[b] : where[a]};
      for (int j = 0; j < 2; j++)
        for (int k = 0; k < 4; k++)
          data[4 * at[j] + k] = (unsigned char)(bad[(a + b + j) % 5] >> (8 * k));
      bytes f = make_file(header, -1, data, sizeof data);
      sq_st_file *st = expect_ok(f, 0);
      const size_t got = sq_st_first_non_finite(st, sq_st_find(st, "w"));
      const size_t want = at[0] < at[1] ? at[0] : at[1];
      if (got != want) fail_msg("bad values at %zu and %zu: first found %zu", at[0], at[1], got);
      sq_st_free(st);
      free(f.p);
    }
  for (int i = 0; i < N; i++) /* all finite: the largest floats below FLT_MAX */
    for (int k = 0; k < 4; k++) data[4 * i + k] = (unsigned char)((0x7f7fffffu - (unsigned)i) >> (8 * k));
  bytes f = make_file(header, -1, data, sizeof data);
  sq_st_file *st = expect_ok(f, 0);
  assert_true(sq_st_first_non_finite(st, sq_st_find(st, "w")) == SIZE_MAX);
  sq_st_free(st);
  free(f.p);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_first_non_finite_f32),
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_valid_variants),
      cmocka_unit_test(test_bad_headers),
      cmocka_unit_test(test_bad_lengths),
      cmocka_unit_test(test_truncation),
      cmocka_unit_test(test_random_corruption),
      cmocka_unit_test(test_half_table),
      cmocka_unit_test(test_bf16_table),
      cmocka_unit_test_setup_teardown(test_write_round_trip, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_write_failures_leave_nothing, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_read_errors, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_open_reads_in_place, hu_setup_tmpdir,
                                      hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_open_pipe, hu_setup_tmpdir, hu_teardown_tmpdir))
