/* Loading a model directory (SPEC §2): config.json and model.safetensors are
 * parsed and checked against each other completely before the device is
 * touched; then every tensor is converted to float32 and uploaded in one write. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/hostmem.h"
#include "model/safetensors.h"
#include "model/seq2seq.h"

/* Device offsets of tensors are rounded up to this many floats (128 bytes) so
 * every weight starts on a boundary any device's loads like. */
#define WEIGHT_ALIGN 32

typedef struct tensor_spec {
  char name[80];
  int ndim;
  int64_t shape[2];
  int required;
  sq_ref *dst;
  const sq_st_tensor *found;
} tensor_spec;

typedef struct spec_list {
  tensor_spec *v;
  size_t count, cap;
} spec_list;

static int spec_add(spec_list *l, const char *name, int ndim, int64_t d0, int64_t d1, int required,
                    sq_ref *dst) {
  tensor_spec *v = sq_grow(l->v, &l->cap, l->count, sizeof *v, 32);
  if (!v) return -1;
  l->v = v;
  tensor_spec *t = &l->v[l->count++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->ndim = ndim;
  t->shape[0] = d0;
  t->shape[1] = d1;
  t->required = required;
  t->dst = dst;
  t->found = NULL;
  return 0;
}

/* The tensors a config asks for (SPEC §2 table), each with its destination ref. */
static int build_specs(seqcl_model *m, spec_list *l) {
  const sq_config *c = &m->cfg;
  const int64_t D = c->embed_dim, H = c->enc_hidden, He = m->He, Hd = c->dec_hidden;
  const int dirs = c->bidirectional ? 2 : 1;
  char name[80];
  int bad = spec_add(l, "encoder.embedding.weight", 2, c->src_vocab, D, 1, &m->enc_emb);
  for (int layer = 0; layer < c->enc_layers; layer++) {
    for (int d = 0; d < dirs; d++) {
      sq_gru_params *p = &m->enc[layer * dirs + d];
      const char *suf = d ? "_reverse" : "";
      int64_t in = layer == 0 ? D : He;
      snprintf(name, sizeof name, "encoder.rnn.weight_ih_l%d%s", layer, suf);
      bad |= spec_add(l, name, 2, 3 * H, in, 1, &p->w_ih);
      snprintf(name, sizeof name, "encoder.rnn.weight_hh_l%d%s", layer, suf);
      bad |= spec_add(l, name, 2, 3 * H, H, 1, &p->w_hh);
      snprintf(name, sizeof name, "encoder.rnn.bias_ih_l%d%s", layer, suf);
      bad |= spec_add(l, name, 1, 3 * H, 0, 1, &p->b_ih);
      snprintf(name, sizeof name, "encoder.rnn.bias_hh_l%d%s", layer, suf);
      bad |= spec_add(l, name, 1, 3 * H, 0, 1, &p->b_hh);
    }
  }
  if (c->init == SQ_INIT_BRIDGE) {
    bad |= spec_add(l, "bridge.weight", 2, Hd, He, 1, &m->bridge_w);
    bad |= spec_add(l, "bridge.bias", 1, Hd, 0, 1, &m->bridge_b);
  }
  bad |= spec_add(l, "decoder.embedding.weight", 2, c->tgt_vocab, D, 1, &m->dec_emb);
  if (c->score == SQ_SCORE_ADDITIVE) {
    const int64_t A = c->attn_dim;
    bad |= spec_add(l, "decoder.attention.key.weight", 2, A, He, 1, &m->key_w);
    bad |= spec_add(l, "decoder.attention.key.bias", 1, A, 0, 0, &m->key_b);
    bad |= spec_add(l, "decoder.attention.query.weight", 2, A, Hd, 1, &m->query_w);
    bad |= spec_add(l, "decoder.attention.query.bias", 1, A, 0, 0, &m->query_b);
    bad |= spec_add(l, "decoder.attention.energy.weight", 2, 1, A, 1, &m->energy_w);
    bad |= spec_add(l, "decoder.attention.energy.bias", 1, 1, 0, 0, &m->energy_b);
  } else if (c->score == SQ_SCORE_GENERAL) {
    bad |= spec_add(l, "decoder.attention.query.weight", 2, He, Hd, 1, &m->query_w);
    bad |= spec_add(l, "decoder.attention.query.bias", 1, He, 0, 0, &m->query_b);
  }
  bad |= spec_add(l, "decoder.rnn.weight_ih", 2, 3 * Hd, D + He, 1, &m->dec.w_ih);
  bad |= spec_add(l, "decoder.rnn.weight_hh", 2, 3 * Hd, Hd, 1, &m->dec.w_hh);
  bad |= spec_add(l, "decoder.rnn.bias_ih", 1, 3 * Hd, 0, 1, &m->dec.b_ih);
  bad |= spec_add(l, "decoder.rnn.bias_hh", 1, 3 * Hd, 0, 1, &m->dec.b_hh);
  int64_t out_in = c->output == SQ_OUTPUT_STATE_CONTEXT ? Hd + He : Hd;
  bad |= spec_add(l, "decoder.output.weight", 2, c->tgt_vocab, out_in, 1, &m->out_w);
  bad |= spec_add(l, "decoder.output.bias", 1, c->tgt_vocab, 0, 1, &m->out_b);
  return bad;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
  size_t used = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < ndim && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* Matches the file's tensors with the specs: unknown names, missing required
 * tensors and wrong shapes are SEQCL_ERR_BAD_MODEL naming the tensor. */
static seqcl_status match_tensors(const sq_st_file *f, spec_list *l) {
  for (size_t i = 0; i < f->count; i++) {
    const sq_st_tensor *t = &f->tensors[i];
    tensor_spec *s = NULL;
    for (size_t k = 0; k < l->count && !s; k++)
      if (!strcmp(l->v[k].name, t->name)) s = &l->v[k];
    if (!s)
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: unknown tensor '%s' (not part of a model with this config.json)",
                     f->path, t->name);
    int same = t->ndim == s->ndim;
    for (int d = 0; same && d < s->ndim; d++) same = t->shape[d] == s->shape[d];
    if (!same) {
      char got[128], want[128];
      shape_str(got, sizeof got, t->ndim, t->shape);
      shape_str(want, sizeof want, s->ndim, s->shape);
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                     "%s: tensor '%s' has shape %s, expected %s from config.json", f->path,
                     t->name, got, want);
    }
    s->found = t;
  }
  for (size_t k = 0; k < l->count; k++) {
    if (l->v[k].required && !l->v[k].found) {
      char want[128];
      shape_str(want, sizeof want, l->v[k].ndim, l->v[k].shape);
      return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: missing tensor '%s' (shape %s)", f->path,
                     l->v[k].name, want);
    }
  }
  return SEQCL_OK;
}

