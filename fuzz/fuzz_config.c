/* Fuzz target: the config.json reader (sq_config_parse).
 *
 * On success the SPEC §2 invariants must hold (dimensions positive and within
 * the loader's bounds, bos/eos/pad inside the target vocabulary, attention.dim
 * exactly for additive, dot/scaled_dot only with H_e == H_d), and writing the
 * config back out must parse to the same struct. On failure *out is zeroed and
 * the message names the file. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "model/config.h"

#define NAME "fuzz/config.json"

static void check_valid(const sq_config *c) {
  FUZZ_CHECK(c->src_vocab >= 1 && c->src_vocab <= SQ_CONFIG_MAX_VOCAB);
  FUZZ_CHECK(c->tgt_vocab >= 1 && c->tgt_vocab <= SQ_CONFIG_MAX_VOCAB);
  FUZZ_CHECK(c->embed_dim >= 1 && c->embed_dim <= SQ_CONFIG_MAX_DIM);
  FUZZ_CHECK(c->enc_hidden >= 1 && c->enc_hidden <= SQ_CONFIG_MAX_DIM);
  FUZZ_CHECK(c->dec_hidden >= 1 && c->dec_hidden <= SQ_CONFIG_MAX_DIM);
  FUZZ_CHECK(c->enc_layers >= 1 && c->enc_layers <= SQ_CONFIG_MAX_LAYERS);
  FUZZ_CHECK(c->bidirectional == 0 || c->bidirectional == 1);
  FUZZ_CHECK(c->bos_id >= 0 && c->bos_id < c->tgt_vocab);
  FUZZ_CHECK(c->eos_id >= 0 && c->eos_id < c->tgt_vocab);
  FUZZ_CHECK(c->pad_id == -1 || (c->pad_id >= 0 && c->pad_id < c->tgt_vocab));
  FUZZ_CHECK(c->init == SQ_INIT_ZEROS || c->init == SQ_INIT_BRIDGE || c->init == SQ_INIT_FINAL);
  if (c->init == SQ_INIT_FINAL) FUZZ_CHECK(sq_config_enc_width(c) == c->dec_hidden);
  FUZZ_CHECK(c->output == SQ_OUTPUT_STATE || c->output == SQ_OUTPUT_STATE_CONTEXT);
  FUZZ_CHECK(c->score == SQ_SCORE_ADDITIVE || c->score == SQ_SCORE_GENERAL ||
             c->score == SQ_SCORE_DOT || c->score == SQ_SCORE_SCALED_DOT ||
             c->score == SQ_SCORE_NONE);
  if (c->score == SQ_SCORE_ADDITIVE)
    FUZZ_CHECK(c->attn_dim >= 1 && c->attn_dim <= SQ_CONFIG_MAX_DIM);
  else
    FUZZ_CHECK(c->attn_dim == 0);
  if (c->score == SQ_SCORE_DOT || c->score == SQ_SCORE_SCALED_DOT)
    FUZZ_CHECK(sq_config_enc_width(c) == c->dec_hidden);
}

static int all_zero(const sq_config *c) {
  static const sq_config zero;
  return memcmp(c, &zero, sizeof zero) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sq_config c;
  memset(&c, 0xa5, sizeof c);
  seqcl_status st = sq_config_parse((const char *)data, size, NAME, &c);
  if (st != SEQCL_OK) {
    FUZZ_CHECK(st == SEQCL_ERR_BAD_MODEL || st == SEQCL_ERR_OUT_OF_MEMORY);
    FUZZ_CHECK(all_zero(&c));
    const char *msg = seqcl_last_message();
    FUZZ_CHECK(msg != NULL && strncmp(msg, NAME ":", strlen(NAME ":")) == 0);
    return 0;
  }
  check_valid(&c);

  /* Round trip: what sq_config_to_json writes is a config that reads back the same. */
  char *text = NULL;
  st = sq_config_to_json(&c, &text);
  if (st == SEQCL_ERR_OUT_OF_MEMORY) return 0;
  FUZZ_CHECK(st == SEQCL_OK && text != NULL);
  sq_config again;
  st = sq_config_parse(text, strlen(text), NAME, &again);
  FUZZ_CHECK(st == SEQCL_OK);
  FUZZ_CHECK(memcmp(&again, &c, sizeof c) == 0);
  free(text);
  return 0;
}
