/* trace/compare.c - match two timelines op by op and summarise the
 * errors. Both sides become sorted key arrays that are merge-joined:
 * collectives by (rank, group, seq), compute by (rank, n-th compute). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "trace/compare.h"

typedef struct cmp_key {
    int cls; /* 0: collective, 1: compute */
    int rank, group;
    uint64_t seq;
    int kind; /* coll index, or HERD_COLL_COUNT for compute */
    double dur_us;
} cmp_key_t;

static int cmp_key_order(const void *a, const void *b)
{
    const cmp_key_t *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls - y->cls;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Keys of the matchable records; compute is numbered per rank in time
 * order (the timeline is sorted by rank, then start). */
static herd_status_t cmp_keys(const trace_timeline_t *tl, cmp_key_t **out,
                              size_t *n, double *e2e_s)
{
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    size_t cnt = trace_timeline_count(tl), k = 0;
    cmp_key_t *keys = malloc((cnt ? cnt : 1) * sizeof(*keys));
    if (!keys)
        return HERD_ERR_NO_MEMORY;
    uint64_t lo = UINT64_MAX, hi = 0, ordinal = 0;
    int last_rank = -1;
    for (size_t i = 0; i < cnt; i++) {
        lo = r[i].start_ns < lo ? r[i].start_ns : lo;
        hi = r[i].end_ns > hi ? r[i].end_ns : hi;
        if (r[i].rank != last_rank)
            ordinal = 0;
        last_rank = r[i].rank;
        int coll = r[i].kind == HERD_TL_COLL;
        if (!coll && r[i].kind != HERD_TL_COMPUTE)
            continue;
        keys[k++] =
            (cmp_key_t){.cls = !coll,
                        .rank = r[i].rank,
                        .group = coll ? r[i].group : 0,
                        .seq = coll ? r[i].seq : ++ordinal,
                        .kind = coll ? (int)r[i].coll : HERD_COLL_COUNT,
                        .dur_us = (double)(r[i].end_ns - r[i].start_ns) / 1e3};
    }
    qsort(keys, k, sizeof(*keys), cmp_key_order);
    *out = keys;
    *n = k;
    *e2e_s = cnt ? (double)(hi - lo) * 1e-9 : 0;
    return HERD_OK;
}

typedef struct cmp_pair {
    int kind;
    double pred_us, meas_us;
} cmp_pair_t;

/* Merge-join the sorted keys into pairs. */
static herd_status_t cmp_join(const cmp_key_t *p, size_t np, const cmp_key_t *m,
                              size_t nm, trace_cmp_t *c, cmp_pair_t **pairs_out)
{
    cmp_pair_t *pairs = malloc((np < nm ? np : nm) * sizeof(*pairs) + 1);
    if (!pairs)
        return HERD_ERR_NO_MEMORY;
    size_t i = 0, j = 0, k = 0;
    while (i < np && j < nm) {
        int o = cmp_key_order(&p[i], &m[j]);
        if (o < 0) {
            c->only_pred++, i++;
        } else if (o > 0) {
            c->only_meas++, j++;
        } else if (p[i].kind != m[j].kind) {
            c->differ++, i++, j++;
        } else {
            pairs[k++] = (cmp_pair_t){p[i].kind, p[i].dur_us, m[j].dur_us};
            i++, j++;
        }
    }
    c->only_pred += np - i;
    c->only_meas += nm - j;
    c->matched = k;
    *pairs_out = pairs;
    return HERD_OK;
}

static void cmp_stats(const cmp_pair_t *pairs, size_t n, trace_cmp_t *c,
                      double *abs_err, double *sgn_err)
{
    for (int kind = 0; kind < TRACE_CMP_KINDS; kind++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (pairs[i].kind != kind || !(pairs[i].meas_us > 0))
                continue;
            double e = (pairs[i].pred_us - pairs[i].meas_us) / pairs[i].meas_us;
            abs_err[k] = fabs(e);
            sgn_err[k++] = e;
        }
        trace_cmp_kind_t *out = &c->kinds[kind];
        out->name = kind < HERD_COLL_COUNT ? herd_coll_name((herd_coll_t)kind)
                                           : "compute";
        out->n = k;
        if (!k)
            continue;
        qsort(abs_err, k, sizeof(double), core_cmp_double);
        qsort(sgn_err, k, sizeof(double), core_cmp_double);
        out->median = core_quantile_sorted(abs_err, k, 0.5);
        out->p95 = core_quantile_sorted(abs_err, k, 0.95);
        out->bias = core_quantile_sorted(sgn_err, k, 0.5);
    }
}

