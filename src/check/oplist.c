/* The table of the op list, expanded from oplist.def. */
#include <string.h>

#include "check/ops_all.h"

static const sq_op *const sq_ops[] = {
#define SQ_OP(sym) &sq_op_##sym,
#include "check/oplist.def"
#undef SQ_OP
};

const sq_op *const *sq_op_list(size_t *count) {
  *count = sizeof sq_ops / sizeof sq_ops[0];
  return sq_ops;
}

const sq_op *sq_op_find(const char *name) {
  size_t n;
  const sq_op *const *ops = sq_op_list(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, name)) return ops[i];
  return NULL;
}

int sq_op_matches(const sq_op *op, const char *pattern) {
  if (!pattern || !*pattern || !strcmp(op->name, pattern)) return 1;
  size_t n = strlen(pattern);
  return !strncmp(op->name, pattern, n) && op->name[n] == '.';
}
