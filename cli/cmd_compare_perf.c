/* cli/cmd_compare_perf.c - `herd compare` for nccl-tests style tables: a
 * `herd perf` prediction (its stdout saved to a file) against an nccl-tests
 * log (or another herd perf run), size by size: time and busbw of both, the
 * relative error, and a summary (median and max |error|, median signed
 * error). Rows match by collective, size, type and reduction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/stats.h"
#include "trace/nccltests.h"

#define CP_SNIFF_BYTES (1u << 20)

int cli_compare_is_perf_table(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char *buf = malloc(CP_SNIFF_BYTES);
    size_t n = buf ? fread(buf, 1, CP_SNIFF_BYTES, f) : 0;
    fclose(f);
    /* JSON (a timeline, a profiler trace) is never a table */
    size_t i = 0;
    while (i < n && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\t' ||
                     buf[i] == '\r'))
        i++;
    int yes = n && i < n && buf[i] != '{' && buf[i] != '[' &&
              trace_ncclt_sniff(buf, n);
    free(buf);
    return yes;
}

static int cp_same_row(const trace_ncclt_table_t *ta,
                       const trace_ncclt_row_t *a,
                       const trace_ncclt_table_t *tb,
                       const trace_ncclt_row_t *b)
{
    if (ta->have_coll && tb->have_coll && ta->coll != tb->coll)
        return 0;
    if (a->bytes != b->bytes)
        return 0;
    herd_dtype_t da, db;
    if (herd_dtype_parse(a->type, &da) == HERD_OK &&
        herd_dtype_parse(b->type, &db) == HERD_OK && da != db)
        return 0;
    /* "none" and "sum" are nccl-tests' and herd's words for gathers */
    herd_op_t oa, ob;
    if (herd_op_parse(a->redop, &oa) == HERD_OK &&
        herd_op_parse(b->redop, &ob) == HERD_OK && oa != ob)
        return 0;
    return 1;
}

static const char *cp_coll(const trace_ncclt_table_t *t)
{
    return t->have_coll ? herd_coll_name(t->coll) : "collective unknown";
}

/* Prints the matched rows; returns how many matched. */
static size_t cp_rows(const trace_ncclt_t *pred, const trace_ncclt_t *meas,
                      int group, double *err, size_t cap, double *worst_size)
{
    size_t n = 0;
    double worst = -1;
    printf("# %12s %14s %12s %12s %8s %11s %11s\n", "size (B)", "coll",
           "pred (us)", "meas (us)", "error", "pred busbw", "meas busbw");
    for (size_t tp = 0; tp < pred->ntables; tp++) {
        const trace_ncclt_table_t *a = &pred->tables[tp];
        for (size_t i = 0; i < a->nrows; i++) {
            const trace_ncclt_row_t *ra = &a->rows[i];
            for (size_t tm = 0; tm < meas->ntables; tm++) {
                const trace_ncclt_table_t *b = &meas->tables[tm];
                int g = group < b->groups ? group : 0;
                const trace_ncclt_row_t *rb = NULL;
                for (size_t j = 0; j < b->nrows && !rb; j++)
                    if (cp_same_row(a, ra, b, &b->rows[j]))
                        rb = &b->rows[j];
                if (!rb || rb->time_us[g] <= 0)
                    continue;
                double e = (ra->time_us[0] - rb->time_us[g]) / rb->time_us[g];
                printf("  %12llu %14s %12.2f %12.2f %+7.1f%% %11.2f %11.2f\n",
                       (unsigned long long)ra->bytes,
                       a->have_coll ? herd_coll_name(a->coll) : cp_coll(b),
                       ra->time_us[0], rb->time_us[g], e * 100, ra->busbw[0],
                       rb->busbw[g]);
                if (n < cap)
                    err[n] = e;
                if (fabs(e) > worst)
                    worst = fabs(e), *worst_size = (double)ra->bytes;
                n++;
                break;
            }
        }
    }
    return n < cap ? n : cap;
}

int cli_compare_perf(const char *pred_path, const char *meas_path, int in_place)
{
    char err[1024];
    trace_ncclt_t pred = {0}, meas = {0};
    if (trace_ncclt_load(pred_path, &pred, err, sizeof(err)) ||
        trace_ncclt_load(meas_path, &meas, err, sizeof(err))) {
        fprintf(stderr, "herd compare: %s\n", err);
        trace_ncclt_free(&pred);
        return 2;
    }
    int group = in_place ? TRACE_NCCLT_INPLACE : TRACE_NCCLT_OOP;
    printf("# herd compare: predicted %s (%s, %d ranks) against measured %s "
           "(%s, %d ranks, %s)\n",
           pred_path, cp_coll(&pred.tables[0]), pred.tables[0].nranks,
           meas_path, cp_coll(&meas.tables[0]), meas.tables[0].nranks,
           meas.tables[0].groups > 1 && in_place ? "in-place" : "out-of-place");
    if (pred.tables[0].nranks && meas.tables[0].nranks &&
        pred.tables[0].nranks != meas.tables[0].nranks)
        fprintf(stderr,
                "herd compare: warning: the prediction is for %d "
                "ranks, the measurement ran on %d\n",
                pred.tables[0].nranks, meas.tables[0].nranks);
    double errs[4096], worst_size = 0;
    size_t n = cp_rows(&pred, &meas, group, errs, 4096, &worst_size);
    int rc = 0;
    if (n == 0) {
        fprintf(stderr,
                "herd compare: no size matched between %s and %s "
                "(same collective, size, type and reduction needed)\n",
                pred_path, meas_path);
        rc = 1;
    } else {
        double abs_e[4096];
        for (size_t i = 0; i < n; i++)
            abs_e[i] = fabs(errs[i]);
        double abs_med = core_median_upper(abs_e, n);
        double med = core_median_upper(errs, n);
        printf("summary: %zu size(s) matched, median |error| %.1f%%, max "
               "%.1f%% (at %.0f B), median signed error %+.1f%%\n",
               n, abs_med * 100, abs_e[n - 1] * 100, worst_size, med * 100);
    }
    trace_ncclt_free(&pred);
    trace_ncclt_free(&meas);
    return rc;
}