/* Output over [s ; c]: the decoder keeps its step's vectors in one row
 * [s | c | e] (decoder.c), so the output reads [s ; c] as one operand and the
 * GRU reads [c ; e], which needs W_ih's two column blocks swapped: W_ih_ce
 * [3H_d, H_e + D] = [W_ih[:, D:] | W_ih[:, :D]], built here once. */
static size_t w_ih_ce_count(const seqcl_model *m) {
  if (m->cfg.output != SQ_OUTPUT_STATE_CONTEXT) return 0;
  return (size_t)3 * m->cfg.dec_hidden * (size_t)(m->cfg.embed_dim + m->He);
}

/* Columns col .. col+n-1 of every row of W_ih [3H_d, D + He] into out, whose
 * rows are ld floats apart. */
static void w_ih_columns(const seqcl_model *m, const float *w_ih, size_t col, size_t n,
                         float *out, size_t ld) {
  const size_t X = (size_t)m->cfg.embed_dim + (size_t)m->He;
  for (size_t r = 0; r < (size_t)3 * m->cfg.dec_hidden; r++)
    memcpy(out + r * ld, w_ih + r * X + col, n * sizeof(float));
}

static void swap_w_ih(const seqcl_model *m, const float *w_ih, float *out) {
  const size_t D = (size_t)m->cfg.embed_dim, He = (size_t)m->He;
  w_ih_columns(m, w_ih, D, He, out, D + He);
  w_ih_columns(m, w_ih, 0, D, out + He, D + He);
}

