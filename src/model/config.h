/* config.json of a model directory (SPEC §2), read with jansson. */
#ifndef SQ_MODEL_CONFIG_H
#define SQ_MODEL_CONFIG_H

#include <seqcl/seqcl.h>

#include "backend/backend.h"

/* "final": s_0 is the top encoder layer's final state itself (needs H_d = H_e). */
typedef enum sq_init { SQ_INIT_ZEROS = 0, SQ_INIT_BRIDGE = 1, SQ_INIT_FINAL = 2 } sq_init;
typedef enum sq_output { SQ_OUTPUT_STATE = 0, SQ_OUTPUT_STATE_CONTEXT = 1 } sq_output;

/* Upper bounds checked on load, so that every weight count (3*H_d*(D + H_e),
 * V*(H_d + H_e), ...) fits comfortably in size_t/int64 arithmetic. Products of two
 * dimensions can exceed INT_MAX: compute them in size_t. */
#define SQ_CONFIG_MAX_VOCAB (1 << 24)
#define SQ_CONFIG_MAX_DIM (1 << 16)
#define SQ_CONFIG_MAX_LAYERS 256

typedef struct sq_config {
  int src_vocab, tgt_vocab, embed_dim;
  int bos_id, eos_id;
  int pad_id;          /* -1 when null */
  int enc_hidden, enc_layers, bidirectional;
  int dec_hidden;
  sq_init init;
  sq_score score;
  int attn_dim;        /* additive only; 0 otherwise */
  sq_output output;
  /* src_unk_id / tgt_unk_id: the id an unknown word maps to when has_* is set
   * (a zeroed config has none, so unknown words stay errors) */
  int src_unk_id, tgt_unk_id, has_src_unk, has_tgt_unk;
} sq_config;

static inline int sq_config_enc_width(const sq_config *c) {
  return c->bidirectional ? 2 * c->enc_hidden : c->enc_hidden;
}

/* Parses and validates config.json (duplicate keys rejected, every field's type
 * and range checked, version == 1, dot/scaled_dot need H_e == H_d, bos/eos/pad
 * < tgt_vocab ...). Unknown keys are reported as a warning on stderr and ignored.
 * Errors are SEQCL_ERR_BAD_MODEL (SEQCL_ERR_IO for an unreadable file) naming
 * the file and key. */
seqcl_status sq_config_load(const char *path, sq_config *out);
seqcl_status sq_config_parse(const char *json_text, size_t len, const char *name, sq_config *out);
/* Writes config.json text for c into a malloc'd string. */
seqcl_status sq_config_to_json(const sq_config *c, char **out);

#endif
