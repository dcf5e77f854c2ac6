/* The one list of operations that both the cmocka suite and `seqcl check` run.
 *
 * Each entry declares an operation once: its name, the shapes it is checked at
 * (and a quick subset), how to draw valid random inputs for a shape, how to run
 * it on a context through the src/ops fronts (every output surrounded by guard
 * regions), and the tolerance of every output element with the reason. The
 * reference is not part of the entry: `seqcl check` and the self-check run the
 * same entry on the host backend, the tests plug in the double-precision oracle.
 *
 * A shape is a text "key=value,key=value" (N=3,S=7,H=13,rev=1); its keys are
 * the entry's own. The same (op, shape, seed) always draws the same inputs, so
 * `seqcl check --op NAME --shape SHAPE --seed N` reproduces a failure. */
#ifndef SQ_CHECK_OPLIST_H
#define SQ_CHECK_OPLIST_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/hash.h" /* sq_hash_str: seeds and cache keys */
#include "core/ctx.h"

/* ---- shapes ---- */
#define SQ_SHAPE_MAX_KEYS 16
typedef struct sq_shape {
  int n;
  char key[SQ_SHAPE_MAX_KEYS][8];
  double val[SQ_SHAPE_MAX_KEYS];
} sq_shape;

/* 0 on success, -1 when text is not "key=number[,key=number...]". */
int sq_shape_parse(const char *text, sq_shape *out);
double sq_shape_get(const sq_shape *s, const char *key, double dflt);
int sq_shape_int(const sq_shape *s, const char *key, int dflt);

/* ---- random numbers (splitmix64: tiny, seedable, identical everywhere) ---- */
typedef struct sq_rng {
  uint64_t state;
} sq_rng;
void sq_rng_seed(sq_rng *r, uint64_t seed);
uint64_t sq_rng_next(sq_rng *r);
/* Uniform in [-1, 1], never within 1/256 of 0 (inputs are never zeros). */
float sq_rng_unit(sq_rng *r);
/* Uniform integer in [lo, hi]. */
int sq_rng_int(sq_rng *r, int lo, int hi);

/* ---- cases ---- */
#define SQ_CASE_MAX_IN 24
#define SQ_CASE_MAX_OUT 8

typedef struct sq_tensor {
  const char *name;
  size_t n;
  int is_int;
  float *f;   /* when !is_int */
  int32_t *i; /* when is_int */
} sq_tensor;

typedef struct sq_output {
  const char *name;
  size_t n;
  int is_int;
  int twin; /* -1, or the index of an earlier output this one must also agree with */
} sq_output;

struct sq_op;
struct sq_arena;

typedef struct sq_case {
  const struct sq_op *op;
  sq_shape shape;
  char shape_text[160];
  uint64_t seed;
  int n_in;
  sq_tensor in[SQ_CASE_MAX_IN];
  int n_out;
  sq_output out[SQ_CASE_MAX_OUT];
  /* Hand-computed reference values (seed 000); NULL where the reference decides. */
  double *expect[SQ_CASE_MAX_OUT];
} sq_case;

/* Builders used by the entries' gen functions; NULL / -1 on out of memory. */
float *sq_case_f(sq_case *c, const char *name, size_t n);
int32_t *sq_case_i(sq_case *c, const char *name, size_t n);
int sq_case_out(sq_case *c, const char *name, size_t n, int is_int);
double *sq_case_expect(sq_case *c, int out);
/* The input called name, or NULL when absent (optional inputs are simply left out). */
const sq_tensor *sq_case_in(const sq_case *c, const char *name);
const float *sq_case_inf(const sq_case *c, const char *name);
const int32_t *sq_case_ini(const sq_case *c, const char *name);
void sq_case_free(sq_case *c);

/* ---- the entries ---- */
typedef struct sq_op {
  const char *name;
  /* The tolerance of every output and why, in one or two sentences. */
  const char *tolerance;
  const char *const *shapes; /* NULL-terminated: the full list */
  const char *const *quick;  /* NULL-terminated: the --quick / self-check subset */
  int variant;               /* lets one function serve several entries */
  /* Draws valid inputs for c->shape and declares the outputs. */
  seqcl_status (*gen)(sq_case *c, sq_rng *rng);
  /* Runs the operation on the arena's context, its buffers taken from the
   * arena (which the runner opens and releases around the call); the arena's
   * got[k] receives output k (out[k].n values). A guard-region write or a
   * modified input is described in the arena's fault (status OK). */
  seqcl_status (*run)(struct sq_arena *a, const sq_case *c);
  /* Per element absolute tolerance of output k given the reference outputs:
   * 0 = must match exactly, INFINITY = any finite value (a don't-care position). */
  void (*tol)(const sq_case *c, int k, double *const *ref, double *tol);
  /* Optional bound on ||got - ref||_2 / ||ref||_2 of output k (0 = none). */
  double (*l2_tol)(const sq_case *c, int k);
} sq_op;

