#define _XOPEN_SOURCE 700
#include "harden_util.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/safetensors.h"

const char hu_src_text[] = "1 2 3\n4\n5 6 0 1 2\n3 3\n6 5 4 3\n";
const char hu_tgt_text[] = "7 1 2 3 8\n7 4 8\n7 5 6 0 1 2 8\n7 3 3 8\n7 6 5 4 3 8\n";

void hu_tiny_config(sq_config *c) {
  memset(c, 0, sizeof *c);
  c->src_vocab = 7;
  c->tgt_vocab = 9;
  c->embed_dim = 5;
  c->bos_id = 7;
  c->eos_id = 8;
  c->pad_id = -1;
  c->enc_hidden = 6;
  c->enc_layers = 1;
  c->bidirectional = 1;
  c->dec_hidden = 8;
  c->init = SQ_INIT_BRIDGE;
  c->score = SQ_SCORE_ADDITIVE;
  c->attn_dim = 7;
  c->output = SQ_OUTPUT_STATE;
}

static uint64_t rng;

void hu_add_tensor(hu_tensor *t, int *n, const char *name, int ndim, int64_t d0, int64_t d1,
                   uint64_t *state) {
  hu_tensor *x = &t[(*n)++];
  snprintf(x->name, sizeof x->name, "%s", name);
  x->ndim = ndim;
  x->shape[0] = d0;
  x->shape[1] = ndim > 1 ? d1 : 1;
  size_t count = (size_t)d0 * (size_t)x->shape[1];
  x->data = malloc(count * sizeof(float));
  for (size_t i = 0; x->data && i < count; i++) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    x->data[i] = (float)(((double)(*state >> 11) / 9007199254740992.0) * 2.0 - 1.0);
  }
}

static void add(hu_tensor *t, int *n, const char *name, int ndim, int64_t d0, int64_t d1) {
  hu_add_tensor(t, n, name, ndim, d0, d1, &rng);
}

/* SPEC §2's tensor table for one encoder layer. */
static int make_tensors(const sq_config *c, hu_tensor *t) {
  const int D = c->embed_dim, H = c->enc_hidden, He = sq_config_enc_width(c), Hd = c->dec_hidden;
  int n = 0;
  char name[80];
  add(t, &n, "encoder.embedding.weight", 2, c->src_vocab, D);
  for (int l = 0; l < c->enc_layers; l++)
    for (int d = 0; d < (c->bidirectional ? 2 : 1); d++) {
      const char *s = d ? "_reverse" : "";
      snprintf(name, sizeof name, "encoder.rnn.weight_ih_l%d%s", l, s);
      add(t, &n, name, 2, 3 * H, l ? He : D);
      snprintf(name, sizeof name, "encoder.rnn.weight_hh_l%d%s", l, s);
      add(t, &n, name, 2, 3 * H, H);
      snprintf(name, sizeof name, "encoder.rnn.bias_ih_l%d%s", l, s);
      add(t, &n, name, 1, 3 * H, 0);
      snprintf(name, sizeof name, "encoder.rnn.bias_hh_l%d%s", l, s);
      add(t, &n, name, 1, 3 * H, 0);
    }
  if (c->init == SQ_INIT_BRIDGE) {
    add(t, &n, "bridge.weight", 2, Hd, He);
    add(t, &n, "bridge.bias", 1, Hd, 0);
  }
  add(t, &n, "decoder.embedding.weight", 2, c->tgt_vocab, D);
  if (c->score == SQ_SCORE_ADDITIVE) {
    add(t, &n, "decoder.attention.key.weight", 2, c->attn_dim, He);
    add(t, &n, "decoder.attention.key.bias", 1, c->attn_dim, 0);
    add(t, &n, "decoder.attention.query.weight", 2, c->attn_dim, Hd);
    add(t, &n, "decoder.attention.query.bias", 1, c->attn_dim, 0);
    add(t, &n, "decoder.attention.energy.weight", 2, 1, c->attn_dim);
    add(t, &n, "decoder.attention.energy.bias", 1, 1, 0);
  } else if (c->score == SQ_SCORE_GENERAL) {
    add(t, &n, "decoder.attention.query.weight", 2, He, Hd);
  }
  add(t, &n, "decoder.rnn.weight_ih", 2, 3 * Hd, D + He);
  add(t, &n, "decoder.rnn.weight_hh", 2, 3 * Hd, Hd);
  add(t, &n, "decoder.rnn.bias_ih", 1, 3 * Hd, 0);
  add(t, &n, "decoder.rnn.bias_hh", 1, 3 * Hd, 0);
  add(t, &n, "decoder.output.weight", 2, c->tgt_vocab,
      c->output == SQ_OUTPUT_STATE ? Hd : Hd + He);
  add(t, &n, "decoder.output.bias", 1, c->tgt_vocab, 0);
  /* a nudge towards EOS so that decoded lines end at different steps */
  t[n - 1].data[c->eos_id] += 2.5f;
  return n;
}

