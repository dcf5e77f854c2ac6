/* Writing and reading training checkpoints (see checkpoint.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/fileio.h"
#include "model/safetensors.h"
#include "model/tokens.h"
#include "model/text.h"
#include "train/schedule.h"
#include "train/checkpoint.h"

static seqcl_status write_adam(seqcl_ctx *ctx, const char *path, const sq_tlayout *L,
                               const float *mv) {
  sq_st_out t[2 * SQ_TPARAM_MAX];
  char names[2 * SQ_TPARAM_MAX][80];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < L->nparams; i++) {
      const sq_tparam *p = &L->p[i];
      sq_st_out *o = &t[k * L->nparams + i];
      memset(o, 0, sizeof *o);
      snprintf(names[k * L->nparams + i], sizeof names[0], "%s.%s", k ? "exp_avg_sq" : "exp_avg",
               p->name);
      o->name = names[k * L->nparams + i];
      o->ndim = p->ndim;
      o->shape[0] = p->shape[0];
      o->shape[1] = p->shape[1];
      o->data = mv + (size_t)k * L->total + p->off;
    }
  seqcl_status st = sq_st_write(path, t, (size_t)(2 * L->nparams));
  if (st != SEQCL_OK) return sq_fail_wrap(ctx, st, "checkpoint");
  return SEQCL_OK;
}

seqcl_status sq_checkpoint_meta_to_json(seqcl_ctx *ctx, const sq_ckpt_meta *m, char **out) {
  *out = NULL;
  json_t *rng = json_array();
  for (int i = 0; i < 4; i++) {
    char hex[24];
    snprintf(hex, sizeof hex, "%016" PRIx64, m->epoch_rng[i]);
    json_array_append_new(rng, json_string(hex));
  }
  char seed[24], hash[24];
  snprintf(seed, sizeof seed, "%" PRIu64, m->seed);
  snprintf(hash, sizeof hash, "%016" PRIx64, m->data_hash);
  json_t *o = json_pack("{s:s, s:i, s:I, s:i, s:f, s:f, s:f, s:s, s:o, s:I, s:I, s:I, s:s}", "format",
                        "seqcl.checkpoint", "version", 1, "step", (json_int_t)m->step,
                        "batch_size", m->batch_size, "lr", m->lr, "clip", m->clip, "dropout",
                        m->dropout, "seed", seed,
                        "shuffle_state", rng, "epoch", (json_int_t)m->epoch, "cursor",
                        (json_int_t)m->cursor, "train_lines", (json_int_t)m->train_lines,
                        "data_hash", hash);
  if (o) {
    json_object_set_new(o, "task", json_string(m->task[0] ? m->task : "files"));
    json_object_set_new(o, "steps_total", json_integer((json_int_t)m->steps_total));
    json_object_set_new(o, "checkpoint_every", json_integer(m->checkpoint_every));
    json_object_set_new(o, "valid_every", json_integer(m->valid_every));
    if (m->length) json_object_set_new(o, "length", json_integer(m->length));
    if (m->text[0]) json_object_set_new(o, "text", json_string(m->text));
    /* the best value is +inf before the first validation: JSON has no
     * infinity, so it is left out then */
    json_t *sc = json_pack("{s:i, s:i, s:i, s:i, s:I, s:f, s:f, s:s, s:b, s:f, s:I, s:i, s:i, s:I}",
                           "warmup", m->warmup, "decay_patience", m->decay_patience, "patience",
                           m->patience, "bucket", m->bucket, "batch_tokens",
                           (json_int_t)m->batch_tokens, "lr_decay", m->lr_decay, "min_lr",
                           m->min_lr, "metric", m->metric[0] ? m->metric : "loss", "keep_best",
                           m->keep_best, "lr_scale", m->lr_scale, "best_step",
                           (json_int_t)m->best_step, "since_best", m->since_best, "since_decay",
                           m->since_decay, "adam_offset", (json_int_t)m->adam_offset);
    /* a meta that never had a schedule (zeroed) is one at its start */
    if (sc && !(m->lr_scale > 0)) json_object_set_new(sc, "lr_scale", json_real(1.0));
    if (sc && m->decay_patience < 1) json_object_set_new(sc, "decay_patience", json_integer(1));
    if (sc && isfinite(m->best) && m->best_step > 0)
      json_object_set_new(sc, "best", json_real(m->best));
    if (sc) json_object_set_new(o, "schedule", sc);
    const char *keys[4] = {"src", "tgt", "valid_src", "valid_tgt"};
    const char *vals[4] = {m->src, m->tgt, m->valid_src, m->valid_tgt};
    for (int i = 0; i < 4; i++)
      if (vals[i][0]) json_object_set_new(o, keys[i], json_string(vals[i]));
  }
  char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(o);
  if (!text) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: cannot format training.json");
  *out = text;
  return SEQCL_OK;
}

