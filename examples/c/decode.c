/* Greedy-decodes one line of source ids with a seqcl model and prints the
 * output ids.   Usage: decode MODEL_DIR ID...   (device: SEQCL_DEVICE, else auto)
 * Build: cc decode.c $(pkg-config --cflags --libs seqcl) */
#include <seqcl/seqcl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_DIR ID...\n", argv[0]);
    return 2;
  }
  int32_t ids[256];
  size_t n = (size_t)argc - 2;
  if (n > sizeof ids / sizeof ids[0]) {
    fprintf(stderr, "at most %zu ids\n", sizeof ids / sizeof ids[0]);
    return 2;
  }
  for (size_t i = 0; i < n; i++) {
    char *end;
    long v = strtol(argv[2 + i], &end, 10);
    if (end == argv[2 + i] || *end != '\0' || v < 0 || v > INT32_MAX) {
      fprintf(stderr, "not a token id: '%s'\n", argv[2 + i]);
      return 2;
    }
    ids[i] = (int32_t)v;
  }

  seqcl_ctx *ctx;
  if (seqcl_ctx_open(NULL /* SEQCL_DEVICE, else auto */, &ctx) != SEQCL_OK) {
    fprintf(stderr, "%s\n", seqcl_last_message());
    return 1;
  }
  seqcl_model *m = NULL;
  seqcl_decode_result *r = NULL;
  size_t offsets[] = {0, n};
  seqcl_seqs src = {1, ids, offsets};
  seqcl_decode_options opts;
  seqcl_decode_options_init(&opts); /* greedy; opts.beam = 4 for beam search */
  seqcl_status st = seqcl_model_load(ctx, argv[1], &m);
  if (st == SEQCL_OK) st = seqcl_model_decode(m, &src, &opts, &r);
  if (st == SEQCL_OK) {
    /* r->ids[r->offsets[0] .. r->offsets[1]) is the output of line 0 */
    for (size_t i = r->offsets[0]; i < r->offsets[1]; i++)
      printf(i > r->offsets[0] ? " %d" : "%d", (int)r->ids[i]);
    printf("\n");
  } else {
    fprintf(stderr, "%s: %s\n", seqcl_status_name(st), seqcl_last_message());
  }
  seqcl_decode_result_free(r); /* the free functions accept NULL */
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  return st == SEQCL_OK ? 0 : 1;
}