/* [W_hh ; W_q] of the decoder, [3H_d + q, H_d] (decoder.c's stacked GEMM). */
static size_t w_hhq_count(const seqcl_model *m) {
  const size_t Hd = (size_t)m->cfg.dec_hidden;
  return (3 * Hd + (size_t)sq_dec_query_width(m)) * Hd;
}

/* W_ih[:, D:], the context's columns, as [3H_d, He] (dec_table.c). */
static size_t w_ih_c_count(const seqcl_model *m) {
  if (!sq_dec_table_fits(m)) return 0;
  return (size_t)3 * m->cfg.dec_hidden * (size_t)m->He;
}

static size_t aligned(size_t n) { return (n + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN; }

/* Zeros the alignment gap after n floats at host + off, which is uploaded too
 * (the gaps alone: zeroing the whole buffer first wrote every page twice). */
static void zero_gap(float *host, size_t off, size_t n) {
  memset(host + off + n, 0, (aligned(n) - n) * sizeof *host);
}

/* Converts every found tensor into one host array (and the derived W_ih_ce,
 * W_ih_c and [W_hh ; W_q]), uploads it, and builds the decoder's table. On
 * the host backend the array is the weights buffer itself: no second copy of
 * the weights to fill and write (a fifth of a one-line decode's start-up). */
static seqcl_status upload(seqcl_model *m, const sq_st_file *f, spec_list *l) {
  size_t total = aligned(w_ih_ce_count(m)) + aligned(w_ih_c_count(m)) + aligned(w_hhq_count(m));
  m->dec_w_ih_ce = m->dec_w_ih_c = m->dec_w_hhq = sq_none();
  for (size_t k = 0; k < l->count; k++) {
    *l->v[k].dst = sq_none();
    if (l->v[k].found) total += aligned(l->v[k].found->nelem);
  }
  if (total == 0) total = WEIGHT_ALIGN;
  if (total > SIZE_MAX / sizeof(float))
    return sq_fail(m->ctx, SEQCL_ERR_OUT_OF_MEMORY, "%s: %zu weights do not fit in memory",
                   f->path, total);
  seqcl_status st = sq_buf_alloc(m->ctx, total * sizeof(float), &m->weights);
  if (st != SEQCL_OK)
    return sq_fail_wrap(m->ctx, st, "%s: weights (%zu bytes)", f->path, total * sizeof(float));
  float *const view = sq_buf_host_view(m->ctx, m->weights);
  float *host = view ? view : sq_hostmem_alloc(total * sizeof *host);
  if (!host)
    return sq_fail(m->ctx, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory for %zu weights",
                   f->path, total);
  size_t off = 0, w_ih_off = 0, w_hh_off = 0, w_q_off = 0;
  for (size_t k = 0; k < l->count; k++) {
    const sq_st_tensor *t = l->v[k].found;
    if (!t) continue;
    /* read from the file into place, checked finite (the file was opened
     * with sq_st_open); only the buffer holds the weights */
    st = sq_st_tensor_f32(f, t, host + off);
    if (st == SEQCL_OK) st = sq_model_round_weights(m, f->path, t->name, host + off, t->nelem);
    zero_gap(host, off, t->nelem);
    if (st != SEQCL_OK) {
      if (!view) free(host);
      return st;
    }
    *l->v[k].dst = sq_at(m->weights, off);
    if (l->v[k].dst == &m->dec.w_ih) w_ih_off = off;
    if (l->v[k].dst == &m->dec.w_hh) w_hh_off = off;
    if (l->v[k].dst == &m->query_w) w_q_off = off;
    off += aligned(t->nelem);
  }
  if (w_ih_ce_count(m)) {
    swap_w_ih(m, host + w_ih_off, host + off);
    zero_gap(host, off, w_ih_ce_count(m));
    m->dec_w_ih_ce = sq_at(m->weights, off);
    off += aligned(w_ih_ce_count(m));
  }
  if (w_ih_c_count(m)) {
    w_ih_columns(m, host + w_ih_off, (size_t)m->cfg.embed_dim, (size_t)m->He, host + off,
                 (size_t)m->He);
    zero_gap(host, off, w_ih_c_count(m));
    m->dec_w_ih_c = sq_at(m->weights, off);
    off += aligned(w_ih_c_count(m));
  }
  const size_t hh = (size_t)3 * m->cfg.dec_hidden * m->cfg.dec_hidden;
  memcpy(host + off, host + w_hh_off, hh * sizeof(float));
  memcpy(host + off + hh, host + w_q_off, (w_hhq_count(m) - hh) * sizeof(float));
  zero_gap(host, off, w_hhq_count(m));
  m->dec_w_hhq = sq_at(m->weights, off);
  off += aligned(w_hhq_count(m));
  memset(host + off, 0, (total - off) * sizeof *host); /* an empty model's one block */
  if (!view) {
    st = sq_write(m->ctx, sq_at(m->weights, 0), host, total * sizeof(float));
    free(host);
  }
  if (st == SEQCL_OK) st = sq_model_halfwidth_copy(m, m->weights);
  /* nothing writes the weights from here on (products may keep them packed) */
  if (st == SEQCL_OK) sq_buf_freeze(m->ctx, m->weights);
  /* after the freeze: the table's product (V rows) then reads W_ih's embedding
   * columns packed, on the host's own kernel across its threads, instead of
   * through OpenBLAS on one (a fifth of a one-line decode's process); the
   * copy it packs (3H_d x D floats) stays, unread */
  if (st == SEQCL_OK) st = sq_dec_table_build(m);
  return st; /* (the caller waits for the upload) */
}

seqcl_status seqcl_model_load(seqcl_ctx *ctx, const char *dir, seqcl_model **out) {
  return seqcl_model_load_with(ctx, dir, NULL, out);
}

seqcl_status seqcl_model_load_with(seqcl_ctx *ctx, const char *dir,
                                   const seqcl_model_options *opts, seqcl_model **out) {
  if (!out) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_load: out is NULL");
  *out = NULL;
  if (!ctx || !dir)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_load: ctx or dir is NULL");
  sq_clear_message();
  seqcl_model_options defaults;
  seqcl_model_options_init(&defaults);
  if (!opts) opts = &defaults;
  SQ_TRY(sq_model_precision_usable(ctx, opts->precision, dir));
  seqcl_model *m = calloc(1, sizeof *m);
  char *cfg_path = sq_path_join(dir, "config.json");
  char *st_path = sq_path_join(dir, "model.safetensors");
  sq_st_file *f = NULL;
  spec_list specs = {0};
  seqcl_status st = SEQCL_OK;
  if (!m || !cfg_path || !st_path) {
    st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "seqcl_model_load: out of host memory");
    goto done;
  }
  m->ctx = ctx;
  m->precision = opts->precision;
  st = sq_config_load(cfg_path, &m->cfg);
  if (st != SEQCL_OK) goto done;
  m->He = sq_config_enc_width(&m->cfg);
  m->enc = calloc((size_t)m->cfg.enc_layers * (m->cfg.bidirectional ? 2 : 1), sizeof *m->enc);
  if (!m->enc || build_specs(m, &specs)) {
    st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "seqcl_model_load: out of host memory");
    goto done;
  }
  st = sq_st_open(st_path, 0, &f);
  if (st != SEQCL_OK) goto done;
  st = match_tensors(f, &specs);
  if (st != SEQCL_OK) goto done;
  /* The tensors are read into the weights (upload), each checked as it comes
   * in: a NaN or an infinity in a weight is a malformed model (SPEC §2),
   * caught on the host the same way for every device, rather than an answer
   * that depends on how a device propagates it. A device that is not the
   * host sees the weights only once every tensor passed; on the host, a
   * failure frees the buffer with the model. */
  st = upload(m, f, &specs);
  if (st == SEQCL_OK) st = sq_finish(ctx);