static seqcl_status write_meta(seqcl_ctx *ctx, const char *path, const sq_ckpt_meta *m) {
  char *text = NULL;
  SQ_TRY(sq_checkpoint_meta_to_json(ctx, m, &text));
  seqcl_status st = sq_file_write_line(ctx, path, text, "checkpoint");
  free(text);
  return st;
}

seqcl_status sq_checkpoint_write(seqcl_ctx *ctx, const char *save_dir, const sq_tlayout *L,
                                 const float *params, const float *adam_mv,
                                 const sq_ckpt_meta *meta) {
  if (mkdir(save_dir, 0755) != 0 && errno != EEXIST)
    return sq_fail(ctx, SEQCL_ERR_IO, "checkpoint: cannot create %s: %s", save_dir,
                   strerror(errno));
  char *final = sq_path_join(save_dir, "checkpoint");
  char *tmp = NULL, *adam = NULL, *json = NULL;
  seqcl_status st = SEQCL_OK;
  if (!final) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
  /* Written whole into a fresh folder next to the old checkpoint, then swapped
   * in: a crash at any point leaves the old checkpoint or the new one. */
  st = sq_dir_make_temp(final, &tmp);
  if (st != SEQCL_OK) st = sq_fail_wrap(ctx, st, "checkpoint");
  if (st == SEQCL_OK) {
    adam = sq_path_join(tmp, "optimizer.safetensors");
    json = sq_path_join(tmp, "training.json");
    if (!adam || !json) st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
  }
  if (st == SEQCL_OK) st = sq_tlayout_save(ctx, L, params, tmp);
  if (st == SEQCL_OK) st = write_adam(ctx, adam, L, adam_mv);
  if (st == SEQCL_OK) st = write_meta(ctx, json, meta);
  if (st == SEQCL_OK) {
    st = sq_dir_replace(tmp, final, NULL);
    if (st != SEQCL_OK) st = sq_fail_wrap(ctx, st, "checkpoint");
  } else if (tmp) {
    sq_dir_remove_tree(tmp);
  }
  free(tmp), free(final), free(adam), free(json);
  return st;
}

seqcl_status sq_checkpoint_locate(seqcl_ctx *ctx, const char *dir, char **out) {
  *out = NULL;
  char *sub = sq_path_join(dir, "checkpoint/training.json");
  if (!sub) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
  struct stat sb;
  int nested = stat(sub, &sb) == 0;
  free(sub);
  *out = nested ? sq_path_join(dir, "checkpoint") : strdup(dir);
  if (!*out) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
  return SEQCL_OK;
}

void sq_ckpt_abspath(const char *path, char *buf, size_t cap) {
  char *r = path && strcmp(path, "-") ? realpath(path, NULL) : NULL;
  snprintf(buf, cap, "%s", r ? r : path ? path : "");
  free(r);
}

static int get_u64_text(json_t *o, const char *key, int hex, uint64_t *v) {
  const char *s = json_string_value(json_object_get(o, key));
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, hex ? 16 : 10);
  if (*end || errno) return -1;
  *v = x;
  return 0;
}

seqcl_status sq_checkpoint_read_meta(seqcl_ctx *ctx, const char *ckdir, sq_ckpt_meta *m) {
  memset(m, 0, sizeof *m);
  char *path = sq_path_join(ckdir, "training.json");
  if (!path) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
  unsigned char *text = NULL;
  size_t len = 0;
  seqcl_status st = sq_file_read_all(path, &text, &len);
  if (st != SEQCL_OK)
    st = sq_fail(ctx, SEQCL_ERR_IO, "checkpoint: cannot read %s: %s", path, seqcl_last_message());
  else
    st = sq_checkpoint_parse_meta(ctx, (const char *)text, len, path, m);
  free(text);
  free(path);
  return st;
}

