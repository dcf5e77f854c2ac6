/* Where seqcl keeps its on-disk cache (compiled programs, self-check verdicts). */
#ifndef SQ_CORE_PATHS_H
#define SQ_CORE_PATHS_H

#include <stddef.h>

#include <seqcl/seqcl.h>

/* 0 when SEQCL_CACHE=0 disables the disk cache. */
int sq_cache_enabled(void);
/* $SEQCL_CACHE_DIR, else $XDG_CACHE_HOME/seqcl, else $HOME/.cache/seqcl; with
 * create, the folder (and parents) are created. */
seqcl_status sq_cache_dir(char *buf, size_t cap, int create);

#endif
