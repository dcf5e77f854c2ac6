/* Small token files for the model tests: up to TEST_LINES_MAX lines of
 * decimal ids (TEST_LINES_TOKENS in all), read into fixed arrays, and their
 * seqcl_seqs view. Include after <cmocka.h>. */
#ifndef SEQCL_TEST_LINES_H
#define SEQCL_TEST_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <seqcl/seqcl.h>

#define TEST_LINES_TOKENS 512
#define TEST_LINES_MAX 16

typedef struct lines {
  int32_t ids[TEST_LINES_TOKENS];
  size_t off[TEST_LINES_MAX + 1];
  size_t n;
} lines;

/* Fails the test when path cannot be opened or holds more than fits. */
static inline void read_lines(const char *path, lines *l) {
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  char buf[1024];
  l->n = 0;
  l->off[0] = 0;
  size_t k = 0;
  while (fgets(buf, sizeof buf, f)) {
    if (l->n == TEST_LINES_MAX) fail_msg("%s: more than %d lines", path, TEST_LINES_MAX);
    char *p = buf, *end;
    for (long v; (v = strtol(p, &end, 10)), end != p; p = end) {
      if (k == TEST_LINES_TOKENS) fail_msg("%s: more than %d ids", path, TEST_LINES_TOKENS);
      l->ids[k++] = (int32_t)v;
    }
    l->off[++l->n] = k;
  }
  fclose(f);
}

static inline seqcl_seqs lines_view(const lines *l) {
  seqcl_seqs s = {l->n, l->ids, l->off};
  return s;
}

#endif
