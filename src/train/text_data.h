/* Training on text (`seqcl train --text`): the two vocabularies (given,
 * taken from a model folder, or built from the training files), the config
 * keys that follow from them, and text files read into the id lines training
 * takes (targets wrapped in BOS ... EOS). */
#ifndef SQ_TRAIN_TEXT_DATA_H
#define SQ_TRAIN_TEXT_DATA_H

#include "model/config.h"
#include "model/text.h"

typedef struct sq_train_text {
  sq_split split[2];  /* source, target */
  sq_vocab *vocab[2]; /* owned */
  int built[2];       /* 1: built from the training files */
} sq_train_text;

/* Settles both vocabularies: given[k] when set, else from_dir/{src,tgt}.vocab
 * when from_dir is set (a model or checkpoint folder), else built from
 * train[k] (every token, no size limit). */
seqcl_status sq_train_text_vocabs(seqcl_ctx *ctx, sq_train_text *t, const char *const given[2],
                                  const char *from_dir, const char *const train[2]);

/* The config as the vocabularies have it. fixed (a model whose weights are
 * loaded: --init, --resume): each vocabulary must have the config's size and
 * its special tokens must be the config's ids. Otherwise the sizes, bos_id,
 * eos_id, pad_id and the unknown ids are set from the vocabularies (<s>, </s>,
 * <pad>, <unk>; a vocabulary without <unk> leaves its unknown id null). */
seqcl_status sq_train_text_config(seqcl_ctx *ctx, const sq_train_text *t, sq_config *cfg,
                                  int fixed, const char *cfg_name);

/* Reads a text file of one side (target = 1 wraps each line in BOS ... EOS).
 * Unknown tokens map to the config's unknown id (*unknown counts them) and are
 * an error naming the file, line and token where it has none. */
seqcl_status sq_train_text_read(const sq_train_text *t, const sq_config *cfg, int target,
                                const char *path, sq_seqs *out, size_t *unknown);

/* Writes both vocabularies into dir as src.vocab and tgt.vocab. */
seqcl_status sq_train_text_save(seqcl_ctx *ctx, const sq_vocab *const vocab[2], const char *dir);

void sq_train_text_free(sq_train_text *t);

#endif
