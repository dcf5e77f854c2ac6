/* config.json of a model directory (SPEC §2): parse, validate, write.
 *
 * Every field is checked for type and range before anything is derived from it,
 * so the rest of the model code can trust an sq_config. Errors name the file and
 * the key path ("encoder.hidden_size"); unknown keys only warn, as the SPEC asks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/error.h"
#include "model/config.h"
#include "model/tokens.h"

/* What a reader needs to report a failure: the file name. */
typedef struct cfg_reader {
  const char *name;
} cfg_reader;

/* A short rendering of a JSON value for "got ..." in messages. */
static void describe(const json_t *v, char *buf, size_t cap) {
  if (!v) {
    snprintf(buf, cap, "nothing");
    return;
  }
  char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  if (!text) {
    snprintf(buf, cap, "an unprintable value");
    return;
  }
  if (strlen(text) > 40) memcpy(text + 37, "...", 4);
  snprintf(buf, cap, "%s", text);
  free(text);
}

static seqcl_status bad(const cfg_reader *r, const char *key, const char *want, const json_t *got) {
  char g[64];
  describe(got, g, sizeof g);
  return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: %s must be %s, got %s", r->name, key, want, g);
}

static seqcl_status missing(const cfg_reader *r, const char *key, const char *want) {
  return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: required key '%s' (%s) is missing", r->name, key,
                 want);
}

/* An integer in [lo, hi]. */
static seqcl_status get_int(const cfg_reader *r, const json_t *obj, const char *key,
                            const char *path, long long lo, long long hi, const char *want,
                            int *out) {
  const json_t *v = json_object_get(obj, key);
  if (!v) return missing(r, path, want);
  if (!json_is_integer(v)) return bad(r, path, want, v);
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi) return bad(r, path, want, v);
  *out = (int)x;
  return SEQCL_OK;
}

/* A positive dimension bounded by max. */
static seqcl_status get_dim(const cfg_reader *r, const json_t *obj, const char *key,
                            const char *path, long long max, int *out) {
  char want[96];
  snprintf(want, sizeof want, "a positive integer (at most %lld)", max);
  return get_int(r, obj, key, path, 1, max, want, out);
}

/* One of the strings in choices[0..n); *out is its index. */
static seqcl_status get_choice(const cfg_reader *r, const json_t *obj, const char *key,
                               const char *path, const char *const *choices, int n, int *out) {
  char want[160];
  size_t at = (size_t)snprintf(want, sizeof want, "one of");
  for (int i = 0; i < n && at < sizeof want; i++)
    at += (size_t)snprintf(want + at, sizeof want - at, "%s \"%s\"", i ? "," : "", choices[i]);
  const json_t *v = json_object_get(obj, key);
  if (!v) return missing(r, path, want);
  if (json_is_string(v)) {
    for (int i = 0; i < n; i++) {
      if (strcmp(json_string_value(v), choices[i]) == 0) {
        *out = i;
        return SEQCL_OK;
      }
    }
  }
  return bad(r, path, want, v);
}

static seqcl_status get_object(const cfg_reader *r, const json_t *obj, const char *key,
                               json_t **out) {
  json_t *v = json_object_get(obj, key);
  if (!v) return missing(r, key, "an object");
  if (!json_is_object(v)) return bad(r, key, "an object", v);
  *out = v;
  return SEQCL_OK;
}

/* Warns about every key of obj not in known (prefix is "" or "encoder."). */
static void warn_unknown(const cfg_reader *r, const json_t *obj, const char *prefix,
                         const char *const *known, int n) {
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)obj, key, value) {
    (void)value;
    int found = 0;
    for (int i = 0; i < n && !found; i++) found = strcmp(key, known[i]) == 0;
    if (!found) fprintf(stderr, "%s: unknown key '%s%s' ignored\n", r->name, prefix, key);
  }
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const TOP_KEYS[] = {"format",   "version",  "src_vocab_size", "tgt_vocab_size",
                                       "embed_dim", "bos_id",  "eos_id",         "pad_id",
                                       "encoder",   "decoder", "attention",      "output",
                                       "src_unk_id", "tgt_unk_id"};
static const char *const ENCODER_KEYS[] = {"hidden_size", "num_layers", "bidirectional"};
static const char *const DECODER_KEYS[] = {"hidden_size", "init"};
static const char *const ATTENTION_KEYS[] = {"score", "dim"};
static const char *const INIT_NAMES[] = {"zeros", "bridge", "final"};
static const char *const OUTPUT_NAMES[] = {"state", "state_context"};