seqcl_status sq_checkpoint_parse_meta(seqcl_ctx *ctx, const char *text, size_t len,
                                      const char *path, sq_ckpt_meta *m) {
  memset(m, 0, sizeof *m);
  json_error_t err;
  json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  seqcl_status st = SEQCL_OK;
  if (!o)
    return sq_fail(ctx, SEQCL_ERR_BAD_MODEL, "checkpoint: %s: malformed JSON: %s (line %d)", path,
                   err.text, err.line);
  json_t *rng = json_object_get(o, "shuffle_state");
  const char *bad = NULL;
  if (strcmp(json_string_value(json_object_get(o, "format")) ? json_string_value(json_object_get(o, "format")) : "", "seqcl.checkpoint") ||
      json_integer_value(json_object_get(o, "version")) != 1)
    bad = "format/version";
  else if (!json_is_integer(json_object_get(o, "step")) ||
           (m->step = (long)json_integer_value(json_object_get(o, "step"))) < 0)
    bad = "step";
  else if ((m->batch_size = (int)json_integer_value(json_object_get(o, "batch_size"))) < 1)
    bad = "batch_size";
  else if (!json_is_number(json_object_get(o, "lr")) ||
           !((m->lr = json_number_value(json_object_get(o, "lr"))) > 0))
    bad = "lr";
  else if (!json_is_number(json_object_get(o, "clip")) ||
           (m->clip = json_number_value(json_object_get(o, "clip"))) < 0)
    bad = "clip";
  else if (json_object_get(o, "dropout") &&
           (!json_is_number(json_object_get(o, "dropout")) ||
            !((m->dropout = json_number_value(json_object_get(o, "dropout"))) >= 0 &&
              m->dropout < 1)))
    bad = "dropout";
  else if (get_u64_text(o, "seed", 0, &m->seed))
    bad = "seed";
  else if (json_array_size(rng) != 4)
    bad = "shuffle_state";
  else if ((m->epoch = (long)json_integer_value(json_object_get(o, "epoch"))) < 0 ||
           (m->cursor = (long)json_integer_value(json_object_get(o, "cursor"))) < 0)
    bad = "epoch/cursor";
  else if ((m->train_lines = (long)json_integer_value(json_object_get(o, "train_lines"))) < 1)
    bad = "train_lines";
  else if (get_u64_text(o, "data_hash", 1, &m->data_hash))
    bad = "data_hash";
  for (int i = 0; !bad && i < 4; i++) {
    json_t *one = json_object();
    json_object_set(one, "v", json_array_get(rng, i));
    if (get_u64_text(one, "v", 1, &m->epoch_rng[i])) bad = "shuffle_state";
    json_decref(one);
  }
  if (!bad && m->cursor > m->train_lines) bad = "cursor";
  /* written since the checkpoint learnt to say what it continues; older ones
   * (without them) are files runs whose files must be given again */
  const char *task = json_string_value(json_object_get(o, "task"));
  snprintf(m->task, sizeof m->task, "%s", task ? task : "files");
  if (!bad && strcmp(m->task, "files") && strcmp(m->task, "reverse")) bad = "task";
  json_t *v;
  if (!bad && (v = json_object_get(o, "steps_total")) &&
      (!json_is_integer(v) || (m->steps_total = (long)json_integer_value(v)) < 0 ||
       (m->steps_total && m->steps_total < m->step))) /* 0: not recorded */
    bad = "steps_total";
  if (!bad && (v = json_object_get(o, "checkpoint_every")) &&
      (!json_is_integer(v) || (m->checkpoint_every = (int)json_integer_value(v)) < 0))
    bad = "checkpoint_every";
  if (!bad && (v = json_object_get(o, "valid_every")) &&
      (!json_is_integer(v) || (m->valid_every = (int)json_integer_value(v)) < 0))
    bad = "valid_every";
  if (!bad && (v = json_object_get(o, "length")) &&
      (!json_is_integer(v) || (m->length = (int)json_integer_value(v)) < 1 || m->length > 4096))
    bad = "length";
  if (!bad && !strcmp(m->task, "reverse") && !m->length) bad = "length";
  m->lr_scale = 1.0, m->best = INFINITY, m->decay_patience = 1;
  snprintf(m->metric, sizeof m->metric, "loss");
  json_t *sc = json_object_get(o, "schedule");
  if (!bad && sc) {
    json_t *x;
    const char *metric = json_string_value(json_object_get(sc, "metric"));
#define SC_INT(key, field, lo)                                                                \
  if (!bad && (!json_is_integer(x = json_object_get(sc, key)) ||                             \
               (m->field = json_integer_value(x)) < (lo)))                                   \
    bad = "schedule." key;
#define SC_NUM(key, field, ok)                                                                \
  if (!bad && (!json_is_number(x = json_object_get(sc, key)) ||                              \
               !((m->field = json_number_value(x)), (ok))))                                  \
    bad = "schedule." key;
    SC_INT("warmup", warmup, 0)
    SC_INT("decay_patience", decay_patience, 1)
    SC_INT("patience", patience, 0)
    SC_INT("bucket", bucket, 0)
    SC_INT("batch_tokens", batch_tokens, 0)
    SC_INT("best_step", best_step, 0)
    SC_INT("since_best", since_best, 0)
    SC_INT("since_decay", since_decay, 0)
    SC_INT("adam_offset", adam_offset, 0)
    SC_NUM("lr_decay", lr_decay, m->lr_decay >= 0 && m->lr_decay < 1)
    SC_NUM("min_lr", min_lr, m->min_lr >= 0)
    SC_NUM("lr_scale", lr_scale, m->lr_scale > 0 && m->lr_scale <= 1)
#undef SC_INT
#undef SC_NUM
    if (!bad && (x = json_object_get(sc, "best")) &&
        (!json_is_number(x) || !isfinite(m->best = json_number_value(x))))
      bad = "schedule.best";
    if (!bad && !json_is_boolean(json_object_get(sc, "keep_best"))) bad = "schedule.keep_best";
    m->keep_best = json_is_true(json_object_get(sc, "keep_best"));
    sq_metric mk;
    if (!bad && (!metric || sq_metric_parse(metric, &mk))) bad = "schedule.metric";
    else if (!bad) snprintf(m->metric, sizeof m->metric, "%s", metric);
  }
  if (!bad && (v = json_object_get(o, "text"))) {
    sq_split split[2];
    const char *t = json_string_value(v);
    if (!t || strlen(t) >= sizeof m->text || sq_text_split_parse(t, split)) bad = "text";
    else snprintf(m->text, sizeof m->text, "%s", t);
  }
  const char *keys[4] = {"src", "tgt", "valid_src", "valid_tgt"};
  char *dst[4] = {m->src, m->tgt, m->valid_src, m->valid_tgt};
  for (int i = 0; !bad && i < 4; i++) {
    v = json_object_get(o, keys[i]);
    if (!v) continue;
    const char *p = json_string_value(v);
    if (!p || !*p || strlen(p) >= sizeof m->src) bad = keys[i];
    else snprintf(dst[i], sizeof m->src, "%s", p);
  }
  if (bad) st = sq_fail(ctx, SEQCL_ERR_BAD_MODEL, "checkpoint: %s: missing or bad \"%s\"", path, bad);
  json_decref(o);
  if (st != SEQCL_OK) memset(m, 0, sizeof *m);
  return st;
}

