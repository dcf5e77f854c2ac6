/* seqcl: attention-based GRU sequence-to-sequence models on any OpenCL device.
 * This is the one header a program includes. Every call returns a seqcl_status;
 * constructors set their out-pointer to NULL on failure; destructors accept NULL. */
#ifndef SEQCL_SEQCL_H
#define SEQCL_SEQCL_H

#include "status.h"
#include "device.h"
#include "model.h"
#include "train.h"
#include "check.h"

#endif
