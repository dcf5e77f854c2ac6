/* The one name table of the attention score (backend.h, SQ_SCORE_TABLE). */
#include <string.h>

#include "backend/backend.h"

#define SQ_SCORE_NAME_(kind, name) [kind] = name,
const char *const sq_score_names[SQ_SCORE_COUNT] = {SQ_SCORE_TABLE(SQ_SCORE_NAME_)};
#undef SQ_SCORE_NAME_

int sq_score_parse(const char *name, sq_score *out) {
  for (int k = 0; name && k < SQ_SCORE_COUNT; k++)
    if (!strcmp(name, sq_score_names[k])) {
      *out = (sq_score)k;
      return 0;
    }
  return -1;
}
