/* trace/sweep_stats.c - turn a sweep's timeline into nccl-tests style
 * rows: the timed calls (label "sweep") are grouped by sequence number
 * across ranks, then consecutive calls of one (algorithm, size) are
 * averaged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "trace/sweep_stats.h"

typedef struct ss_call {
    uint64_t start, end; /* first start, last end over ranks */
    uint64_t count;
    herd_algo_t algo;
    int seen;
} ss_call_t;

static herd_status_t ss_calls(const trace_timeline_t *tl, ss_call_t **out,
                              uint64_t *nseq)
{
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    size_t n = trace_timeline_count(tl);
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == HERD_TL_COLL && r[i].group == 0 && r[i].seq > max)
            max = r[i].seq;
    if (max > (1u << 26))
        return HERD_ERR_OVERFLOW;
    ss_call_t *c = calloc(max + 1, sizeof(*c));
    if (!c)
        return HERD_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        if (r[i].kind != HERD_TL_COLL || r[i].group != 0 || !r[i].label ||
            strcmp(r[i].label, "sweep") || r[i].status != HERD_OK)
            continue;
        ss_call_t *x = &c[r[i].seq];
        if (!x->seen || r[i].start_ns < x->start)
            x->start = r[i].start_ns;
        if (!x->seen || r[i].end_ns > x->end)
            x->end = r[i].end_ns;
        x->count = r[i].count;
        x->algo = r[i].algo;
        x->seen = 1;
    }
    *out = c;
    *nseq = max + 1;
    return HERD_OK;
}

static void ss_finish(trace_sweep_row_t *row, const trace_sweep_t *sw,
                      int world, double total_s)
{
    size_t es = herd_dtype_size(sw->dtype);
    row->bytes = row->count * es;
    row->time_s = total_s / row->calls;
    double b = (double)core_coll_algbw_bytes(sw->coll, row->count, es, world);
    row->algbw = row->time_s > 0 ? b / row->time_s : 0;
    row->busbw = row->algbw * core_coll_busbw_factor(sw->coll, world);
}

herd_status_t trace_sweep_stats(const trace_timeline_t *tl,
                                const trace_sweep_t *sw, int world_size,
                                trace_sweep_row_t **rows, size_t *nrows)
{
    ss_call_t *c;
    uint64_t nseq;
    herd_status_t st = ss_calls(tl, &c, &nseq);
    if (st)
        return st;
    trace_sweep_row_t *out = calloc(nseq ? nseq : 1, sizeof(*out));
    if (!out) {
        free(c);
        return HERD_ERR_NO_MEMORY;
    }
    size_t k = 0;
    double total = 0;
    for (uint64_t s = 0; s < nseq; s++) {
        if (!c[s].seen)
            continue;
        if (k && out[k - 1].algo == c[s].algo &&
            out[k - 1].count == c[s].count) {
            out[k - 1].calls++;
        } else {
            if (k)
                ss_finish(&out[k - 1], sw, world_size, total);
            out[k++] = (trace_sweep_row_t){
                .algo = c[s].algo, .count = c[s].count, .calls = 1};
            total = 0;
        }
        total += (double)(c[s].end - c[s].start) * 1e-9;
    }
    if (k)
        ss_finish(&out[k - 1], sw, world_size, total);
    free(c);
    *rows = out;
    *nrows = k;
    return HERD_OK;
}

void trace_sweep_print(const trace_sweep_row_t *rows, size_t n,
                       const trace_sweep_t *sw, FILE *f)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || rows[i].algo != rows[i - 1].algo)
            fprintf(f,
                    "%s# %s, algorithm %s\n#%12s %12s %8s %12s %10s %10s\n"
                    "#%12s %12s %8s %12s %10s %10s\n",
                    i ? "\n" : "", herd_coll_name(sw->coll),
                    herd_algo_name(rows[i].algo), "size", "count", "type",
                    "time", "algbw", "busbw", "(B)", "(elements)", "", "(us)",
                    "(GB/s)", "(GB/s)");
        fprintf(f, " %12llu %12llu %8s %12.2f %10.2f %10.2f\n",
                (unsigned long long)rows[i].bytes,
                (unsigned long long)rows[i].count, herd_dtype_name(sw->dtype),
                rows[i].time_s * 1e6, rows[i].algbw / 1e9, rows[i].busbw / 1e9);
    }
}

herd_status_t trace_sweep_write_tsv(const trace_sweep_row_t *rows, size_t n,
                                    const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return HERD_ERR_IO;
    }
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || rows[i].algo != rows[i - 1].algo)
            fprintf(f, "%s%s\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\n",
                    i ? "\n\n" : "", herd_algo_name(rows[i].algo));
        fprintf(f, "%s\t%llu\t%.3f\t%.4f\t%.4f\n", herd_algo_name(rows[i].algo),
                (unsigned long long)rows[i].bytes, rows[i].time_s * 1e6,
                rows[i].algbw / 1e9, rows[i].busbw / 1e9);
    }
    if (fclose(f)) {
        snprintf(err, errlen, "%s: write failed", path);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}
