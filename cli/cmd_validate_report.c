/* cli/cmd_validate_report.c - predicted against measured for `herd validate`:
 * read the simulator's timeline and the per-rank measured ones, match
 * collectives by (rank, group, sequence), group them by (collective,
 * algorithm, bytes, label) and report medians and relative errors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd_validate.h"
#include "core/stats.h"
#include "trace/timeline.h"

typedef struct rec_key {
    int rank, group;
    uint64_t seq;
    double dur_us;
    const herd_tl_rec_t *rec;
} rec_key_t;

static int cmp_key(const void *a, const void *b)
{
    const rec_key_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Timed collectives of a timeline, sorted by (rank, group, seq). */
static rec_key_t *keys_of(const trace_timeline_t *tl, size_t *n_out)
{
    size_t n = trace_timeline_count(tl), k = 0;
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    rec_key_t *keys = calloc(n ? n : 1, sizeof(*keys));
    for (size_t i = 0; keys && i < n; i++) {
        if (r[i].kind != HERD_TL_COLL ||
            (r[i].label && !strcmp(r[i].label, "warmup")))
            continue;
        keys[k++] = (rec_key_t){r[i].rank, r[i].group, r[i].seq,
                                (r[i].end_ns - r[i].start_ns) / 1e3, &r[i]};
    }
    if (keys)
        qsort(keys, k, sizeof(*keys), cmp_key);
    *n_out = k;
    return keys;
}

static validate_row_t *row_for(validate_rows_t *rows, size_t first,
                               const herd_tl_rec_t *r)
{
    const char *name = herd_coll_name(r->coll);
    const char *algo = herd_algo_name(r->algo);
    const char *label = r->label ? r->label : "";
    for (size_t i = first; i < rows->n; i++) {
        validate_row_t *w = &rows->rows[i];
        if (!strcmp(w->name, name) && !strcmp(w->algo, algo) &&
            w->bytes == r->bytes && !strcmp(w->label, label))
            return w;
    }
    validate_row_t nw;
    memset(&nw, 0, sizeof(nw));
    snprintf(nw.name, sizeof(nw.name), "%s", name);
    snprintf(nw.algo, sizeof(nw.algo), "%s", algo);
    snprintf(nw.label, sizeof(nw.label), "%s", label);
    nw.bytes = r->bytes;
    if (validate_rows_add(rows, &nw) != HERD_OK)
        return NULL;
    return &rows->rows[rows->n - 1];
}

herd_status_t validate_rows_add(validate_rows_t *rows,
                                const validate_row_t *row)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 32;
        validate_row_t *nr = realloc(rows->rows, cap * sizeof(*nr));
        if (!nr)
            return HERD_ERR_NO_MEMORY;
        rows->rows = nr;
        rows->cap = cap;
    }
    rows->rows[rows->n++] = *row;
    return HERD_OK;
}

void validate_rows_stats(const validate_row_t *const *rows, size_t n,
                         double *median, double *p95, double *max)
{
    double *errs = malloc((n ? n : 1) * sizeof(double));
    size_t k = 0;
    for (size_t i = 0; errs && i < n; i++)
        if (rows[i]->n)
            errs[k++] = fabs(rows[i]->err);
    double med = 0, p = 0, mx = 0;
    if (errs && k) {
        med = core_median(errs, k);
        p = core_quantile_sorted(errs, k, 0.95);
        mx = errs[k - 1];
    }
    free(errs);
    *median = med;
    *p95 = p;
    *max = mx;
}

/* Pairs (pred, meas) per row, then medians. pairs holds 2 doubles per
 * matched record, indexed like the predicted keys. */