/* The four entries of one attention check, one per score kind (the kind is
 * the variant): NAME.additive, NAME.general, NAME.dot and NAME.scaled_dot,
 * each with its tolerance text, shapes and quick subset (the two dot kinds
 * share theirs). */
#define SQ_SCORE_OPS(var, name, gen, run, tol, add_tol, add_shapes, add_quick, gen_tol,        \
                     gen_shapes, gen_quick, dot_tol, dot_shapes, dot_quick)                    \
  const sq_op var##_additive = {name ".additive", add_tol, add_shapes, add_quick,            \
                                SQ_SCORE_ADDITIVE, gen, run, tol, NULL};                     \
  const sq_op var##_general = {name ".general", gen_tol, gen_shapes, gen_quick,              \
                               SQ_SCORE_GENERAL, gen, run, tol, NULL};                       \
  const sq_op var##_dot = {name ".dot", dot_tol, dot_shapes, dot_quick, SQ_SCORE_DOT,        \
                           gen, run, tol, NULL};                                             \
  const sq_op var##_scaled_dot = {name ".scaled_dot", dot_tol, dot_shapes, dot_quick,        \
                                  SQ_SCORE_SCALED_DOT, gen, run, tol, NULL}

/* The list (oplist.def), in table order. */
const sq_op *const *sq_op_list(size_t *count);
/* The entry named name, else NULL. */
const sq_op *sq_op_find(const char *name);
/* 1 when pattern selects op: the exact name, or the family before '.' ("attn_scores"). */
int sq_op_matches(const sq_op *op, const char *pattern);

/* Builds the case of (op, shape text, seed): parses, seeds and calls gen.
 * SEQCL_ERR_INVALID_ARGUMENT for a malformed shape. */
seqcl_status sq_case_make(const sq_op *op, const char *shape_text, uint64_t seed, sq_case *c);

/* Runs the case's op on ctx in an arena of its own (the guarded buffers);
 * got[k] receives output k. A guard or input fault is described in fault. */
seqcl_status sq_case_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                         size_t cap);

/* ---- references and results ---- */
/* Fills ref[k] (c->out[k].n values each) with the reference outputs of the case. */
typedef seqcl_status (*sq_reference_fn)(void *user, const sq_case *c, double *const *ref);

typedef struct sq_reference {
  sq_reference_fn fn;
  void *user;
  /* 1 when the reference itself is float32 (the host backend): both sides may
   * then be off by a tolerance in opposite directions, so tolerances double. */
  int is_float;
  const char *name; /* "host", "oracle" */
} sq_reference;

/* The host backend as the reference (host must be a host-path context). */
sq_reference sq_reference_host(seqcl_ctx *host);

typedef enum sq_verdict { SQ_PASS = 0, SQ_FAIL = 1, SQ_SKIP = 2 } sq_verdict;

typedef struct sq_case_result {
  sq_verdict verdict;
  double worst_err;   /* |got - ref| at the element with the largest err / tol */
  double worst_tol;   /* that element's tolerance */
  double worst_ratio; /* err / tol there (0 when everything is exact) */
  char message[512];  /* why it failed or was skipped */
} sq_case_result;

/* Compares got with ref for the whole case (NaN/Inf, exactness, tolerance, L2,
 * mostly-zero outputs, twin outputs). tol_scale multiplies every tolerance. */
void sq_compare(const sq_case *c, double *const *got, double *const *ref, double tol_scale,
                sq_case_result *res);

/* Runs one case on dev and checks it against ref. Returns non-OK only when the
 * case itself cannot be built (bad shape, out of host memory); a device failure
 * is a SQ_FAIL result, SEQCL_ERR_UNSUPPORTED a SQ_SKIP. */
seqcl_status sq_check_case(seqcl_ctx *dev, const sq_op *op, const char *shape_text, uint64_t seed,
                           const sq_reference *ref, sq_case_result *res);

typedef struct sq_op_result {
  const sq_op *op;
  int cases, passed, failed, skipped;
  sq_verdict verdict;     /* FAIL if any failed; SKIP if all skipped; else PASS */
  double worst_err, worst_tol, worst_ratio;
  char worst_shape[160];  /* the shape of the worst (or first failing) case */
  char fail_shape[160];   /* the first failing shape, "" if none */
  char message[512];      /* that case's message */
} sq_op_result;

/* Runs op on dev at its shapes (only_shape when not NULL, the quick subset when
 * quick) and aggregates. Returns non-OK only for a malformed only_shape. */
seqcl_status sq_check_op(seqcl_ctx *dev, const sq_op *op, const char *only_shape, int quick,
                         uint64_t seed, const sq_reference *ref, sq_op_result *res);

#endif
