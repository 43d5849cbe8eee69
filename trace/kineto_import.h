/* trace/kineto_import.h - PyTorch profiler traces to herd's own files: a
 * herd trace that replays the job and the measured timeline (see
 * kineto_convert.c for what is measured and how). */
#ifndef HERD_TRACE_KINETO_IMPORT_H
#define HERD_TRACE_KINETO_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "trace/kineto.h"
#include "trace/timeline.h"
#include "trace/trace.h"

typedef struct kineto_import_opts {
    int ranks_per_node; /* timeline node numbers; 0: one node */
    /* sizes the trace lacks (PyTorch 1.13): the backward's all_reduces in
     * launch order (bytes, DDP's buckets) and the forward's broadcasts
     * (buffer bytes, shared among them) */
    const uint64_t *bucket_bytes;
    size_t nbuckets;
    uint64_t buffer_bytes;
} kineto_import_opts_t;

/* One rank's steps: append its ops to t and/or its records to tl (either
 * may be NULL). Timeline times are relative to `origin` (ns on the rank's
 * clock). */
herd_status_t kineto_convert(const kineto_rank_t *r, const kineto_steps_t *ss,
                             const kineto_import_opts_t *o, uint64_t origin,
                             trace_t *t, trace_timeline_t *tl, char *err,
                             size_t errlen);

/* The job as a herd trace for `world_size` ranks: the lowest traced
 * rank's ops are the SPMD list every rank plays (ranks not traced do what
 * it did); other traced ranks add their own compute times as per-rank
 * variants, or their own op list where their collectives differ.
 * ranks[] sorted by rank. */
herd_status_t kineto_build_trace(const kineto_rank_t *ranks,
                                 const kineto_steps_t *steps, size_t n,
                                 int world_size, const char *name,
                                 const kineto_import_opts_t *o, trace_t **out,
                                 char *err, size_t errlen);

/* The measured timeline of the traced ranks. Clocks: traces with
 * distributedInfo (PyTorch 2.x) share the epoch clock and keep their
 * offsets; otherwise each rank's first step starts at 0. */
herd_status_t kineto_build_timeline(const kineto_rank_t *ranks,
                                    const kineto_steps_t *steps, size_t n,
                                    const kineto_import_opts_t *o,
                                    trace_timeline_t **out, char *err,
                                    size_t errlen);

#endif