int hu_write_model(const char *dir, const sq_config *c, uint64_t seed, const char *poison_tensor,
                   size_t poison_index, float poison_value) {
  rng = seed;
  hu_tensor t[HU_MAXT];
  memset(t, 0, sizeof t);
  int n = make_tensors(c, t);
  int rc = 0;
  sq_st_out out[HU_MAXT];
  memset(out, 0, sizeof out);
  for (int i = 0; i < n; i++) {
    if (!t[i].data) rc = -1;
    if (poison_tensor && !strcmp(t[i].name, poison_tensor) && t[i].data) {
      const size_t count = (size_t)t[i].shape[0] * (size_t)t[i].shape[1];
      for (size_t k = 0; k < count; k++)
        if (k == poison_index || poison_index == HU_ALL) t[i].data[k] = poison_value;
    }
    out[i].name = t[i].name;
    out[i].ndim = t[i].ndim;
    out[i].shape[0] = t[i].shape[0];
    out[i].shape[1] = t[i].shape[1];
    out[i].data = t[i].data;
  }
  char *json = NULL;
  if (rc == 0 && sq_config_to_json(c, &json) != SEQCL_OK) rc = -1;
  if (rc == 0) hu_write_text(dir, "config.json", json);
  free(json);
  if (rc == 0 && sq_st_write(hu_join(dir, "model.safetensors"), out, (size_t)n) != SEQCL_OK)
    rc = -1;
  for (int i = 0; i < n; i++) free(t[i].data);
  return rc;
}

int hu_make_model_dir(const char *dir, const sq_config *c, uint64_t seed,
                      const char *poison_tensor, size_t poison_index, float poison_value) {
  sq_config tiny;
  if (!c) {
    hu_tiny_config(&tiny);
    c = &tiny;
  }
  if (mkdir(dir, 0755)) return -1;
  return hu_write_model(dir, c, seed, poison_tensor, poison_index, poison_value);
}

int hu_tensor_names(const sq_config *c, char names[][80], size_t *sizes, int cap) {
  hu_tensor t[HU_MAXT];
  memset(t, 0, sizeof t);
  int n = make_tensors(c, t);
  for (int i = 0; i < n; i++) {
    if (i < cap) {
      snprintf(names[i], 80, "%.79s", t[i].name);
      sizes[i] = (size_t)t[i].shape[0] * (size_t)t[i].shape[1];
    }
    free(t[i].data);
  }
  return n < cap ? n : cap;
}

int hu_mkdtemp(char *buf, size_t cap, const char *tag) {
  snprintf(buf, cap, "/tmp/seqcl-harden-%s-XXXXXX", tag);
  return mkdtemp(buf) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

/* Folders first get their write bit back: what a test made read-only can
 * then be emptied. */
static int open_up(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)ftw;
  if (flag == FTW_D) chmod(path, sb->st_mode | 0700);
  return 0;
}

void hu_rmtree(const char *dir) {
  if (!dir || !*dir) return;
  nftw(dir, open_up, 16, FTW_PHYS);
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char hu_tmpdir[64];

int hu_setup_tmpdir(void **state) {
  (void)state;
  return hu_mkdtemp(hu_tmpdir, sizeof hu_tmpdir, "tmp");
}

int hu_teardown_tmpdir(void **state) {
  (void)state;
  hu_rmtree(hu_tmpdir);
  return 0;
}

int hu_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

const char *hu_join(const char *dir, const char *name) {
  static _Thread_local char ring[8][512];
  static _Thread_local int k;
  k = (k + 1) % 8;
  snprintf(ring[k], sizeof ring[k], "%s/%s", dir, name);
  return ring[k];
}

const char *hu_write_text(const char *dir, const char *name, const char *text) {
  const char *path = hu_join(dir, name);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

seqcl_device_info *hu_devices(size_t *count) {
  seqcl_device_info *list = NULL;
  *count = 0;
  if (seqcl_devices_list(&list, count) != SEQCL_OK) *count = 0;
  return list;
}
