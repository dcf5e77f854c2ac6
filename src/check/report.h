/* The results of `seqcl check`: the device x operation table on a stream, the
 * reproducer lines of failures, and the same results as JSON (written atomically). */
#ifndef SQ_CHECK_REPORT_H
#define SQ_CHECK_REPORT_H

#include <stdio.h>

#include "check/oplist.h"

typedef struct sq_report sq_report;

seqcl_status sq_report_new(uint64_t seed, int quick, sq_report **out);
void sq_report_free(sq_report *r); /* accepts NULL */

void sq_report_header(sq_report *r, FILE *f);
/* A device that could not be opened: one failing row. */
void sq_report_device_error(sq_report *r, FILE *f, const seqcl_device_info *dev,
                            const char *message);
void sq_report_device(sq_report *r, const seqcl_device_info *dev, const char *reference);
/* One table row (printed at once, so long runs show progress). */
void sq_report_row(sq_report *r, FILE *f, const seqcl_device_info *dev, const sq_op_result *res);
/* The failure details and reproducers, then the totals line. */
void sq_report_summary(sq_report *r, FILE *f);
int sq_report_failed(const sq_report *r); /* rows that failed */

/* Writes the JSON document to path through a temporary file and a rename. */
seqcl_status sq_report_write_json(sq_report *r, const char *path);

#endif
