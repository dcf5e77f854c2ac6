/* seqcl check: the cross-vendor correctness suite. Runs the op list on each
 * selected device; OpenCL devices are compared with the host backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/oplist.h"
#include "check/report.h"
#include "check/selfcheck.h"
#include "cli.h"
#include "core/ctx.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl check [--device SEL] [--seed N] [--json FILE] [--op NAME] [--shape SHAPE]\n"
          "                   [--quick] [--list]\n\n"
          "Runs every operation at many shapes on each selected device and compares it with\n"
          "the host backend; prints device x operation with the worst error and tolerance.\n"
          "Exit status 0 only if everything passed (1: a failure, 2: bad usage).\n\n"
          "  --device SEL   devices to check (default: SEQCL_DEVICE, else all)\n"
          "  --seed N       seed of the random inputs (default 0)\n"
          "  --json FILE    also write the results as JSON\n"
          "  --op NAME      one operation, or a family such as attn_fused\n"
          "  --shape SHAPE  one shape (KEY=N,...; needs --op), as printed by a failure\n"
          "  --quick        only the quick subset of shapes\n"
          "  --list         list the operations, their shapes and tolerances, and exit\n");
}

static void list_ops(void) {
  size_t n;
  const sq_op *const *ops = sq_op_list(&n);
  for (size_t i = 0; i < n; i++) {
    printf("%s\n  tolerance: %s\n  shapes:", ops[i]->name, ops[i]->tolerance);
    for (size_t k = 0; ops[i]->shapes[k]; k++) printf(" %s", ops[i]->shapes[k]);
    printf("\n");
  }
}

typedef struct check_opts {
  const char *device, *json, *op, *shape;
  uint64_t seed;
  int quick;
} check_opts;

/* 1 when some listed shape of op uses key: the keys an op reads are exactly
 * those its shape list spells out. */
static int op_knows_key(const sq_op *op, const char *key) {
  for (size_t k = 0; op->shapes[k]; k++) {
    sq_shape sh;
    if (sq_shape_parse(op->shapes[k], &sh) != 0) continue;
    for (int i = 0; i < sh.n; i++)
      if (!strcmp(sh.key[i], key)) return 1;
  }
  return 0;
}

/* A key no selected operation reads (--shape Q=3) would be ignored silently. */
static int check_shape_keys(const char *shape, const char *opname) {
  sq_shape sh;
  if (sq_shape_parse(shape, &sh) != 0) return CLI_OK; /* sq_case_make reports it */
  size_t n;
  const sq_op *const *ops = sq_op_list(&n);
  for (size_t i = 0; i < n; i++) {
    if (!sq_op_matches(ops[i], opname)) continue;
    for (int k = 0; k < sh.n; k++)
      if (!op_knows_key(ops[i], sh.key[k])) {
        fprintf(stderr, "seqcl check: --shape %s: %s has no key '%s'; its shapes are:", shape,
                ops[i]->name, sh.key[k]);
        for (size_t j = 0; ops[i]->shapes[j]; j++) fprintf(stderr, " %s", ops[i]->shapes[j]);
        fputc('\n', stderr);
        return CLI_USAGE;
      }
  }
  return CLI_OK;
}

static int parse(int argc, char **argv, check_opts *o, int *done) {
  *done = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (cli_is_help(a)) {
      help(stdout);
      *done = 1;
      return CLI_OK;
    } else if (!strcmp(a, "--list")) {
      list_ops();
      *done = 1;
      return CLI_OK;
    } else if (!strcmp(a, "--quick")) {
      o->quick = 1;
    } else if (!strcmp(a, "--device") || !strcmp(a, "--json") || !strcmp(a, "--op") ||
               !strcmp(a, "--shape") || !strcmp(a, "--seed")) {
      if (!has_value) return cli_usage_error("check", "%s needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--device")) o->device = v;
      if (!strcmp(a, "--json")) o->json = v;
      if (!strcmp(a, "--op")) o->op = v;
      if (!strcmp(a, "--shape")) o->shape = v;
      if (!strcmp(a, "--seed")) {
        long seed;
        if (cli_long("check", a, v, 0, 0x7fffffffL, &seed)) return CLI_USAGE;
        o->seed = (uint64_t)seed;
      }
    } else {
      return cli_usage_error("check", "unknown option '%s' (see seqcl check --help)", a);
    }
  }
  if (o->shape && !o->op) return cli_usage_error("check", "--shape needs --op");
  if (o->op) {
    size_t n, hits = 0;
    const sq_op *const *ops = sq_op_list(&n);
    for (size_t i = 0; i < n; i++) hits += sq_op_matches(ops[i], o->op);
    if (!hits) {
      fprintf(stderr, "seqcl check: unknown operation '%s'; the operations are:", o->op);
      for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", ops[i]->name);
      fputc('\n', stderr);
      return CLI_USAGE;
    }
    if (o->shape && check_shape_keys(o->shape, o->op)) return CLI_USAGE;
    /* A malformed --shape is bad usage: find out before any device runs. */
    for (size_t i = 0; o->shape && i < n; i++) {
      if (!sq_op_matches(ops[i], o->op)) continue;
      sq_case c;
      seqcl_status st = sq_case_make(ops[i], o->shape, o->seed, &c);
      if (st != SEQCL_OK) return cli_fail("check", st);
      sq_case_free(&c);
    }
  }
  return CLI_OK;
}

