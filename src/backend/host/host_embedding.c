/* The embedding family on the host: the row gather and its backward (rows
 * added into the table's gradient in order). */
#include <string.h>

#include "backend/host/host.h"

seqcl_status sq_host_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                               int ld_out) {
  (void)be;
  const int32_t *id = sq_host_i32(ids);
  const float *tab = sq_host_f32(table);
  float *o = sq_host_f32(out);
  for (int n = 0; n < N; n++)
    memcpy(o + (size_t)n * (size_t)ld_out, tab + (size_t)id[n] * (size_t)D,
           (size_t)D * sizeof(float));
  return SEQCL_OK;
}


seqcl_status sq_host_embedding_bwd(sq_backend *be, int N, int D, sq_ref idsr, sq_ref dyr,
                                    int ld_dy, int pad_id, sq_ref dtr) {
  (void)be;
  const int32_t *ids = sq_host_i32(idsr);
  const float *dy = sq_host_f32(dyr);
  float *dt = sq_host_f32(dtr);
  for (int n = 0; n < N; n++) {
    if (ids[n] == pad_id) continue;
    float *row = dt + (size_t)ids[n] * D;
    const float *src = dy + (size_t)n * ld_dy;
    for (int k = 0; k < D; k++) row[k] += src[k];
  }
  return SEQCL_OK;
}