static herd_status_t group_pairs(const rec_key_t *pk, size_t np,
                                 const rec_key_t *mk, size_t nm,
                                 validate_rows_t *rows)
{
    size_t first = rows->n;
    int *row_of = malloc((np ? np : 1) * sizeof(int));
    double *pp = malloc((np ? np : 1) * sizeof(double));
    double *mm = malloc((np ? np : 1) * sizeof(double));
    herd_status_t st = row_of && pp && mm ? HERD_OK : HERD_ERR_NO_MEMORY;
    size_t j = 0, npairs = 0;
    for (size_t i = 0; st == HERD_OK && i < np; i++) {
        while (j < nm && cmp_key(&mk[j], &pk[i]) < 0)
            j++;
        if (j == nm || cmp_key(&mk[j], &pk[i]) != 0 ||
            mk[j].rec->coll != pk[i].rec->coll)
            continue;
        validate_row_t *w = row_for(rows, first, pk[i].rec);
        if (!w) {
            st = HERD_ERR_NO_MEMORY;
            break;
        }
        row_of[npairs] = (int)(w - rows->rows);
        pp[npairs] = pk[i].dur_us;
        mm[npairs++] = mk[j].dur_us;
    }
    double *tmp = malloc((npairs ? npairs : 1) * sizeof(double));
    for (size_t r = first; st == HERD_OK && tmp && r < rows->n; r++) {
        validate_row_t *w = &rows->rows[r];
        size_t k = 0;
        for (size_t i = 0; i < npairs; i++)
            if (row_of[i] == (int)r)
                tmp[k++] = pp[i];
        w->pred_us = core_median_upper(tmp, k);
        w->n = k;
        k = 0;
        for (size_t i = 0; i < npairs; i++)
            if (row_of[i] == (int)r)
                tmp[k++] = mm[i];
        w->meas_us = core_median_upper(tmp, k); /* sorted tmp */
        w->meas_p10_us = core_quantile_sorted(tmp, k, 0.1);
        w->meas_p90_us = core_quantile_sorted(tmp, k, 0.9);
        w->err = w->meas_us > 0 ? (w->pred_us - w->meas_us) / w->meas_us : 0;
    }
    free(tmp);
    free(row_of);
    free(pp);
    free(mm);
    return st;
}

static int is_step_mark(const herd_tl_rec_t *r)
{
    return r->kind == HERD_TL_MARK && r->label && !strcmp(r->label, "step");
}

/* From the first record (from_step: the first "step" mark, when there is
 * one) to the last end. */
static double span_s(const trace_timeline_t *tl, int from_step)
{
    size_t n = trace_timeline_count(tl);
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    uint64_t lo = UINT64_MAX, lo_step = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].start_ns < lo)
            lo = r[i].start_ns;
        if (is_step_mark(&r[i]) && r[i].start_ns < lo_step)
            lo_step = r[i].start_ns;
        if (r[i].end_ns > hi)
            hi = r[i].end_ns;
    }
    if (from_step && lo_step != UINT64_MAX)
        lo = lo_step;
    return n && hi > lo ? (hi - lo) * 1e-9 : 0;
}

/* Mean interval between a rank's "step" marks (DDP and replayed steps),
 * median over ranks; 0 without two marks. The first interval holds the
 * constructor's broadcasts and the single-bucket iteration, so it is
 * left out when there are three marks or more. */
static double step_s(const trace_timeline_t *tl, int p)
{
    size_t n = trace_timeline_count(tl);
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    double *per = calloc((size_t)(p > 0 ? p : 1), sizeof(double));
    int k = 0;
    for (int rank = 0; per && rank < p; rank++) {
        uint64_t t[3] = {0, 0, 0};
        int cnt = 0;
        for (size_t i = 0; i < n; i++)
            if (r[i].rank == rank && is_step_mark(&r[i])) {
                if (cnt == 1)
                    t[1] = r[i].start_ns;
                if (cnt == 0)
                    t[0] = r[i].start_ns;
                t[2] = r[i].start_ns;
                cnt++;
            }
        if (cnt >= 3)
            per[k++] = (t[2] - t[1]) * 1e-9 / (cnt - 2);
        else if (cnt == 2)
            per[k++] = (t[2] - t[0]) * 1e-9;
    }
    double med = per ? core_median_upper(per, (size_t)k) : 0;
    free(per);
    return med;
}

/* Merge the measured per-rank timelines into one. */
static herd_status_t read_measured(const char *dir, int p,
                                   trace_timeline_t **out, char *err,
                                   size_t errlen)
{
    trace_timeline_t *all = NULL;
    herd_status_t st = trace_timeline_create(&all);
    for (int r = 0; st == HERD_OK && r < p; r++) {
        char path[1024];
        trace_timeline_t *one = NULL;
        snprintf(path, sizeof(path), "%s/timeline-rank%d.json", dir, r);
        st = trace_timeline_read_chrome(path, &one, err, errlen);
        size_t n = st == HERD_OK ? trace_timeline_count(one) : 0;
        const herd_tl_rec_t *recs =
            st == HERD_OK ? trace_timeline_recs(one) : NULL;
        for (size_t i = 0; st == HERD_OK && i < n; i++)
            st = trace_timeline_add(all, &recs[i]);
        trace_timeline_destroy(one);
    }
    if (st != HERD_OK) {
        trace_timeline_destroy(all);
        return st;
    }
    *out = all;
    return HERD_OK;
}

