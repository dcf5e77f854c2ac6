/* Names of the ablation switches (the SQ_ABL_* bits of core/settings.h) for
 * `seqcl bench --ablate`'s table. */
#ifndef SQ_BENCH_ABLATE_H
#define SQ_BENCH_ABLATE_H

#include "core/settings.h"

/* "stack_query" etc. -> its bit; 0 when unknown. */
unsigned sq_ablate_bit(const char *name);
const char *sq_ablate_name(unsigned bit);

#endif
