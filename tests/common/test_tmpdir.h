/* Removing a test's temporary folder (made with mkdtemp) with all it holds. */
#ifndef SEQCL_TEST_TMPDIR_H
#define SEQCL_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

/* rm -rf dir: what the test left there may be any tree (the program cache's
 * folders, checkpoints). dir must hold no single quote (a mkdtemp name does
 * not). 0 when it is gone, -1 otherwise. */
static inline int test_remove_tree(const char *dir) {
  char cmd[600];
  if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) >= (int)sizeof cmd) return -1;
  return system(cmd) == 0 ? 0 : -1;
}

#endif
