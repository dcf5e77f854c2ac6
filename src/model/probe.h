/* Does a model use the source positions its attention points at? Seed 000
 * §08's checks for one source line: the invariants of its decode's attention,
 * and interventions — each source position hidden from the attention in turn,
 * plus replacements and deletions the caller asks for — measured teacher-forced
 * on the original output as KL(p_orig || p_edit) per decoder step and whether
 * the step's argmax changes. The intervention map [T, S] sits beside the
 * attention map [T, S], with their rank correlation per step. */
#ifndef SQ_MODEL_PROBE_H
#define SQ_MODEL_PROBE_H

#include <stdint.h>

#include <seqcl/seqcl.h>

#include "model/attn_stats.h"

typedef enum sq_edit_kind { SQ_EDIT_REPLACE, SQ_EDIT_DELETE } sq_edit_kind;

typedef struct sq_probe_edit {
  sq_edit_kind kind;
  int pos;    /* 0-based source position */
  int32_t id; /* the new token (replace) */
} sq_probe_edit;

typedef struct sq_probe {
  int S, T;          /* source length; decoder steps of the output (EOS step included) */
  int finished;      /* the decode produced EOS */
  int attends;       /* 0 for attention.score "none": no attention map, nothing to
                      * hide (attn NULL, kl and rho NAN); the edits still run */
  int32_t *labels;   /* [T]: the output's tokens, then EOS when finished */
  float *attn;       /* [T, S]: teacher-forced weights of the unedited line */
  sq_attn_stats inv; /* invariants of the decode's own weights */
  double *kl;        /* [T, S]: position j hidden (NAN for S = 1: nothing to hide) */
  uint8_t *flip;     /* [T, S]: 1 when the step's argmax changed */
  double *rho;       /* [T]: Spearman correlation of attn[t] and kl[t]; NAN when undefined */
  int n_edits;
  double *edit_kl;   /* [n_edits, T] */
  uint8_t *edit_flip;
} sq_probe;

/* Decodes src[0..S) greedily (max_steps 0: the decoder's default), then runs
 * one teacher-forced batch: the line, the line with each position hidden, and
 * each edit. Positions and ids are checked (SEQCL_ERR_INVALID_ARGUMENT naming
 * the edit); deleting the only token is refused. */
seqcl_status sq_probe_run(seqcl_model *m, const int32_t *src, int S, int max_steps,
                          const sq_probe_edit *edits, int n_edits, sq_probe *out);
void sq_probe_free(sq_probe *p);

#endif
