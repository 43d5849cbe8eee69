/* trace/timeline.h - collect the per-op records an engine emits
 * (herd_tl_rec_t) and write them as a Chrome trace event JSON (opens in
 * Perfetto: a process per node, a thread per rank, a slice per op) and as
 * a TSV table for gnuplot; read the JSON back for comparisons.
 *
 * The collector is a herd_timeline_cb and is thread-safe: real engines
 * may call it from progress threads. */
#ifndef HERD_TRACE_TIMELINE_H
#define HERD_TRACE_TIMELINE_H

#include <stddef.h>

#include <herd/timeline.h>

#define TRACE_TL_FORMAT "herd-timeline"
#define TRACE_TL_VERSION 1

typedef struct trace_timeline trace_timeline_t;

herd_status_t trace_timeline_create(trace_timeline_t **out);
void trace_timeline_destroy(trace_timeline_t *tl);

/* herd_timeline_cb: pass with the timeline as the argument. The label is
 * copied. A record that cannot be stored (out of memory) is counted and
 * reported by trace_timeline_status. */
void trace_timeline_collect(const herd_tl_rec_t *rec, void *arg);
herd_status_t trace_timeline_add(trace_timeline_t *tl,
                                 const herd_tl_rec_t *rec);
herd_status_t trace_timeline_status(const trace_timeline_t *tl);

size_t trace_timeline_count(const trace_timeline_t *tl);
/* Records, valid until the next add; labels owned by the timeline. */
const herd_tl_rec_t *trace_timeline_recs(const trace_timeline_t *tl);
/* Order by (rank, start, end, seq): the order every writer uses. */
void trace_timeline_sort(trace_timeline_t *tl);

/* Free-form description stored in the JSON's otherData ("engine":
 * "sim", "source": scenario path). Strings are copied; NULL clears. */
herd_status_t trace_timeline_set_meta(trace_timeline_t *tl, const char *key,
                                      const char *value);
const char *trace_timeline_get_meta(const trace_timeline_t *tl,
                                    const char *key);

/* Writers (sort first for a stable order). */
herd_status_t trace_timeline_write_chrome(const trace_timeline_t *tl,
                                          const char *path, char *err,
                                          size_t errlen);
herd_status_t trace_timeline_write_tsv(const trace_timeline_t *tl,
                                       const char *path, char *err,
                                       size_t errlen);
/* Read a timeline written by trace_timeline_write_chrome (any engine). */
herd_status_t trace_timeline_read_chrome(const char *path,
                                         trace_timeline_t **out, char *err,
                                         size_t errlen);

/* Name of a record as the timeline shows it ("all_reduce", a compute
 * label or "compute", "wait", a marker's label). */
const char *trace_tl_name(const herd_tl_rec_t *rec);
/* "coll", "compute", "wait" or "mark". */
const char *trace_tl_category(herd_tl_kind_t kind);

#endif
