/* The decoder's embedding folded into its GRU input product. A step's input
 * product is W_ih [e ; c] = W_ih[:, :D] E[y] + W_ih[:, D:] c, and its first
 * term depends on the token alone: the table T = E W_ih[:, :D]^T [V, 3H_d],
 * computed once at load, turns it into a gather of one row per hypothesis,
 * so every step multiplies the context only (D of the D + He columns fewer:
 * a third of that product for embed 128 and He 256, 12 % of a base model's
 * decoder step, and the same share of the bytes a batch-1 step reads). The
 * context's columns W_ih[:, D:] get a contiguous copy of their own (W_ih_c,
 * model.c): a batch-1 step read through W_ih's stride skipped a third of
 * each row, and the hardware fetched most of the skipped bytes anyway.
 *
 * Building T costs V D 3H_d multiply-adds, what V decoder row-steps save, and it
 * holds V x 3H_d floats, so it is made only up to SQ_DEC_TABLE_MAX floats
 * (16 MiB: V 5 461 at H_d 256); a larger vocabulary decodes as before, its
 * step then bound by the V-wide output product anyway. */
#include "core/error.h"
#include "model/seq2seq.h"

enum { SQ_DEC_TABLE_MAX = 1 << 22 };

int sq_dec_table_fits(const seqcl_model *m) {
  return (size_t)m->cfg.tgt_vocab * 3 * (size_t)m->cfg.dec_hidden <= SQ_DEC_TABLE_MAX;
}

seqcl_status sq_dec_table_build(seqcl_model *m) {
  const sq_config *c = &m->cfg;
  const size_t V = (size_t)c->tgt_vocab, Hd3 = (size_t)3 * c->dec_hidden;
  if (!m->dec_w_ih_c.buf) return SEQCL_OK; /* too large: model.c made no W_ih_c either */
  const int D = c->embed_dim, X = D + m->He;
  seqcl_status st = sq_buf_alloc(m->ctx, V * Hd3 * sizeof(float), &m->dec_table);
  /* T = E W_ih[:, :D]^T: the same f32 product the step ran over these columns,
   * from the weights as loaded (rounded first at a reduced precision, so the
   * reduced path still equals the f32 path over the rounded weights). */
  if (st == SEQCL_OK)
    st = sq_gemm(m->ctx, 0, 1, (int)V, (int)Hd3, D, 1.0f, m->dec_emb, D, 0, m->dec.w_ih, X, 0,
                 0.0f, sq_at(m->dec_table, 0), (int)Hd3, 0, 1);
  return st == SEQCL_OK ? st
                        : sq_fail_wrap(m->ctx, st, "seqcl_model_load: the decoder's embedding "
                                       "table (%zu x %zu floats)", V, Hd3);
}
