/* The public face of the op list (include/seqcl/check.h): what `seqcl check`
 * prints, one op at a time, and one case run on the caller's inputs. The
 * host reference context comes from the caller, so nothing here opens a
 * device (that is the composition root's job). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/oplist.h"
#include "core/error.h"

struct seqcl_op_case {
  sq_case c;
};

size_t seqcl_op_count(void) {
  size_t n = 0;
  sq_op_list(&n);
  return n;
}

static const sq_op *op_at(size_t i) {
  size_t n = 0;
  const sq_op *const *ops = sq_op_list(&n);
  return i < n ? ops[i] : NULL;
}

const char *seqcl_op_name(size_t i) {
  const sq_op *op = op_at(i);
  return op ? op->name : NULL;
}

const char *seqcl_op_tolerance(size_t i) {
  const sq_op *op = op_at(i);
  return op ? op->tolerance : NULL;
}

const char *seqcl_op_shape(size_t i, int quick, size_t k) {
  const sq_op *op = op_at(i);
  if (!op) return NULL;
  const char *const *list = quick && op->quick ? op->quick : op->shapes;
  for (size_t j = 0; j < k; j++)
    if (!list[j]) return NULL;
  return list[k];
}

/* The entry called name; an unknown name lists every one. */
static seqcl_status find_op(const char *call, const char *name, const sq_op **out) {
  *out = name ? sq_op_find(name) : NULL;
  if (*out) return SEQCL_OK;
  char list[2048];
  size_t at = 0, n = 0;
  const sq_op *const *ops = sq_op_list(&n);
  list[0] = '\0';
  for (size_t i = 0; i < n && at < sizeof list; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", ops[i]->name);
  return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: unknown operation '%s'; the operations are: %s",
                 call, name ? name : "(null)", list);
}

seqcl_status seqcl_check_run(seqcl_ctx *dev, seqcl_ctx *host, const char *op, const char *shape,
                             int quick, unsigned long long seed, seqcl_check_row *out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_check_run: out is NULL");
  memset(out, 0, sizeof *out);
  if (!dev || !host)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_check_run: a context is NULL");
  if (seqcl_ctx_device(host)->type != SEQCL_DEVICE_HOST)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                   "seqcl_check_run: the reference context is on %s, not the host path (cpu)",
                   seqcl_ctx_device(host)->selector);
  const sq_op *entry = NULL;
  SQ_TRY(find_op("seqcl_check_run", op, &entry));
  if (shape) { /* a malformed shape is bad input, not a failing row */
    sq_case c;
    SQ_TRY(sq_case_make(entry, shape, seed, &c));
    sq_case_free(&c);
  }
  sq_reference ref = sq_reference_host(host);
  sq_op_result r;
  SQ_TRY(sq_check_op(dev, entry, shape, quick, seed, &ref, &r));
  snprintf(out->op, sizeof out->op, "%s", entry->name);
  out->cases = r.cases, out->passed = r.passed, out->failed = r.failed, out->skipped = r.skipped;
  out->verdict = (int)r.verdict;
  out->worst_err = r.worst_err, out->worst_tol = r.worst_tol, out->worst_ratio = r.worst_ratio;
  snprintf(out->worst_shape, sizeof out->worst_shape, "%s", r.worst_shape);
  snprintf(out->fail_shape, sizeof out->fail_shape, "%s", r.fail_shape);
  snprintf(out->message, sizeof out->message, "%s", r.message);
  return SEQCL_OK;
}

seqcl_status seqcl_op_case_new(const char *op, const char *shape, unsigned long long seed,
                               seqcl_op_case **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_op_case_new: out is NULL");
  *out = NULL;
  const sq_op *entry = NULL;
  SQ_TRY(find_op("seqcl_op_case_new", op, &entry));
  seqcl_op_case *c = calloc(1, sizeof *c);
  if (!c) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "seqcl_op_case_new: out of host memory");
  /* NULL: the op's first shape */
  seqcl_status st = sq_case_make(entry, shape ? shape : entry->shapes[0], seed, &c->c);
  if (st != SEQCL_OK) {
    free(c);
    return st;
  }
  *out = c;
  return SEQCL_OK;
}

void seqcl_op_case_free(seqcl_op_case *c) {
  if (!c) return;
  sq_case_free(&c->c);
  free(c);
}

int seqcl_op_case_inputs(const seqcl_op_case *c) { return c ? c->c.n_in : 0; }
int seqcl_op_case_outputs(const seqcl_op_case *c) { return c ? c->c.n_out : 0; }

seqcl_status seqcl_op_case_input(seqcl_op_case *c, int k, seqcl_op_tensor *out) {
  if (!c || !out || k < 0 || k >= c->c.n_in)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_op_case_input: no input %d", k);
  const sq_tensor *t = &c->c.in[k];
  out->name = t->name, out->count = t->n, out->is_int = t->is_int;
  out->data = t->is_int ? (void *)t->i : (void *)t->f;
  return SEQCL_OK;
}

seqcl_status seqcl_op_case_output(const seqcl_op_case *c, int k, seqcl_op_tensor *out) {
  if (!c || !out || k < 0 || k >= c->c.n_out)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_op_case_output: no output %d", k);
  const sq_output *o = &c->c.out[k];
  out->name = o->name, out->count = o->n, out->is_int = o->is_int, out->data = NULL;
  return SEQCL_OK;
}

seqcl_status seqcl_op_case_run(seqcl_ctx *ctx, const seqcl_op_case *c, double *const *outputs) {
  if (!ctx || !c || !outputs)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_op_case_run: NULL argument");
  for (int k = 0; k < c->c.n_out; k++)
    if (!outputs[k])
      return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_op_case_run: output %d (%s) is NULL",
                     k, c->c.out[k].name);
  char fault[256] = "";
  SQ_TRY(sq_case_run(ctx, &c->c, outputs, fault, sizeof fault));
  if (*fault)
    return sq_fail(ctx, SEQCL_ERR_CHECK_FAILED, "%s on %s: %s", c->c.op->name,
                   seqcl_ctx_device(ctx)->selector, fault);
  return SEQCL_OK;
}