static seqcl_status parse_root(const cfg_reader *r, const json_t *root, sq_config *c) {
  if (!json_is_object(root)) return bad(r, "the top level", "a JSON object", root);
  /* Warnings come first, so a misspelt key shows up next to the "missing" error. */
  warn_unknown(r, root, "", TOP_KEYS, COUNT(TOP_KEYS));
  static const struct {
    const char *key;
    const char *const *known;
    int n;
  } sections[] = {{"encoder", ENCODER_KEYS, COUNT(ENCODER_KEYS)},
                  {"decoder", DECODER_KEYS, COUNT(DECODER_KEYS)},
                  {"attention", ATTENTION_KEYS, COUNT(ATTENTION_KEYS)}};
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    const json_t *sec = json_object_get(root, sections[i].key);
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s.", sections[i].key);
    if (json_is_object(sec)) warn_unknown(r, sec, prefix, sections[i].known, sections[i].n);
  }

  const json_t *format = json_object_get(root, "format");
  if (!format) return missing(r, "format", "\"seqcl.seq2seq\"");
  if (!json_is_string(format) || strcmp(json_string_value(format), "seqcl.seq2seq") != 0)
    return bad(r, "format", "\"seqcl.seq2seq\"", format);
  const json_t *vv = json_object_get(root, "version");
  if (!vv) return missing(r, "version", "1");
  if (!json_is_integer(vv) || json_integer_value(vv) != 1)
    return bad(r, "version", "1 (the only version this seqcl reads)", vv);

  SQ_TRY(get_dim(r, root, "src_vocab_size", "src_vocab_size", SQ_CONFIG_MAX_VOCAB, &c->src_vocab));
  SQ_TRY(get_dim(r, root, "tgt_vocab_size", "tgt_vocab_size", SQ_CONFIG_MAX_VOCAB, &c->tgt_vocab));
  SQ_TRY(get_dim(r, root, "embed_dim", "embed_dim", SQ_CONFIG_MAX_DIM, &c->embed_dim));

  char want[96];
  snprintf(want, sizeof want, "an integer in [0, tgt_vocab_size = %d)", c->tgt_vocab);
  SQ_TRY(get_int(r, root, "bos_id", "bos_id", 0, c->tgt_vocab - 1, want, &c->bos_id));
  SQ_TRY(get_int(r, root, "eos_id", "eos_id", 0, c->tgt_vocab - 1, want, &c->eos_id));
  /* pad_id: an absent key means the same as null (no padding row). */
  const json_t *pad = json_object_get(root, "pad_id");
  c->pad_id = -1;
  if (pad && !json_is_null(pad)) {
    char pwant[112];
    snprintf(pwant, sizeof pwant, "null or an integer in [0, tgt_vocab_size = %d)", c->tgt_vocab);
    SQ_TRY(get_int(r, root, "pad_id", "pad_id", 0, c->tgt_vocab - 1, pwant, &c->pad_id));
  }
  /* src_unk_id / tgt_unk_id (SPEC §2): absent or null = unknown words are errors */
  const struct {
    const char *key;
    int vocab, *id, *has;
  } unks[] = {{"src_unk_id", c->src_vocab, &c->src_unk_id, &c->has_src_unk},
              {"tgt_unk_id", c->tgt_vocab, &c->tgt_unk_id, &c->has_tgt_unk}};
  for (int k = 0; k < 2; k++) {
    const json_t *u = json_object_get(root, unks[k].key);
    *unks[k].has = 0;
    *unks[k].id = 0;
    if (u && !json_is_null(u)) {
      char uwant[112];
      snprintf(uwant, sizeof uwant, "null or an integer in [0, %s_vocab_size = %d)",
               k ? "tgt" : "src", unks[k].vocab);
      SQ_TRY(get_int(r, root, unks[k].key, unks[k].key, 0, unks[k].vocab - 1, uwant, unks[k].id));
      *unks[k].has = 1;
    }
  }

  json_t *enc = NULL, *dec = NULL, *att = NULL;
  SQ_TRY(get_object(r, root, "encoder", &enc));
  SQ_TRY(get_dim(r, enc, "hidden_size", "encoder.hidden_size", SQ_CONFIG_MAX_DIM, &c->enc_hidden));
  SQ_TRY(get_dim(r, enc, "num_layers", "encoder.num_layers", SQ_CONFIG_MAX_LAYERS, &c->enc_layers));
  const json_t *bi = json_object_get(enc, "bidirectional");
  if (!bi) return missing(r, "encoder.bidirectional", "true or false");
  if (!json_is_boolean(bi)) return bad(r, "encoder.bidirectional", "true or false", bi);
  c->bidirectional = json_is_true(bi);

  SQ_TRY(get_object(r, root, "decoder", &dec));
  SQ_TRY(get_dim(r, dec, "hidden_size", "decoder.hidden_size", SQ_CONFIG_MAX_DIM, &c->dec_hidden));
  int choice = 0;
  SQ_TRY(get_choice(r, dec, "init", "decoder.init", INIT_NAMES, COUNT(INIT_NAMES), &choice));
  c->init = (sq_init)choice;

  SQ_TRY(get_object(r, root, "attention", &att));
  SQ_TRY(get_choice(r, att, "score", "attention.score", sq_score_names, SQ_SCORE_COUNT, &choice));
  c->score = (sq_score)choice;
  c->attn_dim = 0;
  if (c->score == SQ_SCORE_ADDITIVE) {
    SQ_TRY(get_dim(r, att, "dim", "attention.dim", SQ_CONFIG_MAX_DIM, &c->attn_dim));
  } else if (json_object_get(att, "dim")) {
    /* Harmless for the other scores, but still a number we would print back. */
    int unused = 0;
    SQ_TRY(get_dim(r, att, "dim", "attention.dim", SQ_CONFIG_MAX_DIM, &unused));
  }

  SQ_TRY(get_choice(r, root, "output", "output", OUTPUT_NAMES, COUNT(OUTPUT_NAMES), &choice));
  c->output = (sq_output)choice;

  int he = sq_config_enc_width(c);
  if ((c->score == SQ_SCORE_DOT || c->score == SQ_SCORE_SCALED_DOT) && he != c->dec_hidden)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: attention.score \"%s\" needs the encoder output width H_e (%d = %s"
                   "encoder.hidden_size) to equal decoder.hidden_size (%d)",
                   r->name, sq_score_names[c->score], he, c->bidirectional ? "2 x " : "", c->dec_hidden);
  if (c->init == SQ_INIT_FINAL && he != c->dec_hidden)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL,
                   "%s: decoder.init \"final\" needs the encoder output width H_e (%d = %s"
                   "encoder.hidden_size) to equal decoder.hidden_size (%d)",
                   r->name, he, c->bidirectional ? "2 x " : "", c->dec_hidden);
  return SEQCL_OK;
}

