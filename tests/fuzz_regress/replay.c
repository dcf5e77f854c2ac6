/* Replays fuzz inputs through a fuzz target's entry point under the normal
 * build: every file of the seed corpus (first argument, must hold at least one
 * file) and of the regression folders that follow (may be missing or empty).
 * Each file is one cmocka test; a violated invariant traps, which cmocka
 * reports as a failure of that file's test. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fuzz_check.h"

typedef struct paths {
  char **items;
  size_t count, cap;
} paths;

static void add_path(paths *p, const char *dir, const char *name) {
  if (p->count == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 64;
    p->items = realloc(p->items, p->cap * sizeof *p->items);
    if (!p->items) abort();
  }
  size_t n = strlen(dir) + strlen(name) + 2;
  char *s = malloc(n);
  if (!s) abort();
  snprintf(s, n, "%s/%s", dir, name);
  p->items[p->count++] = s;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Regular files of dir, sorted, hidden ones skipped; the number found. */
static size_t collect(paths *p, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t before = p->count;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    struct stat sb;
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
    if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode)) add_path(p, dir, e->d_name);
  }
  closedir(d);
  qsort(p->items + before, p->count - before, sizeof *p->items, by_name);
  return p->count - before;
}

static void replay_one(void **state) {
  const char *path = *state;
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size >= 0);
  rewind(f);
  /* An exact-size heap copy, so ASan builds catch reads past the input. */
  uint8_t *data = malloc(size ? (size_t)size : 1);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  assert_int_equal(LLVMFuzzerTestOneInput(data, (size_t)size), 0);
  free(data);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR [REGRESSION_DIR...]\n", argv[0]);
    return 2;
  }
  paths p = {0};
  if (collect(&p, argv[1]) == 0) {
    fprintf(stderr, "%s: no seed inputs in %s\n", argv[0], argv[1]);
    return 1;
  }
  for (int i = 2; i < argc; i++) collect(&p, argv[i]);

  struct CMUnitTest *tests = calloc(p.count, sizeof *tests);
  if (!tests) return 1;
  for (size_t i = 0; i < p.count; i++) {
    tests[i].name = p.items[i];
    tests[i].test_func = replay_one;
    tests[i].initial_state = p.items[i];
  }
  int failed = _cmocka_run_group_tests("fuzz_replay", tests, p.count, NULL, NULL);
  for (size_t i = 0; i < p.count; i++) free(p.items[i]);
  free(p.items);
  free(tests);
  return failed ? 1 : 0;
}
