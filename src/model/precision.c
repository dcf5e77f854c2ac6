/* Reduced-precision weights (seqcl_model_options.precision, <seqcl/model.h>):
 * the model's floats are rounded to bfloat16 or binary16 once, at load, and
 * the backend keeps a 16-bit copy of them that its products read. Everything
 * else (activations, sums, the state) stays float32, so a reduced-precision
 * model computes exactly what the float32 path computes for the rounded
 * weights: the tests compare the two bit for bit. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/halfwidth.h"
#include "model/seq2seq.h"

static const char *const precision_names[] = {"f32", "bf16", "f16"};

const char *seqcl_precision_name(seqcl_precision p) {
  return (unsigned)p < sizeof precision_names / sizeof precision_names[0] ? precision_names[p]
                                                                           : NULL;
}

seqcl_status seqcl_precision_parse(const char *name, seqcl_precision *out) {
  if (!name || !out)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_precision_parse: NULL argument");
  for (int p = 0; p < (int)(sizeof precision_names / sizeof precision_names[0]); p++)
    if (strcmp(name, precision_names[p]) == 0) {
      *out = (seqcl_precision)p;
      return SEQCL_OK;
    }
  return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                 "unknown precision '%s' (expected f32, bf16 or f16)", name);
}

void seqcl_model_options_init(seqcl_model_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->precision = SEQCL_PRECISION_F32;
}

seqcl_precision seqcl_model_precision(const seqcl_model *model) {
  return model ? model->precision : SEQCL_PRECISION_F32;
}

static sq_halfwidth width_of(seqcl_precision p) {
  return p == SEQCL_PRECISION_BF16 ? SQ_HALF_BF16
                                   : p == SEQCL_PRECISION_F16 ? SQ_HALF_F16 : SQ_HALF_NONE;
}

seqcl_status sq_model_precision_usable(seqcl_ctx *ctx, seqcl_precision p, const char *dir) {
  if (!seqcl_precision_name(p))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_load %s: precision %d is not "
                   "SEQCL_PRECISION_F32, _BF16 or _F16", dir, (int)p);
  if (p == SEQCL_PRECISION_F32 || sq_halfwidth_supported(ctx)) return SEQCL_OK;
  return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED,
                 "seqcl_model_load %s: precision %s needs the host path on a CPU with AVX-512F "
                 "(its own product kernel reads the 16-bit weights); %s (%s) cannot run it",
                 dir, seqcl_precision_name(p), ctx->info.selector, ctx->info.name);
}

seqcl_status sq_model_round_weights(const seqcl_model *m, const char *path, const char *tensor,
                                    float *w, size_t n) {
  const sq_halfwidth width = width_of(m->precision);
  if (width == SQ_HALF_NONE) return SEQCL_OK;
  const size_t i = sq_round_halfwidth_n(w, n, width);
  if (i < n)
    return sq_fail(m->ctx, SEQCL_ERR_BAD_MODEL,
                   "%s: tensor '%s' element %zu = %.9g is beyond %s's range (largest %g)", path,
                   tensor, i, (double)w[i], seqcl_precision_name(m->precision),
                   (double)sq_halfwidth_max(width));
  return SEQCL_OK;
}

seqcl_status sq_model_halfwidth_copy(const seqcl_model *m, sq_buf *buf) {
  const sq_halfwidth width = width_of(m->precision);
  return width == SQ_HALF_NONE ? SEQCL_OK : sq_buf_halfwidth(m->ctx, buf, width);
}
