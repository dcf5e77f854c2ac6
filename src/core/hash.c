/* FNV-1a (see hash.h). */
#include "core/hash.h"

#define FNV_PRIME 0x100000001b3ull

uint64_t sq_hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
  return h;
}

uint64_t sq_hash_str(uint64_t h, const char *s) {
  if (!h) h = SQ_HASH_INIT;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * FNV_PRIME;
  return h;
}

void sq_hash128_init(sq_hash128 *h) {
  h->a = SQ_HASH_INIT;
  h->b = 0x84222325cbf29ce4ull;
}

void sq_hash128_bytes(sq_hash128 *h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h->a = (h->a ^ p[i]) * FNV_PRIME;
    h->b = (h->b ^ (unsigned char)(p[i] + 0x5b)) * FNV_PRIME;
  }
}
