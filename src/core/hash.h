/* The library's one hash: FNV-1a, 64-bit (http://www.isthe.com/chongo/tech/comp/fnv/).
 * Not cryptographic: it keys caches, seeds test cases, fingerprints training
 * data and spreads vocabulary words over a table. Values are part of on-disk
 * formats (program-cache names, checkpoints' data_hash): never change them. */
#ifndef SQ_CORE_HASH_H
#define SQ_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SQ_HASH_INIT 0xcbf29ce484222325ull /* FNV-1a offset basis */

/* Continues hash h over n bytes. */
uint64_t sq_hash_bytes(uint64_t h, const void *data, size_t n);
/* Continues h over a NUL-terminated string (without the terminator); h = 0
 * starts from SQ_HASH_INIT. */
uint64_t sq_hash_str(uint64_t h, const char *s);

/* Two FNV-1a streams with different seeds (the second over every byte + 0x5b):
 * a 128-bit key, for the program cache's file names and checksums. */
typedef struct sq_hash128 {
  uint64_t a, b;
} sq_hash128;
void sq_hash128_init(sq_hash128 *h);
void sq_hash128_bytes(sq_hash128 *h, const void *data, size_t n);

#endif
