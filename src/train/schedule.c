/* The learning-rate schedule and validation bookkeeping (schedule.h). */
#include <math.h>
#include <string.h>

#include "train/schedule.h"

static const char *const names[] = {"loss", "exact", "ter"};

int sq_metric_parse(const char *name, sq_metric *out) {
  for (int i = 0; i < 3; i++)
    if (name && !strcmp(name, names[i])) {
      *out = (sq_metric)i;
      return 0;
    }
  return -1;
}

const char *sq_metric_name(sq_metric m) { return (unsigned)m < 3 ? names[m] : "?"; }

void sq_schedule_start(sq_schedule *s) {
  s->scale = 1.0;
  s->best = INFINITY;
  s->best_step = 0;
  s->since_best = s->since_decay = 0;
}

double sq_schedule_lr(const sq_schedule *s, long step) {
  double lr = s->lr * s->scale;
  if (s->scale < 1.0 && lr < s->min_lr) lr = s->min_lr;
  if (s->warmup > 0 && step < s->warmup) lr *= (double)(step + 1) / (double)s->warmup;
  return lr;
}

int sq_schedule_validated(sq_schedule *s, long step, double loss, double exact, double ter) {
  /* one direction for all: exact match is higher-better, so it is negated */
  const double v = s->metric == SQ_METRIC_LOSS ? loss : s->metric == SQ_METRIC_EXACT ? -exact : ter;
  int flags = 0;
  if (v < s->best) {
    s->best = v;
    s->best_step = step;
    s->since_best = s->since_decay = 0;
    return SQ_SCHED_IMPROVED;
  }
  s->since_best++;
  s->since_decay++;
  if (s->decay > 0 && s->decay < 1 && s->since_decay >= s->decay_patience) {
    s->scale *= s->decay;
    s->since_decay = 0;
    flags |= SQ_SCHED_DECAYED;
  }
  if (s->patience > 0 && s->since_best >= s->patience) flags |= SQ_SCHED_STOP;
  return flags;
}