done:
  /* Loader failures recorded the thread message only; the context keeps it too. */
  if (st != SEQCL_OK) snprintf(ctx->message, sizeof ctx->message, "%s", seqcl_last_message());
  sq_st_free(f);
  free(specs.v);
  free(cfg_path);
  free(st_path);
  if (st != SEQCL_OK) {
    seqcl_model_free(m);
    return st;
  }
  *out = m;
  return SEQCL_OK;
}

void seqcl_model_free(seqcl_model *m) {
  if (!m) return;
  sq_buf_free(m->weights);
  sq_buf_free(m->dec_table);
  free(m->enc);
  free(m);
}

seqcl_status seqcl_model_get_config(const seqcl_model *m, seqcl_model_config *out) {
  if (!m || !out)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_get_config: NULL argument");
  const sq_config *c = &m->cfg;
  memset(out, 0, sizeof *out);
  out->src_vocab_size = c->src_vocab;
  out->tgt_vocab_size = c->tgt_vocab;
  out->embed_dim = c->embed_dim;
  out->bos_id = c->bos_id;
  out->eos_id = c->eos_id;
  out->pad_id = c->pad_id;
  out->encoder_hidden = c->enc_hidden;
  out->encoder_layers = c->enc_layers;
  out->bidirectional = c->bidirectional;
  out->encoder_width = m->He;
  out->decoder_hidden = c->dec_hidden;
  out->decoder_init_bridge = c->init == SQ_INIT_BRIDGE;
  out->decoder_init = (int)c->init;
  out->score = c->score;
  out->attention_dim = c->score == SQ_SCORE_ADDITIVE ? c->attn_dim : 0;
  out->output_state_context = c->output == SQ_OUTPUT_STATE_CONTEXT;
  return SEQCL_OK;
}

