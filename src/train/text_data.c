/* Vocabularies and text files for training (text_data.h). */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/error.h"
#include "train/text_data.h"

static const char *const vocab_file[2] = {"src.vocab", "tgt.vocab"};

seqcl_status sq_train_text_vocabs(seqcl_ctx *ctx, sq_train_text *t, const char *const given[2],
                                  const char *from_dir, const char *const train[2]) {
  for (int k = 0; k < 2; k++) {
    if (given[k]) {
      SQ_TRY(sq_vocab_read(given[k], &t->vocab[k]));
    } else if (from_dir) {
      char *p = sq_path_join(from_dir, vocab_file[k]);
      if (!p) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
      seqcl_status st = sq_vocab_read(p, &t->vocab[k]);
      free(p);
      if (st != SEQCL_OK)
        return sq_fail_wrap(ctx, st, "--text: the vocabulary of %s (give --%s-vocab)",
                            from_dir, k ? "tgt" : "src");
    } else {
      /* every token of the training file: min_count 1, no size limit, no pad */
      sq_vocab_spec spec = {t->split[k], 1, 0, 0};
      sq_vocab_summary sum;
      SQ_TRY(sq_vocab_build(&train[k], 1, &spec, &t->vocab[k], &sum));
      t->built[k] = 1;
    }
  }
  return SEQCL_OK;
}

static long special(const sq_vocab *v, const char *tok) { return sq_vocab_lookup(v, tok, strlen(tok)); }

seqcl_status sq_train_text_config(seqcl_ctx *ctx, const sq_train_text *t, sq_config *cfg,
                                  int fixed, const char *cfg_name) {
  const sq_vocab *sv = t->vocab[0], *tv = t->vocab[1];
  const long bos = special(tv, SQ_TOK_BOS), eos = special(tv, SQ_TOK_EOS);
  const long unk[2] = {special(sv, SQ_TOK_UNK), special(tv, SQ_TOK_UNK)};
  if (bos < 0 || eos < 0)
    return sq_fail(ctx, SEQCL_ERR_BAD_TOKENS,
                   "--text: the target vocabulary has no %s token (BOS and EOS are %s and %s)",
                   bos < 0 ? SQ_TOK_BOS : SQ_TOK_EOS, SQ_TOK_BOS, SQ_TOK_EOS);
  if (sv->count > SQ_CONFIG_MAX_VOCAB || tv->count > SQ_CONFIG_MAX_VOCAB)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "--text: a vocabulary has more than %d tokens",
                   SQ_CONFIG_MAX_VOCAB);
  if (fixed) {
    /* the weights' rows are the vocabulary's ids: both must be the model's */
    const char *what = NULL;
    if ((size_t)cfg->src_vocab != sv->count) what = "src_vocab_size";
    else if ((size_t)cfg->tgt_vocab != tv->count) what = "tgt_vocab_size";
    else if (cfg->bos_id != bos) what = "bos_id";
    else if (cfg->eos_id != eos) what = "eos_id";
    if (what)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "--text: the vocabularies (%zu and %zu tokens, %s %ld, %s %ld) do not "
                     "fit the model of %s (%s differs)",
                     sv->count, tv->count, SQ_TOK_BOS, bos, SQ_TOK_EOS, eos, cfg_name, what);
    return SEQCL_OK;
  }
  const long pad = special(tv, SQ_TOK_PAD);
  cfg->src_vocab = (int)sv->count, cfg->tgt_vocab = (int)tv->count;
  cfg->bos_id = (int)bos, cfg->eos_id = (int)eos;
  cfg->pad_id = (int)pad;
  cfg->has_src_unk = unk[0] >= 0, cfg->src_unk_id = unk[0] >= 0 ? (int)unk[0] : 0;
  cfg->has_tgt_unk = unk[1] >= 0, cfg->tgt_unk_id = unk[1] >= 0 ? (int)unk[1] : 0;
  return SEQCL_OK;
}

seqcl_status sq_train_text_read(const sq_train_text *t, const sq_config *cfg, int target,
                                const char *path, sq_seqs *out, size_t *unknown) {
  const int has = target ? cfg->has_tgt_unk : cfg->has_src_unk;
  const long unk = has ? (target ? cfg->tgt_unk_id : cfg->src_unk_id) : -1;
  SQ_TRY(sq_text_read(path, t->split[target], t->vocab[target],
                      target ? cfg->tgt_vocab : cfg->src_vocab, unk, 0, unknown, out));
  /* the text holds the tokens only; training targets are BOS ... EOS */
  seqcl_status st = target ? sq_seqs_wrap(out, cfg->bos_id, cfg->eos_id) : SEQCL_OK;
  if (st != SEQCL_OK) sq_seqs_free(out);
  return st;
}

seqcl_status sq_train_text_save(seqcl_ctx *ctx, const sq_vocab *const vocab[2], const char *dir) {
  for (int k = 0; k < 2; k++) {
    if (!vocab[k]) continue;
    char *p = sq_path_join(dir, vocab_file[k]);
    if (!p) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
    seqcl_status st = sq_vocab_save(vocab[k], p);
    free(p);
    SQ_TRY(st);
  }
  return SEQCL_OK;
}

void sq_train_text_free(sq_train_text *t) {
  for (int k = 0; k < 2; k++) sq_vocab_free(t->vocab[k]);
  memset(t, 0, sizeof *t);
}
