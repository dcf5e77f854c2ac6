/* The learning-rate schedule and the validation bookkeeping of a training run:
 * linear warm-up, decay by a factor when the validation metric has stopped
 * improving, early stopping after `patience` validations without improvement,
 * and which validation was the best (for keep-best). Pure arithmetic on a small
 * state that the checkpoint stores, so a resumed run continues it exactly. */
#ifndef SQ_TRAIN_SCHEDULE_H
#define SQ_TRAIN_SCHEDULE_H

/* What validation is judged by: the teacher-forced loss, exact match (higher
 * is better; 100 minus it is the WER of G2P) or the token edit rate. */
typedef enum sq_metric { SQ_METRIC_LOSS = 0, SQ_METRIC_EXACT = 1, SQ_METRIC_TER = 2 } sq_metric;
/* "loss", "exact", "ter" -> *out; 0, or -1 for another name. */
int sq_metric_parse(const char *name, sq_metric *out);
const char *sq_metric_name(sq_metric m);

typedef struct sq_schedule {
  /* settings */
  double lr;            /* the base rate */
  int warmup;           /* steps of linear warm-up (0: none) */
  double decay;         /* factor in (0, 1) applied on a plateau (0: never) */
  int decay_patience;   /* validations without improvement before a decay (>= 1) */
  double min_lr;        /* the rate never decays below it */
  int patience;         /* stop after this many validations without improvement (0: never) */
  sq_metric metric;
  /* state */
  double scale;         /* the product of the decays so far (1 at the start) */
  double best;          /* the best metric value so far, in "lower is better" form */
  long best_step;       /* the step of that validation (0: none yet) */
  int since_best;       /* validations since the best one */
  int since_decay;      /* validations without improvement since the last decay */
} sq_schedule;

/* Settings filled, state at its start. */
void sq_schedule_start(sq_schedule *s);
/* The rate for step (counted from 0): lr * scale, times (step + 1) / warmup
 * during the warm-up, never below min_lr after a decay. */
double sq_schedule_lr(const sq_schedule *s, long step);

enum { SQ_SCHED_IMPROVED = 1, SQ_SCHED_DECAYED = 2, SQ_SCHED_STOP = 4 };
/* Records a validation after step `step` (steps done) with the three values;
 * returns SQ_SCHED_* flags: the best so far, the rate decayed, patience ran out. */
int sq_schedule_validated(sq_schedule *s, long step, double loss, double exact, double ter);

#endif
