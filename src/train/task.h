/* Synthetic training tasks. */
#ifndef SQ_TRAIN_TASK_H
#define SQ_TRAIN_TASK_H

#include <stdint.h>

#include "train/tmodel.h"

/* n samples: src [n, length], lens [n] (all = length), tgt [n, length + 2]. */
void sq_task_reverse_batch(sq_trng *r, int n, int length, int bos, int eos, int32_t *src,
                           int32_t *lens, int32_t *tgt);

#endif