herd_status_t validate_collect(const char *pred_json, const char *meas_dir,
                               int p, int from_step, validate_rows_t *rows,
                               double e2e[4], char *err, size_t errlen)
{
    trace_timeline_t *pred = NULL, *meas = NULL;
    rec_key_t *pk = NULL, *mk = NULL;
    size_t np = 0, nm = 0;
    herd_status_t st =
        trace_timeline_read_chrome(pred_json, &pred, err, errlen);
    if (st == HERD_OK)
        st = read_measured(meas_dir, p, &meas, err, errlen);
    if (st == HERD_OK) {
        pk = keys_of(pred, &np);
        mk = keys_of(meas, &nm);
        st = pk && mk ? group_pairs(pk, np, mk, nm, rows) : HERD_ERR_NO_MEMORY;
    }
    if (st == HERD_OK) {
        e2e[0] = span_s(pred, from_step);
        e2e[1] = span_s(meas, from_step);
        e2e[2] = step_s(pred, p);
        e2e[3] = step_s(meas, p);
    }
    free(pk);
    free(mk);
    trace_timeline_destroy(pred);
    trace_timeline_destroy(meas);
    return st;
}

static void fmt_size(unsigned long long b, char *buf, size_t len)
{
    if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        snprintf(buf, len, "%llu MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%llu KiB", b >> 10);
    else
        snprintf(buf, len, "%llu B", b);
}

int validate_row_in_spread(const validate_row_t *w)
{
    return w->n && w->pred_us >= w->meas_p10_us && w->pred_us <= w->meas_p90_us;
}

/* Halving-doubling rows measured more than 10 % slower than predicted get
 * a note on why that happens on TCP and what the model leaves out. */
static void rhd_note(FILE *f, const validate_rows_t *rows)
{
    size_t slow = 0;
    for (size_t i = 0; i < rows->n; i++)
        slow += rows->rows[i].n && !strcmp(rows->rows[i].algo, "rhd") &&
                rows->rows[i].err < -0.10;
    if (slow)
        fprintf(f,
                "\n%zu halving-doubling (rhd) row%s measured more than 10%% "
                "slower than predicted. Each of its exchanges sends both "
                "directions of one TCP connection at once. Through a deep "
                "queue such exchanges slow down when the windows restart "
                "after idle (Linux's net.ipv4.tcp_slow_start_after_idle; "
                "`--slow-start-after-idle off` turns it off on the testbed) "
                "or stay as large as earlier traffic left them; herd's "
                "network model has no windows (docs/testbed.md, \"Slow "
                "start after idle\").\n",
                slow, slow == 1 ? "" : "s");
}

void validate_write_report(FILE *f, const char *scenario,
                           const validate_rows_t *rows, const char *setup,
                           double *median_out, double *p95_out)
{
    const validate_row_t **all = malloc((rows->n ? rows->n : 1) * sizeof(*all));
    size_t k = 0, in = 0;
    fprintf(f, "# herd validate: %s\n\n%s\n\n", scenario, setup);
    fprintf(f, "| collective | algorithm | size | label | n | predicted (ms) "
               "| measured (ms) | measured p10 - p90 (ms) | error |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < rows->n; i++) {
        const validate_row_t *w = &rows->rows[i];
        char size[32];
        fmt_size(w->bytes, size, sizeof(size));
        fprintf(f,
                "| %s | %s | %s | %s | %zu | %.3f | %.3f | %.3f - %.3f "
                "| %+.1f%% |\n",
                w->name, w->algo, size, w->label, w->n, w->pred_us / 1e3,
                w->meas_us / 1e3, w->meas_p10_us / 1e3, w->meas_p90_us / 1e3,
                w->err * 100);
        if (all && w->n)
            all[k++] = w;
        in += validate_row_in_spread(w);
    }
    double med = 0, p95 = 0, mx = 0;
    validate_rows_stats(all, all ? k : 0, &med, &p95, &mx);
    free(all);
    fprintf(f,
            "\nOver %zu rows: median |error| %.1f%%, p95 |error| %.1f%%; "
            "%zu predicted within the measured p10 - p90.\n",
            k, med * 100, p95 * 100, in);
    rhd_note(f, rows);
    *median_out = med;
    *p95_out = p95;
}
