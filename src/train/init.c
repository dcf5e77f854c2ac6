/* Parameter layout (SPEC §2 names in one flat buffer) and PyTorch-style
 * initialisation from our own seeded generator. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "train/tmodel.h"

void sq_trng_seed(sq_trng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) { /* splitmix64 */
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    r->s[i] = z ^ (z >> 31);
  }
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sq_trng_next(sq_trng *r) { /* xoshiro256** */
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double sq_trng_uniform(sq_trng *r) { return (double)(sq_trng_next(r) >> 11) * 0x1.0p-53; }

int sq_trng_below(sq_trng *r, int n) { return (int)(sq_trng_uniform(r) * n); }

double sq_trng_normal(sq_trng *r) { /* Box-Muller; one value per call keeps it stateless */
  double u1 = sq_trng_uniform(r), u2 = sq_trng_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static size_t add(sq_tlayout *L, const char *name, int64_t d0, int64_t d1, sq_tinit init,
                  double fan) {
  sq_tparam *p = &L->p[L->nparams++];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->ndim = d1 > 0 ? 2 : 1;
  p->shape[0] = d0;
  p->shape[1] = d1 > 0 ? d1 : 0;
  p->count = (size_t)d0 * (size_t)(d1 > 0 ? d1 : 1);
  p->off = L->total;
  p->init = init;
  p->bound = (float)(1.0 / sqrt(fan));
  L->total += p->count;
  return p->off;
}

seqcl_status sq_tlayout_make(seqcl_ctx *ctx, const sq_config *c, sq_tlayout *L) {
  memset(L, 0, sizeof *L);
  if (c->enc_layers < 1 || c->enc_layers > SQ_TRAIN_MAX_LAYERS)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED,
                   "training: encoder.num_layers %d is outside 1..%d", c->enc_layers,
                   SQ_TRAIN_MAX_LAYERS);
  L->cfg = *c;
  memset(&L->enc_emb, 0xff, sizeof *L - offsetof(sq_tlayout, enc_emb));
  const int D = c->embed_dim, H = c->enc_hidden, He = sq_config_enc_width(c), Hd = c->dec_hidden;
  const int A = c->attn_dim, V = c->tgt_vocab;
  const int Ow = Hd + (c->output == SQ_OUTPUT_STATE_CONTEXT ? He : 0);
  L->enc_emb = add(L, "encoder.embedding.weight", c->src_vocab, D, SQ_TINIT_NORMAL, 1);
  /* nn.GRU's order: per layer, per direction, w_ih w_hh b_ih b_hh */
  for (int l = 0; l < c->enc_layers; l++)
    for (int d = 0; d < (c->bidirectional ? 2 : 1); d++) {
      const char *sfx = d ? "_reverse" : "";
      const int in = l ? He : D;
      char n[64];
      snprintf(n, sizeof n, "encoder.rnn.weight_ih_l%d%s", l, sfx);
      L->enc_wih[l][d] = add(L, n, 3 * H, in, SQ_TINIT_UNIFORM, H);
      snprintf(n, sizeof n, "encoder.rnn.weight_hh_l%d%s", l, sfx);
      L->enc_whh[l][d] = add(L, n, 3 * H, H, SQ_TINIT_UNIFORM, H);
      snprintf(n, sizeof n, "encoder.rnn.bias_ih_l%d%s", l, sfx);
      L->enc_bih[l][d] = add(L, n, 3 * H, 0, SQ_TINIT_UNIFORM, H);
      snprintf(n, sizeof n, "encoder.rnn.bias_hh_l%d%s", l, sfx);
      L->enc_bhh[l][d] = add(L, n, 3 * H, 0, SQ_TINIT_UNIFORM, H);
    }
  if (c->init == SQ_INIT_BRIDGE) {
    L->bridge_w = add(L, "bridge.weight", Hd, He, SQ_TINIT_UNIFORM, He);
    L->bridge_b = add(L, "bridge.bias", Hd, 0, SQ_TINIT_UNIFORM, He);
  }
  L->dec_emb = add(L, "decoder.embedding.weight", V, D, SQ_TINIT_NORMAL, 1);
  if (c->score == SQ_SCORE_ADDITIVE) {
    L->key_w = add(L, "decoder.attention.key.weight", A, He, SQ_TINIT_UNIFORM, He);
    L->key_b = add(L, "decoder.attention.key.bias", A, 0, SQ_TINIT_UNIFORM, He);
    L->query_w = add(L, "decoder.attention.query.weight", A, Hd, SQ_TINIT_UNIFORM, Hd);
    L->query_b = add(L, "decoder.attention.query.bias", A, 0, SQ_TINIT_UNIFORM, Hd);
    L->energy_w = add(L, "decoder.attention.energy.weight", 1, A, SQ_TINIT_UNIFORM, A);
    L->energy_b = add(L, "decoder.attention.energy.bias", 1, 0, SQ_TINIT_UNIFORM, A);
  } else if (c->score == SQ_SCORE_GENERAL) {
    L->query_w = add(L, "decoder.attention.query.weight", He, Hd, SQ_TINIT_UNIFORM, Hd);
    L->query_b = add(L, "decoder.attention.query.bias", He, 0, SQ_TINIT_UNIFORM, Hd);
  } else if (c->score != SQ_SCORE_NONE && He != Hd) { /* "none" has no attention weights */
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "training: dot and scaled_dot scores need encoder width %d == decoder hidden %d",
                   He, Hd);
  }
  L->dec_wih = add(L, "decoder.rnn.weight_ih", 3 * Hd, D + He, SQ_TINIT_UNIFORM, Hd);
  L->dec_whh = add(L, "decoder.rnn.weight_hh", 3 * Hd, Hd, SQ_TINIT_UNIFORM, Hd);
  L->dec_bih = add(L, "decoder.rnn.bias_ih", 3 * Hd, 0, SQ_TINIT_UNIFORM, Hd);
  L->dec_bhh = add(L, "decoder.rnn.bias_hh", 3 * Hd, 0, SQ_TINIT_UNIFORM, Hd);
  L->out_w = add(L, "decoder.output.weight", V, Ow, SQ_TINIT_UNIFORM, Ow);
  L->out_b = add(L, "decoder.output.bias", V, 0, SQ_TINIT_UNIFORM, Ow);
  return SEQCL_OK;
}

void sq_tlayout_init(const sq_tlayout *L, uint64_t seed, float *params) {
  sq_trng r;
  sq_trng_seed(&r, seed);
  for (int i = 0; i < L->nparams; i++) {
    const sq_tparam *p = &L->p[i];
    float *w = params + p->off;
    for (size_t k = 0; k < p->count; k++)
      w[k] = p->init == SQ_TINIT_NORMAL ? (float)sq_trng_normal(&r)
                                        : (float)((2.0 * sq_trng_uniform(&r) - 1.0) * p->bound);
  }
}
