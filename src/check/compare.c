/* Comparing one case's outputs with its reference (benchdnn-style verdicts). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>

#include "check/oplist.h"
#include "core/error.h"

static void fail_once(sq_case_result *res, const char *fmt, ...) SQ_PRINTF(2, 3);
static void fail_once(sq_case_result *res, const char *fmt, ...) {
  if (res->verdict == SQ_FAIL) return; /* keep the first reason */
  res->verdict = SQ_FAIL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->message, sizeof res->message, fmt, ap);
  va_end(ap);
}

static void note_worst(sq_case_result *res, double err, double tol) {
  double ratio = tol > 0 ? err / tol : (err > 0 ? INFINITY : 0);
  /* Among equal ratios (all exact, say) keep the largest tolerance: it tells
   * the reader how much room there was. */
  if (ratio > res->worst_ratio || (ratio == res->worst_ratio && !isinf(tol) && tol > res->worst_tol)) {
    res->worst_ratio = ratio;
    res->worst_err = err;
    res->worst_tol = tol;
  }
}

static void compare_output(const sq_case *c, int k, const double *got, const double *ref,
                           const double *tol, double scale, sq_case_result *res,
                           const char *against) {
  const sq_output *o = &c->out[k];
  /* Element failures are collected apart so that a mostly-zero output is
   * reported as such rather than as its first wrong element. */
  sq_case_result elem = *res;
  elem.verdict = SQ_PASS;
  size_t nonzero_ref = 0, zero_got = 0;
  double d2 = 0, r2 = 0;
  for (size_t e = 0; e < o->n; e++) {
    double g = got[e], r = ref[e], t = tol[e] * scale;
    if (!isfinite(r)) {
      if (!(g == r || (isnan(g) && isnan(r))))
        fail_once(&elem, "%s[%zu]: got %.9g where the %s is %.9g", o->name, e, g, against, r);
      continue;
    }
    if (!isfinite(g)) {
      fail_once(&elem, "%s[%zu]: got non-finite %.9g where the %s is %.9g", o->name, e, g, against,
                r);
      note_worst(&elem, INFINITY, t);
      continue;
    }
    if (isinf(t)) continue; /* a don't-care position: finite is all that is asked */
    double err = fabs(g - r);
    note_worst(&elem, err, t);
    if (t == 0 ? err != 0 : err > t)
      fail_once(&elem, "%s[%zu]: got %.9g, %s %.9g, |diff| %.3g > tolerance %.3g%s", o->name, e, g,
                against, r, err, t, t == 0 ? " (must be exact)" : "");
    if (fabs(r) > 1e-30) {
      nonzero_ref++;
      if (g == 0) zero_got++;
    }
    d2 += (g - r) * (g - r);
    r2 += r * r;
  }
  if (nonzero_ref >= 4 && 2 * zero_got > nonzero_ref)
    fail_once(res, "%s: %zu of %zu values are 0 where the %s is not (mistrusted result)", o->name,
              zero_got, nonzero_ref, against);
  res->worst_ratio = elem.worst_ratio;
  res->worst_err = elem.worst_err;
  res->worst_tol = elem.worst_tol;
  if (elem.verdict == SQ_FAIL) fail_once(res, "%.500s", elem.message);
  double l2 = c->op->l2_tol ? c->op->l2_tol(c, k) * scale : 0;
  if (l2 > 0 && r2 > 0 && sqrt(d2 / r2) > l2)
    fail_once(res, "%s: normalised L2 error %.3g > bound %.3g", o->name, sqrt(d2 / r2), l2);
}

void sq_compare(const sq_case *c, double *const *got, double *const *ref, double tol_scale,
                sq_case_result *res) {
  for (int k = 0; k < c->n_out; k++) {
    const sq_output *o = &c->out[k];
    double *tol = malloc((o->n ? o->n : 1) * sizeof *tol);
    if (!tol) {
      fail_once(res, "out of host memory comparing %s", o->name);
      return;
    }
    c->op->tol(c, k, ref, tol);
    compare_output(c, k, got[k], ref[k], tol, tol_scale, res, "reference");
    /* A twin (the unfused composition of a fused op) must agree with its
     * partner within the same tolerance, on the device itself. */
    if (o->twin >= 0 && o->twin < k && c->out[o->twin].n == o->n) {
      sq_case_result twin = *res;
      twin.verdict = SQ_PASS;
      compare_output(c, k, got[k], got[o->twin], tol, tol_scale, &twin,
                     c->out[o->twin].name);
      if (twin.verdict == SQ_FAIL && res->verdict != SQ_FAIL) {
        res->verdict = SQ_FAIL;
        snprintf(res->message, sizeof res->message, "fused vs unfused: %.480s", twin.message);
      }
    }
    free(tol);
  }
}
