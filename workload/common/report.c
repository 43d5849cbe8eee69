/* workload/common/report.c - the diagnosis buffer and opening the
 * workloads' reports share, and the stream of a timeline record
 * (report.h). */
#include "workload/common/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* The groups a parallel program names first in its labels ("tp ...",
 * "pp act m3", "dp grads b0", "zero3 L4"); 0: none. */
static const char *const stream_groups[] = {"", "tp", "pp", "dp", "zero3"};
#define WL_NGROUPS 5

static int stream_group(const char *label)
{
    for (int g = 1; label && g < WL_NGROUPS; g++) {
        size_t n = strlen(stream_groups[g]);
        if (!strncmp(label, stream_groups[g], n) && label[n] == ' ')
            return g;
    }
    return 0;
}

const char *wl_report_stream(const herd_tl_rec_t *rec, int *order, void *arg)
{
    /* names built once: "tp all_reduce", ...; the CLI is one thread */
    static char names[WL_NGROUPS][HERD_COLL_COUNT][40];
    static int made;
    (void)arg;
    if (!made) {
        for (int g = 0; g < WL_NGROUPS; g++)
            for (int c = 0; c < HERD_COLL_COUNT; c++) {
                snprintf(names[g][c], sizeof(names[g][c]), "%s%s%s",
                         stream_groups[g], g ? " " : "",
                         herd_coll_name((herd_coll_t)c));
            }
        made = 1;
    }
    if (rec->kind == HERD_TL_COMPUTE) {
        const char *l = rec->label ? rec->label : "";
        int data = !strncmp(l, "data", 4) || !strncmp(l, "load", 4);
        *order = data;
        return data ? "data loading" : "compute";
    }
    if (rec->kind != HERD_TL_COLL || (int)rec->coll < 0 ||
        rec->coll >= HERD_COLL_COUNT)
        return NULL;
    /* FSDP's order: all_gather above reduce_scatter above all_reduce;
     * a pipeline's sends and receives run on streams of their own */
    static const int rank_of[] = {
        [HERD_COLL_ALL_GATHER] = 1, [HERD_COLL_REDUCE_SCATTER] = 2,
        [HERD_COLL_ALL_REDUCE] = 3, [HERD_COLL_BROADCAST] = 4,
        [HERD_COLL_SEND] = 5,       [HERD_COLL_RECV] = 6};
    int g = stream_group(rec->label);
    int k = (size_t)rec->coll < sizeof(rank_of) / sizeof(rank_of[0])
                ? rank_of[rec->coll]
                : 0;
    *order = 10 + g * 10 + (k ? k : 9);
    return names[g][rec->coll];
}
