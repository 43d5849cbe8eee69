/* trace/timeline_int.h - the collector's struct, shared by timeline.c and
 * the readers/writers in timeline_io.c. Not a public header. */
#ifndef HERD_TRACE_TIMELINE_INT_H
#define HERD_TRACE_TIMELINE_INT_H

#include <pthread.h>

#include "trace/timeline.h"

#define TL_META_MAX 16

struct trace_timeline {
    pthread_mutex_t mu;
    herd_tl_rec_t *recs;
    size_t n, cap;
    size_t lost;   /* records dropped for lack of memory */
    char **labels; /* interned labels: open addressing, NULL = free */
    size_t nlabels, labels_cap;
    struct {
        char *key, *value;
    } meta[TL_META_MAX];
    size_t nmeta;
};

#endif
