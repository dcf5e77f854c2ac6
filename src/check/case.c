/* Cases: the named host inputs and declared outputs of one (op, shape, seed). */
#include <stdlib.h>
#include <string.h>

#include "check/oplist.h"
#include "core/error.h"

static sq_tensor *add_input(sq_case *c, const char *name, size_t n, int is_int) {
  if (c->n_in >= SQ_CASE_MAX_IN) return NULL;
  void *mem = calloc(n ? n : 1, 4);
  if (!mem) return NULL;
  sq_tensor *t = &c->in[c->n_in++];
  t->name = name;
  t->n = n;
  t->is_int = is_int;
  t->f = is_int ? NULL : (float *)mem;
  t->i = is_int ? (int32_t *)mem : NULL;
  return t;
}

float *sq_case_f(sq_case *c, const char *name, size_t n) {
  sq_tensor *t = add_input(c, name, n, 0);
  return t ? t->f : NULL;
}

int32_t *sq_case_i(sq_case *c, const char *name, size_t n) {
  sq_tensor *t = add_input(c, name, n, 1);
  return t ? t->i : NULL;
}

int sq_case_out(sq_case *c, const char *name, size_t n, int is_int) {
  if (c->n_out >= SQ_CASE_MAX_OUT) return -1;
  sq_output *o = &c->out[c->n_out];
  o->name = name;
  o->n = n;
  o->is_int = is_int;
  o->twin = -1;
  return c->n_out++;
}

double *sq_case_expect(sq_case *c, int out) {
  if (out < 0 || out >= c->n_out) return NULL;
  if (!c->expect[out]) c->expect[out] = calloc(c->out[out].n ? c->out[out].n : 1, sizeof(double));
  return c->expect[out];
}

const sq_tensor *sq_case_in(const sq_case *c, const char *name) {
  for (int i = 0; i < c->n_in; i++)
    if (!strcmp(c->in[i].name, name)) return &c->in[i];
  return NULL;
}

const float *sq_case_inf(const sq_case *c, const char *name) {
  const sq_tensor *t = sq_case_in(c, name);
  return t && !t->is_int ? t->f : NULL;
}

const int32_t *sq_case_ini(const sq_case *c, const char *name) {
  const sq_tensor *t = sq_case_in(c, name);
  return t && t->is_int ? t->i : NULL;
}

void sq_case_free(sq_case *c) {
  if (!c) return;
  for (int i = 0; i < c->n_in; i++) free(c->in[i].is_int ? (void *)c->in[i].i : (void *)c->in[i].f);
  for (int k = 0; k < SQ_CASE_MAX_OUT; k++) free(c->expect[k]);
  memset(c, 0, sizeof *c);
}

seqcl_status sq_case_make(const sq_op *op, const char *shape_text, uint64_t seed, sq_case *c) {
  memset(c, 0, sizeof *c);
  c->op = op;
  if (!shape_text || strlen(shape_text) >= sizeof c->shape_text ||
      sq_shape_parse(shape_text, &c->shape) != 0)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                   "shape '%s' of %s is malformed: expected KEY=NUMBER[,KEY=NUMBER...]",
                   shape_text ? shape_text : "(null)", op->name);
  strcpy(c->shape_text, shape_text);
  /* The case's own seed depends on the op and shape, so one case can be rerun alone. */
  c->seed = seed;
  uint64_t h = sq_hash_str(sq_hash_str(0, op->name), shape_text);
  sq_rng rng;
  sq_rng_seed(&rng, h ^ (seed * 0x9E3779B97F4A7C15ull));
  seqcl_status st = op->gen(c, &rng);
  if (st != SEQCL_OK) {
    sq_case_free(c);
    return st;
  }
  return SEQCL_OK;
}
