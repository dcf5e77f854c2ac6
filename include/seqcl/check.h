/* The op list from programs: `seqcl check` one op at a time, and one op run on
 * the caller's own inputs (to compare a single operation with another
 * framework's). Include <seqcl/seqcl.h>. */
#ifndef SEQCL_CHECK_H
#define SEQCL_CHECK_H

#include <stddef.h>

#include "device.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The operations of `seqcl check`, in its order; NULL for i >= the count. */
size_t seqcl_op_count(void);
const char *seqcl_op_name(size_t i);
/* The op's tolerance and why (one or two sentences). */
const char *seqcl_op_tolerance(size_t i);
/* Its shapes as "key=value,..." texts; NULL for k past the end. quick = 1:
 * the self-check's subset. */
const char *seqcl_op_shape(size_t i, int quick, size_t k);

/* One row of `seqcl check`. */
typedef struct seqcl_check_row {
  char op[48];
  int cases, passed, failed, skipped;
  int verdict;             /* 0 passed, 1 failed, 2 skipped */
  double worst_err, worst_tol, worst_ratio;
  char worst_shape[160];   /* the shape of the worst (or first failing) case */
  char fail_shape[160];    /* the first failing shape, "" if none */
  char message[512];       /* that case's message */
} seqcl_check_row;

/* Runs op (a name of the list) on dev at its shapes (only shape when not NULL,
 * the quick subset when quick) against host, a context on the host path
 * ("cpu"; passing dev itself when it is the host checks guard regions, NaN/Inf
 * and the hand-computed values). A failing case is a row with verdict 1, not a
 * failed call; an unknown op, a malformed shape or a host that is not the host
 * path is SEQCL_ERR_INVALID_ARGUMENT. */
seqcl_status seqcl_check_run(seqcl_ctx *dev, seqcl_ctx *host, const char *op, const char *shape,
                             int quick, unsigned long long seed, seqcl_check_row *out);

/* ---- one op on the caller's inputs ---- */

/* A case of an op at a shape: its inputs drawn from seed (uniform in [-1, 1],
 * never 0; lengths and ids valid), to be overwritten by the caller. */
typedef struct seqcl_op_case seqcl_op_case;

typedef struct seqcl_op_tensor {
  const char *name;
  size_t count;  /* elements (row-major; the op's shape keys give the dims) */
  int is_int;    /* int32 when 1, else float32 */
  void *data;    /* inputs: the case's own values, writable; outputs: NULL */
} seqcl_op_tensor;

seqcl_status seqcl_op_case_new(const char *op, const char *shape, unsigned long long seed,
                               seqcl_op_case **out);
void seqcl_op_case_free(seqcl_op_case *c); /* accepts NULL */
int seqcl_op_case_inputs(const seqcl_op_case *c);
int seqcl_op_case_outputs(const seqcl_op_case *c);
/* k-th input / output; SEQCL_ERR_INVALID_ARGUMENT for k out of range. */
seqcl_status seqcl_op_case_input(seqcl_op_case *c, int k, seqcl_op_tensor *out);
seqcl_status seqcl_op_case_output(const seqcl_op_case *c, int k, seqcl_op_tensor *out);
/* Runs the case on ctx; outputs[k] receives output k (its count of values,
 * as doubles). The op's front checks shapes, lengths and ids first
 * (SEQCL_ERR_SHAPE / SEQCL_ERR_INVALID_ARGUMENT); a write outside an output or
 * into an input is SEQCL_ERR_CHECK_FAILED naming the buffer. */
seqcl_status seqcl_op_case_run(seqcl_ctx *ctx, const seqcl_op_case *c, double *const *outputs);

#ifdef __cplusplus
}
#endif
#endif