static herd_status_t cmp_write_pairs(const cmp_pair_t *pairs, size_t n,
                                     const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return HERD_ERR_IO;
    }
    int blocks = 0;
    for (int kind = 0; kind < TRACE_CMP_KINDS; kind++) {
        int first = 1;
        for (size_t i = 0; i < n; i++) {
            if (pairs[i].kind != kind)
                continue;
            const char *name = kind < HERD_COLL_COUNT
                                   ? herd_coll_name((herd_coll_t)kind)
                                   : "compute";
            if (first)
                fprintf(f, "%s%s\tpred_us\tmeas_us\n", blocks++ ? "\n\n" : "",
                        name);
            first = 0;
            fprintf(f, "%s\t%.3f\t%.3f\n", name, pairs[i].pred_us,
                    pairs[i].meas_us);
        }
    }
    if (fclose(f)) {
        snprintf(err, errlen, "%s: write failed", path);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}

herd_status_t trace_compare(const trace_timeline_t *pred,
                            const trace_timeline_t *meas, trace_cmp_t *out,
                            const char *pairs_tsv, char *err, size_t errlen)
{
    trace_cmp_t c;
    memset(&c, 0, sizeof(c));
    cmp_key_t *p = NULL, *m = NULL;
    cmp_pair_t *pairs = NULL;
    double *a = NULL, *s = NULL;
    size_t np = 0, nm = 0;
    herd_status_t st = cmp_keys(pred, &p, &np, &c.e2e_pred_s);
    if (!st)
        st = cmp_keys(meas, &m, &nm, &c.e2e_meas_s);
    if (!st)
        st = cmp_join(p, np, m, nm, &c, &pairs);
    if (!st && (!(a = malloc((c.matched + 1) * sizeof(double))) ||
                !(s = malloc((c.matched + 1) * sizeof(double)))))
        st = HERD_ERR_NO_MEMORY;
    if (!st) {
        cmp_stats(pairs, c.matched, &c, a, s);
        c.e2e_err =
            c.e2e_meas_s > 0 ? (c.e2e_pred_s - c.e2e_meas_s) / c.e2e_meas_s : 0;
        if (pairs_tsv)
            st = cmp_write_pairs(pairs, c.matched, pairs_tsv, err, errlen);
    }
    free(s);
    free(a);
    free(pairs);
    free(m);
    free(p);
    if (!st)
        *out = c;
    return st;
}

void trace_compare_print(const trace_cmp_t *c, FILE *f)
{
    fprintf(f, "%-16s %8s %14s %14s %14s\n", "op", "pairs", "median |err|",
            "p95 |err|", "median bias");
    for (int k = 0; k < TRACE_CMP_KINDS; k++)
        if (c->kinds[k].n)
            fprintf(f, "%-16s %8zu %13.1f%% %13.1f%% %+13.1f%%\n",
                    c->kinds[k].name, c->kinds[k].n, c->kinds[k].median * 100,
                    c->kinds[k].p95 * 100, c->kinds[k].bias * 100);
    fprintf(f,
            "matched %zu ops; unmatched: %zu predicted, %zu measured; "
            "%zu differ in kind\n",
            c->matched, c->only_pred, c->only_meas, c->differ);
    fprintf(f, "end to end: predicted %.6f s, measured %.6f s, error %+.1f%%\n",
            c->e2e_pred_s, c->e2e_meas_s, c->e2e_err * 100);
}
