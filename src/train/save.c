/* Saving a trained model as a directory `seqcl decode` reads: config.json and
 * model.safetensors with the SPEC §2 tensor names, in place or as a whole new
 * folder swapped in (save_dir.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "model/safetensors.h"
#include "model/tokens.h"
#include "train/save_dir.h"
#include "train/text_data.h"
#include "train/tmodel.h"

seqcl_status sq_tlayout_save(seqcl_ctx *ctx, const sq_tlayout *L, const float *params,
                             const char *dir) {
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return sq_fail(ctx, SEQCL_ERR_IO, "training: cannot create model directory %s: %s", dir,
                   strerror(errno));
  size_t cap = strlen(dir) + 32;
  char *path = malloc(cap);
  if (!path) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "training: out of host memory");
  char *json = NULL;
  seqcl_status st = sq_config_to_json(&L->cfg, &json);
  if (st == SEQCL_OK) {
    snprintf(path, cap, "%s/config.json", dir);
    st = sq_file_write_line(ctx, path, json, "training");
  }
  free(json);
  if (st == SEQCL_OK) {
    sq_st_out t[SQ_TPARAM_MAX];
    for (int i = 0; i < L->nparams; i++) {
      const sq_tparam *p = &L->p[i];
      memset(&t[i], 0, sizeof t[i]);
      t[i].name = p->name;
      t[i].ndim = p->ndim;
      t[i].shape[0] = p->shape[0];
      t[i].shape[1] = p->shape[1];
      t[i].data = params + p->off;
    }
    snprintf(path, cap, "%s/model.safetensors", dir);
    st = sq_st_write(path, t, (size_t)L->nparams);
  }
  if (st == SEQCL_OK && L->vocab[0]) st = sq_train_text_save(ctx, L->vocab, dir);
  free(path);
  return st;
}

seqcl_status sq_model_dir_save(seqcl_ctx *ctx, const sq_tlayout *L, const float *params,
                               const char *dir_in, const sq_save_plan *plan, int keep_checkpoint) {
  char *dir = NULL;
  SQ_TRY(sq_path_resolve(dir_in, &dir));
  struct stat sb;
  const int exists = stat(dir, &sb) == 0;
  seqcl_status st;
  if (exists && !plan->replace) {
    st = sq_tlayout_save(ctx, L, params, dir);
  } else {
    char *tmp = NULL;
    st = sq_dir_make_temp(dir, &tmp);
    if (st == SEQCL_OK) st = sq_tlayout_save(ctx, L, params, tmp);
    if (st == SEQCL_OK)
      st = sq_dir_replace(tmp, dir, keep_checkpoint ? "checkpoint" : NULL);
    else if (tmp)
      sq_dir_remove_tree(tmp);
    free(tmp);
    if (st != SEQCL_OK) st = sq_fail_wrap(ctx, st, "training: saving the model");
  }
  free(dir);
  return st;
}
