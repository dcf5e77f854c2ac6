/* Fuzz target: the training checkpoint's training.json
 * (sq_checkpoint_parse_meta), what `seqcl train --resume` trusts.
 *
 * On success every field is in range (step >= 0, batch >= 1, lr > 0, clip >=
 * 0, 1 <= train_lines, cursor <= train_lines, task "files" or "reverse" with a
 * length for reverse, a total of steps not below the step, paths
 * NUL-terminated), and writing the metadata back out
 * (sq_checkpoint_meta_to_json) parses to the same struct, bit for bit. On
 * failure the struct is zeroed and the message names the file. */
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_json_arena.h"
#include "train/checkpoint.h"

#define NAME "fuzz/training.json"

static void check_valid(const sq_ckpt_meta *m) {
  FUZZ_CHECK(m->step >= 0);
  FUZZ_CHECK(m->batch_size >= 1);
  FUZZ_CHECK(m->lr > 0);
  FUZZ_CHECK(m->clip >= 0);
  FUZZ_CHECK(m->train_lines >= 1);
  FUZZ_CHECK(m->epoch >= 0 && m->cursor >= 0 && m->cursor <= m->train_lines);
  FUZZ_CHECK(!strcmp(m->task, "files") || !strcmp(m->task, "reverse"));
  FUZZ_CHECK(strcmp(m->task, "reverse") || (m->length >= 1 && m->length <= 4096));
  FUZZ_CHECK(m->steps_total == 0 || m->steps_total >= m->step);
  FUZZ_CHECK(m->checkpoint_every >= 0 && m->valid_every >= 0);
  const char *paths[4] = {m->src, m->tgt, m->valid_src, m->valid_tgt};
  for (int i = 0; i < 4; i++) FUZZ_CHECK(memchr(paths[i], '\0', sizeof m->src) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sq_fuzz_arena_install();
  sq_ckpt_meta m;
  memset(&m, 0xA5, sizeof m);
  seqcl_status st = sq_checkpoint_parse_meta(NULL, (const char *)data, size, NAME, &m);
  if (st != SEQCL_OK) {
    static const sq_ckpt_meta zero;
    FUZZ_CHECK(st == SEQCL_ERR_BAD_MODEL);
    FUZZ_CHECK(memcmp(&m, &zero, sizeof m) == 0);
    FUZZ_CHECK(strstr(seqcl_last_message(), NAME) != NULL);
  } else {
    check_valid(&m);
    char *text = NULL;
    FUZZ_CHECK(sq_checkpoint_meta_to_json(NULL, &m, &text) == SEQCL_OK);
    sq_ckpt_meta back;
    FUZZ_CHECK(sq_checkpoint_parse_meta(NULL, text, strlen(text), NAME, &back) == SEQCL_OK);
    FUZZ_CHECK(memcmp(&m, &back, sizeof m) == 0);
    sq_fuzz_json_free(text);
  }
  sq_fuzz_arena_reset();
  return 0;
}