/* Runs the selected ops on one device; returns CLI_USAGE for a malformed --shape. */
static int check_device(const check_opts *o, seqcl_ctx *dev, const sq_reference *ref,
                        sq_report *rep) {
  size_t n;
  const sq_op *const *ops = sq_op_list(&n);
  for (size_t i = 0; i < n; i++) {
    if (!sq_op_matches(ops[i], o->op)) continue;
    sq_op_result res;
    seqcl_status st = sq_check_op(dev, ops[i], o->shape, o->quick, o->seed, ref, &res);
    if (st != SEQCL_OK) return cli_fail("check", st);
    sq_report_row(rep, stdout, seqcl_ctx_device(dev), &res);
  }
  return CLI_OK;
}

int cmd_check(int argc, char **argv) {
  check_opts o = {0};
  int done = 0, rc = parse(argc, argv, &o, &done);
  if (rc != CLI_OK || done) return rc;
  if ((rc = cli_check_outputs("check", "--json", o.json, NULL))) return rc;
  /* This command runs the whole list itself: opening a device must not also
   * run the first-use self-check. */
  sq_selfcheck_suppress(1);
  const char *sel = o.device ? o.device : (seqcl_device_env() ? seqcl_device_env() : "all");
  seqcl_device_info *devs = NULL, *hosts = NULL;
  size_t ndev = 0, nhost = 0;
  seqcl_status st = seqcl_devices_select(sel, &devs, &ndev);
  if (st != SEQCL_OK) return cli_fail_device("check", st, o.device);
  seqcl_ctx *host = NULL;
  st = seqcl_devices_select("cpu", &hosts, &nhost);
  if (st == SEQCL_OK) st = seqcl_ctx_open_info(&hosts[0], &host);
  seqcl_devices_free(hosts);
  sq_report *rep = NULL;
  if (st == SEQCL_OK) st = sq_report_new(o.seed, o.quick, &rep);
  if (st != SEQCL_OK) {
    seqcl_ctx_close(host);
    seqcl_devices_free(devs);
    return cli_fail("check", st);
  }
  sq_reference ref = sq_reference_host(host);
  printf("seqcl check %s, seed %llu%s: OpenCL devices against the host backend (tolerances\n"
         "doubled: both sides are float32); the host's own rows check guard regions, NaN/Inf\n"
         "and the hand-computed seed-000 values (its accuracy against a double-precision\n"
         "oracle is covered by the test suite).\n\n",
         seqcl_version(), (unsigned long long)o.seed, o.quick ? ", quick" : "");
  sq_report_header(rep, stdout);
  rc = CLI_OK;
  for (size_t d = 0; d < ndev && rc == CLI_OK; d++) {
    seqcl_ctx *dev = NULL;
    if (devs[d].type == SEQCL_DEVICE_HOST) {
      dev = host;
    } else if ((st = seqcl_ctx_open_info(&devs[d], &dev)) != SEQCL_OK) {
      sq_report_device_error(rep, stdout, &devs[d], seqcl_last_message());
      continue;
    }
    sq_report_device(rep, &devs[d], devs[d].type == SEQCL_DEVICE_HOST ? "self" : "host");
    rc = check_device(&o, dev, &ref, rep);
    if (dev != host) seqcl_ctx_close(dev);
  }
  if (rc == CLI_OK) {
    sq_report_summary(rep, stdout);
    if (o.json && (st = sq_report_write_json(rep, o.json)) != SEQCL_OK) rc = cli_fail_output("check", st);
    if (rc == CLI_OK && sq_report_failed(rep)) rc = CLI_RUNTIME;
  }
  sq_report_free(rep);
  seqcl_ctx_close(host);
  seqcl_devices_free(devs);
  return rc;
}
