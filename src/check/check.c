/* Running cases and ops against a reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/arena.h"
#include "check/oplist.h"
#include "core/error.h"

static void free_arrays(double **a, int n) {
  for (int k = 0; k < n; k++) free(a[k]);
}

static int alloc_arrays(const sq_case *c, double **a) {
  for (int k = 0; k < c->n_out; k++) {
    a[k] = calloc(c->out[k].n ? c->out[k].n : 1, sizeof(double));
    if (!a[k]) return -1;
  }
  return 0;
}

seqcl_status sq_case_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                         size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx, got, fault, cap);
  seqcl_status st = c->op->run(&a, c);
  sq_arena_release(&a);
  return st;
}

static seqcl_status host_reference(void *user, const sq_case *c, double *const *ref) {
  seqcl_ctx *host = user;
  char fault[256] = "";
  SQ_TRY(sq_case_run(host, c, ref, fault, sizeof fault));
  if (*fault)
    return sq_fail(host, SEQCL_ERR_CHECK_FAILED, "the host reference itself failed: %s", fault);
  return SEQCL_OK;
}

sq_reference sq_reference_host(seqcl_ctx *host) {
  sq_reference r = {host_reference, host, 1, "host"};
  return r;
}

seqcl_status sq_check_case(seqcl_ctx *dev, const sq_op *op, const char *shape_text, uint64_t seed,
                           const sq_reference *ref, sq_case_result *res) {
  memset(res, 0, sizeof *res);
  sq_case c;
  SQ_TRY(sq_case_make(op, shape_text, seed, &c));
  double *got[SQ_CASE_MAX_OUT] = {0}, *want[SQ_CASE_MAX_OUT] = {0};
  if (alloc_arrays(&c, got) || alloc_arrays(&c, want)) {
    free_arrays(got, c.n_out);
    free_arrays(want, c.n_out);
    sq_case_free(&c);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory for %s %s",
                   op->name, shape_text);
  }
  char fault[256] = "";
  seqcl_status st = sq_case_run(dev, &c, got, fault, sizeof fault);
  if (st == SEQCL_ERR_UNSUPPORTED) {
    res->verdict = SQ_SKIP;
    snprintf(res->message, sizeof res->message, "not supported: %s", seqcl_last_message());
  } else if (st != SEQCL_OK) {
    res->verdict = SQ_FAIL;
    snprintf(res->message, sizeof res->message, "%s: %s", seqcl_status_name(st),
             seqcl_last_message());
  } else if (*fault) {
    res->verdict = SQ_FAIL;
    snprintf(res->message, sizeof res->message, "guard region: %s", fault);
  } else {
    int need_ref = 0;
    for (int k = 0; k < c.n_out; k++) need_ref |= c.expect[k] == NULL;
    st = need_ref ? ref->fn(ref->user, &c, want) : SEQCL_OK;
    if (st != SEQCL_OK) {
      res->verdict = SQ_FAIL;
      snprintf(res->message, sizeof res->message, "reference (%s) failed: %s: %s", ref->name,
               seqcl_status_name(st), seqcl_last_message());
    } else {
      double *use[SQ_CASE_MAX_OUT];
      for (int k = 0; k < c.n_out; k++) use[k] = c.expect[k] ? c.expect[k] : want[k];
      sq_compare(&c, got, use, need_ref && ref->is_float ? 2.0 : 1.0, res);
    }
  }
  free_arrays(got, c.n_out);
  free_arrays(want, c.n_out);
  sq_case_free(&c);
  return SEQCL_OK;
}

seqcl_status sq_check_op(seqcl_ctx *dev, const sq_op *op, const char *only_shape, int quick,
                         uint64_t seed, const sq_reference *ref, sq_op_result *res) {
  memset(res, 0, sizeof *res);
  res->op = op;
  const char *single[2] = {only_shape, NULL};
  const char *const *shapes = only_shape ? single : (quick && op->quick ? op->quick : op->shapes);
  for (size_t i = 0; shapes[i]; i++) {
    sq_case_result r;
    SQ_TRY(sq_check_case(dev, op, shapes[i], seed, ref, &r));
    res->cases++;
    if (r.verdict == SQ_PASS) res->passed++;
    if (r.verdict == SQ_SKIP) res->skipped++;
    if (r.verdict == SQ_FAIL) {
      res->failed++;
      if (!res->fail_shape[0]) {
        snprintf(res->fail_shape, sizeof res->fail_shape, "%s", shapes[i]);
        snprintf(res->message, sizeof res->message, "%s", r.message);
      }
    } else if (r.verdict == SQ_SKIP && !res->message[0]) {
      snprintf(res->message, sizeof res->message, "%s", r.message);
    }
    if (r.verdict != SQ_SKIP &&
        (r.worst_ratio > res->worst_ratio || (!res->worst_shape[0] && r.verdict == SQ_PASS))) {
      res->worst_ratio = r.worst_ratio;
      res->worst_err = r.worst_err;
      res->worst_tol = r.worst_tol;
      snprintf(res->worst_shape, sizeof res->worst_shape, "%s", shapes[i]);
    }
  }
  res->verdict = res->failed ? SQ_FAIL : (res->skipped == res->cases ? SQ_SKIP : SQ_PASS);
  return SEQCL_OK;
}
