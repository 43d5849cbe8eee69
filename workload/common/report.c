/* workload/common/report.c - the diagnosis buffer and opening the
 * workloads' reports share (report.h). */
#include "workload/common/report.h"

#include <stdarg.h>
#include <stdio.h>

void wl_put(wl_buf_t *d, const char *fmt, ...)
{
    if (d->off >= d->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->p + d->off, d->len - d->off, fmt, ap);
    va_end(ap);
    d->off += n > 0 ? (size_t)n : 0;
}

void wl_diag_outcome(wl_buf_t *d, herd_status_t status,
                     const ddp_stuck_t *stuck, int world, char *const *errors)
{
    wl_put(d, "outcome: %s\n", herd_status_string(status));
    d->off += ddp_report_stuck(stuck, world, d->p + d->off,
                               d->off < d->len ? d->len - d->off : 0);
    for (int r = 0; errors && r < world; r++)
        if (errors[r] && !stuck[r].valid) {
            wl_put(d, "rank %d stopped: %s\n", r, errors[r]);
            break;
        }
}
