/* Shape texts ("N=3,S=7,H=13") and the seeded random numbers of the op list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check/oplist.h"

int sq_shape_parse(const char *text, sq_shape *out) {
  memset(out, 0, sizeof *out);
  if (!text) return -1;
  const char *p = text;
  while (*p) {
    const char *eq = strchr(p, '=');
    if (!eq || eq == p || (size_t)(eq - p) >= sizeof out->key[0] || out->n >= SQ_SHAPE_MAX_KEYS)
      return -1;
    for (const char *k = p; k < eq; k++)
      if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9')))
        return -1;
    memcpy(out->key[out->n], p, (size_t)(eq - p));
    out->key[out->n][eq - p] = '\0';
    for (int i = 0; i < out->n; i++)
      if (!strcmp(out->key[i], out->key[out->n])) return -1; /* a key given twice */
    char *end = NULL;
    errno = 0;
    double v = strtod(eq + 1, &end);
    if (errno || end == eq + 1 || (*end && *end != ',') || v != v) return -1;
    out->val[out->n++] = v;
    p = *end ? end + 1 : end;
    if (*end == ',' && !*p) return -1; /* trailing comma */
  }
  return 0;
}

double sq_shape_get(const sq_shape *s, const char *key, double dflt) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], key)) return s->val[i];
  return dflt;
}

int sq_shape_int(const sq_shape *s, const char *key, int dflt) {
  double v = sq_shape_get(s, key, dflt);
  if (v > 1e8) return 100000000;
  if (v < -1e8) return -100000000;
  return (int)v;
}

void sq_rng_seed(sq_rng *r, uint64_t seed) { r->state = seed; }

uint64_t sq_rng_next(sq_rng *r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float sq_rng_unit(sq_rng *r) {
  /* 24 random bits give a float in [-1, 1) exactly; values too close to 0 are
   * pushed out so that no input is (nearly) zero. */
  int32_t k = (int32_t)(sq_rng_next(r) >> 40) - (1 << 23);
  float x = (float)k / (float)(1 << 23);
  if (x > -1.0f / 256 && x < 1.0f / 256) x = x < 0 ? x - 1.0f / 128 : x + 1.0f / 128;
  return x;
}

int sq_rng_int(sq_rng *r, int lo, int hi) {
  if (hi <= lo) return lo;
  return lo + (int)(sq_rng_next(r) % (uint64_t)(hi - lo + 1));
}
