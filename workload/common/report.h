/* workload/common/report.h - what the workloads' reports share: the
 * bounded text buffer their diagnoses append to, the opening of a
 * diagnosis of a run that failed (fsdp, parallel): the outcome, the
 * ranks stuck in a collective and the first rank that stopped; and the
 * stream a timeline record ran on, the rows of a step's Gantt chart. */
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

/* The stream (Gantt row) of a record of a DDP, FSDP or parallel program,
 * a trace_stream_cb: "compute", "data loading" (compute labelled
 * "data..." or "load..."), then one row per collective kind
 * ("all_gather", "reduce_scatter", "all_reduce", "broadcast", "send",
 * "recv", ...), prefixed by the group of a parallel program's label
 * ("tp all_reduce", "dp reduce_scatter", "pp send", "zero3 all_gather");
 * NULL for waits and marks. `order` sorts the rows. */
const char *wl_report_stream(const herd_tl_rec_t *rec, int *order, void *arg);

#endif
