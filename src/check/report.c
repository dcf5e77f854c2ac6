#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/report.h"
#include "core/error.h"
#include "core/fileio.h"

struct sq_report {
  json_t *root, *devices, *results;
  int rows, failed, skipped;
  uint64_t seed;
  char *failures; /* the reproducer block, printed at the end */
  size_t failures_len;
};

seqcl_status sq_report_new(uint64_t seed, int quick, sq_report **out) {
  *out = NULL;
  sq_report *r = calloc(1, sizeof *r);
  if (!r) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
  r->seed = seed;
  r->root = json_object();
  r->devices = json_array();
  r->results = json_array();
  if (!r->root || !r->devices || !r->results) {
    sq_report_free(r);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
  }
  json_object_set_new(r->root, "seqcl_version", json_string(seqcl_version()));
  json_object_set_new(r->root, "seed", json_integer((json_int_t)seed));
  json_object_set_new(r->root, "quick", json_boolean(quick));
  json_object_set(r->root, "devices", r->devices);
  json_object_set(r->root, "results", r->results);
  *out = r;
  return SEQCL_OK;
}

void sq_report_free(sq_report *r) {
  if (!r) return;
  json_decref(r->devices);
  json_decref(r->results);
  json_decref(r->root);
  free(r->failures);
  free(r);
}

static void add_failure(sq_report *r, const char *fmt, ...) SQ_PRINTF(2, 3);
static void add_failure(sq_report *r, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = strlen(line);
  char *p = realloc(r->failures, r->failures_len + len + 1);
  if (!p) return;
  memcpy(p + r->failures_len, line, len + 1);
  r->failures = p;
  r->failures_len += len;
}

void sq_report_header(sq_report *r, FILE *f) {
  (void)r;
  fprintf(f, "%-12s %-24s %7s %11s %11s %7s  %s\n", "device", "operation", "cases", "worst |d|",
          "tolerance", "ratio", "result");
}

void sq_report_device(sq_report *r, const seqcl_device_info *dev, const char *reference) {
  json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "selector", dev->selector, "name",
                        dev->name, "platform", dev->platform, "driver_version",
                        dev->driver_version, "reference", reference, "opened", 1);
  if (d) json_array_append_new(r->devices, d);
}

void sq_report_device_error(sq_report *r, FILE *f, const seqcl_device_info *dev,
                            const char *message) {
  fprintf(f, "%-12s %-24s %7s %11s %11s %7s  FAIL\n", dev->selector, "(open)", "-", "-", "-",
          "-");
  r->rows++;
  r->failed++;
  json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s}", "selector", dev->selector, "name",
                        dev->name, "platform", dev->platform, "driver_version",
                        dev->driver_version, "opened", 0, "error", message);
  if (d) json_array_append_new(r->devices, d);
  add_failure(r, "%s: could not be opened: %s\n", dev->selector, message);
}

void sq_report_row(sq_report *r, FILE *f, const seqcl_device_info *dev, const sq_op_result *res) {
  const char *verdict = res->verdict == SQ_PASS ? "pass" : res->verdict == SQ_FAIL ? "FAIL" : "skip";
  char cases[32];
  if (res->failed || res->skipped)
    snprintf(cases, sizeof cases, "%d/%d", res->passed, res->cases);
  else
    snprintf(cases, sizeof cases, "%d", res->cases);
  fprintf(f, "%-12s %-24s %7s %11.3g %11.3g %7.3f  %s\n", dev->selector, res->op->name, cases,
          res->worst_err, res->worst_tol, res->worst_ratio, verdict);
  fflush(f);
  r->rows++;
  char repro[512] = "";
  if (res->verdict == SQ_FAIL) {
    r->failed++;
    snprintf(repro, sizeof repro, "seqcl check --device %s --op %s --shape %s --seed %llu",
             dev->selector, res->op->name, res->fail_shape, (unsigned long long)r->seed);
    add_failure(r, "%s %s (shape %s): %s\n  reproduce: %s\n", dev->selector, res->op->name,
                res->fail_shape, res->message, repro);
  } else if (res->verdict == SQ_SKIP) {
    r->skipped++;
  }
  json_t *row = json_pack(
      "{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:s, s:s, s:s, s:s, s:s}", "device",
      dev->selector, "operation", res->op->name, "result",
      res->verdict == SQ_PASS ? "pass" : res->verdict == SQ_FAIL ? "fail" : "skip", "cases",
      res->cases, "passed", res->passed, "failed", res->failed, "skipped", res->skipped,
      "worst_error", res->worst_err, "tolerance", res->worst_tol, "ratio",
      res->worst_ratio > 1e300 ? 1e300 : res->worst_ratio, "worst_shape", res->worst_shape,
      "failing_shape", res->fail_shape, "message", res->message, "reproducer", repro,
      "tolerance_rule", res->op->tolerance);
  if (row) json_array_append_new(r->results, row);
}

void sq_report_summary(sq_report *r, FILE *f) {
  if (r->failures_len) fprintf(f, "\nfailures:\n%s", r->failures);
  fprintf(f, "\n%d rows: %d passed, %d failed, %d skipped (not supported on that device)\n",
          r->rows, r->rows - r->failed - r->skipped, r->failed, r->skipped);
  json_object_set_new(r->root, "passed", json_boolean(r->failed == 0));
}

int sq_report_failed(const sq_report *r) { return r->failed; }

seqcl_status sq_report_write_json(sq_report *r, const char *path) {
  json_object_set_new(r->root, "passed", json_boolean(r->failed == 0));
  sq_outfile f;
  SQ_TRY(sq_outfile_open(path, &f));
  if (json_dumpf(r->root, f.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f.f) == EOF) {
    sq_outfile_abort(&f);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot write the JSON report", path);
  }
  return sq_outfile_commit(&f);
}