seqcl_status sq_checkpoint_read_adam(seqcl_ctx *ctx, const char *ckdir, const sq_tlayout *L,
                                     float *mv) {
  char *path = sq_path_join(ckdir, "optimizer.safetensors");
  if (!path) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
  sq_st_file *f = NULL;
  seqcl_status st = sq_st_read(path, 0, &f);
  for (int k = 0; st == SEQCL_OK && k < 2; k++)
    for (int i = 0; st == SEQCL_OK && i < L->nparams; i++) {
      char name[80];
      snprintf(name, sizeof name, "%s.%s", k ? "exp_avg_sq" : "exp_avg", L->p[i].name);
      const sq_st_tensor *t = sq_st_find(f, name);
      if (!t || t->nelem != L->p[i].count || t->dtype != SQ_DT_F32)
        st = sq_fail(ctx, SEQCL_ERR_BAD_MODEL,
                     "checkpoint: %s: tensor %s is missing or not F32 with %zu elements", path,
                     name, L->p[i].count);
      else if ((st = sq_st_check_finite(f, t)) == SEQCL_OK)
        sq_st_to_f32(f, t, mv + (size_t)k * L->total + L->p[i].off);
    }
  if (st == SEQCL_OK && f->count != (size_t)(2 * L->nparams))
    st = sq_fail(ctx, SEQCL_ERR_BAD_MODEL, "checkpoint: %s holds %zu tensors, expected %d", path,
                 f->count, 2 * L->nparams);
  sq_st_free(f);
  free(path);
  return st;
}

seqcl_status sq_tlayout_load(seqcl_ctx *ctx, const sq_tlayout *L, const char *path,
                             float *params) {
  sq_st_file *f = NULL;
  SQ_TRY(sq_st_read(path, 0, &f));
  seqcl_status st = SEQCL_OK;
  for (int i = 0; st == SEQCL_OK && i < L->nparams; i++) {
    const sq_tparam *p = &L->p[i];
    const sq_st_tensor *t = sq_st_find(f, p->name);
    if (!t)
      st = sq_fail(ctx, SEQCL_ERR_BAD_MODEL, "%s: missing tensor %s (training needs every bias)",
                   path, p->name);
    else if (t->ndim != p->ndim || t->shape[0] != p->shape[0] ||
             (p->ndim == 2 && t->shape[1] != p->shape[1]))
      st = sq_fail(ctx, SEQCL_ERR_BAD_MODEL, "%s: tensor %s has the wrong shape for the config",
                   path, p->name);
    else if ((st = sq_st_check_finite(f, t)) == SEQCL_OK)
      sq_st_to_f32(f, t, params + p->off);
  }
  for (size_t k = 0; st == SEQCL_OK && k < f->count; k++) {
    int known = 0;
    for (int i = 0; i < L->nparams; i++) known |= !strcmp(f->tensors[k].name, L->p[i].name);
    if (!known)
      st = sq_fail(ctx, SEQCL_ERR_BAD_MODEL, "%s: tensor %s does not belong to the config", path,
                   f->tensors[k].name);
  }
  sq_st_free(f);
  return st;
}
