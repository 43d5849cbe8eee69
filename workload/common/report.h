/* workload/common/report.h - what the workloads' reports share: the
 * bounded text buffer their diagnoses append to, and the opening of a
 * diagnosis of a run that failed (fsdp, parallel): the outcome, the
 * ranks stuck in a collective and the first rank that stopped. */
#ifndef HERD_WORKLOAD_COMMON_REPORT_H
#define HERD_WORKLOAD_COMMON_REPORT_H

#include <stddef.h>

#include <herd/herd.h>

#include "workload/ddp/report.h"

/* Text appended at off into p[len]; what does not fit is dropped. */
typedef struct wl_buf {
    char *p;
    size_t len, off;
} wl_buf_t;

void wl_put(wl_buf_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "outcome: STATUS", what the stuck ranks wait for (ddp_report_stuck),
 * then the first rank with a note in errors (may be NULL) that is not
 * stuck: the others read alike. */
void wl_diag_outcome(wl_buf_t *d, herd_status_t status,
                     const ddp_stuck_t *stuck, int world, char *const *errors);

#endif