seqcl_status sq_config_parse(const char *json_text, size_t len, const char *name, sq_config *out) {
  if (!name) name = "config.json";
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_config_parse: out is NULL");
  memset(out, 0, sizeof *out);
  if (!json_text && len) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_config_parse: text is NULL");
  json_error_t err;
  json_t *root = json_loadb(json_text ? json_text : "", len, JSON_REJECT_DUPLICATES, &err);
  if (!root)
    return sq_fail(NULL, SEQCL_ERR_BAD_MODEL, "%s: not valid JSON (line %d, column %d): %s", name,
                   err.line, err.column, err.text);
  cfg_reader r = {name};
  sq_config c;
  memset(&c, 0, sizeof c);
  seqcl_status st = parse_root(&r, root, &c);
  json_decref(root);
  if (st == SEQCL_OK) *out = c;
  return st;
}

seqcl_status sq_config_load(const char *path, sq_config *out) {
  if (!path || !out)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_config_load: path or out is NULL");
  memset(out, 0, sizeof *out);
  sq_text_in in;
  SQ_TRY(sq_text_in_read(path, &in));
  seqcl_status st = sq_config_parse(in.text, in.len, path, out);
  free(in.text);
  return st;
}

seqcl_status sq_config_to_json(const sq_config *c, char **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_config_to_json: out is NULL");
  *out = NULL;
  if (!c) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_config_to_json: config is NULL");
  if ((unsigned)c->init >= (unsigned)COUNT(INIT_NAMES) ||
      (unsigned)c->score >= (unsigned)SQ_SCORE_COUNT ||
      (unsigned)c->output >= (unsigned)COUNT(OUTPUT_NAMES))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                   "sq_config_to_json: init, score or output holds an unknown value");

  json_t *attention = json_pack("{s:s}", "score", sq_score_names[c->score]);
  if (attention && c->score == SQ_SCORE_ADDITIVE &&
      json_object_set_new(attention, "dim", json_integer(c->attn_dim)) != 0) {
    json_decref(attention);
    attention = NULL;
  }
  json_t *root = NULL;
  if (attention) {
    root = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:o, s:{s:i, s:i, s:b}, s:{s:i, s:s}, s:o, s:s}",
        "format", "seqcl.seq2seq", "version", 1, "src_vocab_size", c->src_vocab, "tgt_vocab_size",
        c->tgt_vocab, "embed_dim", c->embed_dim, "bos_id", c->bos_id, "eos_id", c->eos_id, "pad_id",
        c->pad_id >= 0 ? json_integer(c->pad_id) : json_null(), "encoder", "hidden_size",
        c->enc_hidden, "num_layers", c->enc_layers, "bidirectional", c->bidirectional ? 1 : 0,
        "decoder", "hidden_size", c->dec_hidden, "init", INIT_NAMES[c->init], "attention",
        attention, "output", OUTPUT_NAMES[c->output]);
  }
  if (root && c->has_src_unk && json_object_set_new(root, "src_unk_id", json_integer(c->src_unk_id))) {
    json_decref(root);
    root = NULL;
  }
  if (root && c->has_tgt_unk && json_object_set_new(root, "tgt_unk_id", json_integer(c->tgt_unk_id))) {
    json_decref(root);
    root = NULL;
  }
  char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  if (!text) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "sq_config_to_json: out of host memory");
  /* Copy into a buffer from this library's malloc, with a final newline. */
  size_t n = strlen(text);
  char *copy = malloc(n + 2);
  if (!copy) {
    free(text);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "sq_config_to_json: out of host memory");
  }
  memcpy(copy, text, n);
  copy[n] = '\n';
  copy[n + 1] = '\0';
  free(text);
  *out = copy;
  return SEQCL_OK;
}