int seqcl_model_src_vocab_size(const seqcl_model *m) { return m ? m->cfg.src_vocab : 0; }
int seqcl_model_tgt_vocab_size(const seqcl_model *m) { return m ? m->cfg.tgt_vocab : 0; }
int seqcl_model_bos_id(const seqcl_model *m) { return m ? m->cfg.bos_id : -1; }
int seqcl_model_eos_id(const seqcl_model *m) { return m ? m->cfg.eos_id : -1; }
seqcl_ctx *seqcl_model_ctx(const seqcl_model *m) { return m ? m->ctx : NULL; }

seqcl_status sq_check_seqs(seqcl_ctx *ctx, const seqcl_seqs *s, int vocab, size_t min_len,
                           const char *what) {
  if (!s || (s->count && (!s->ids || !s->offsets)))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s sequences: NULL array", what);
  if (s->count && s->offsets[0] != 0)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s sequences: offsets[0] must be 0", what);
  for (size_t i = 0; i < s->count; i++) {
    if (s->offsets[i + 1] < s->offsets[i])
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s sequences: offsets decrease at line %zu",
                     what, i + 1);
    size_t len = s->offsets[i + 1] - s->offsets[i];
    if (len < min_len)
      return sq_fail(ctx, SEQCL_ERR_EMPTY_SEQUENCE,
                     "%s line %zu has %zu token(s); at least %zu needed%s", what, i + 1, len,
                     min_len, min_len == 2 ? " (BOS and one label)" : "");
    if (len > (size_t)1 << 24)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s line %zu: %zu tokens is too long", what,
                     i + 1, len);
    for (size_t k = s->offsets[i]; k < s->offsets[i + 1]; k++)
      if (s->ids[k] < 0 || s->ids[k] >= vocab)
        return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                       "%s line %zu, token %zu: id %" PRId32 " is outside the vocabulary [0, %d)",
                       what, i + 1, k - s->offsets[i] + 1, s->ids[k], vocab);
  }
  return SEQCL_OK;
}

void seqcl_model_set_progress(seqcl_model *m, seqcl_progress_fn fn, void *user) {
  if (!m) return;
  m->progress = fn;
  m->progress_user = user;
}

seqcl_status sq_model_progress(seqcl_model *m, size_t done, size_t total) {
  if (m->progress && m->progress(m->progress_user, done, total))
    return sq_fail(m->ctx, SEQCL_ERR_CANCELLED, "stopped after %zu of %zu lines", done, total);
  return SEQCL_OK;
}
