/* trace/nccltests_fit.c - alpha-beta fits of an nccl-tests table. A
 * collective's time is about alpha + bus_bytes / beta, but real curves have
 * two regimes (small sizes: a latency floor and small-message protocols;
 * large sizes: the bus bandwidth), so the table is split where two lines fit
 * best. Least squares on relative error: small sizes, whose times are tiny,
 * weigh as much as large ones. */
#include <math.h>
#include <stdio.h>

#include "trace/nccltests.h"

typedef struct fit_pt {
    double x, y; /* bus bytes, seconds */
} fit_pt_t;

/* Fits y = a + g x over pts[lo, hi) with weights 1/y^2; a >= 0, g >= 0.
 * Returns the sum of squared relative errors. */
static double fit_line(const fit_pt_t *pts, size_t lo, size_t hi, double *a,
                       double *g)
{
    double sw = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
    for (size_t i = lo; i < hi; i++) {
        double w = 1.0 / (pts[i].y * pts[i].y);
        sw += w;
        sx += w * pts[i].x;
        sxx += w * pts[i].x * pts[i].x;
        sy += w * pts[i].y;
        sxy += w * pts[i].x * pts[i].y;
    }
    double det = sw * sxx - sx * sx;
    *a = 0;
    *g = 0;
    if (det > 0) {
        *a = (sy * sxx - sx * sxy) / det;
        *g = (sw * sxy - sx * sy) / det;
    }
    if (det <= 0 || *g < 0) { /* flat: latency only */
        *g = 0;
        *a = sy / sw;
    } else if (*a < 0) { /* through the origin: bandwidth only */
        *a = 0;
        *g = sxy / sxx;
    }
    double sse = 0;
    for (size_t i = lo; i < hi; i++) {
        double r = (*a + *g * pts[i].x - pts[i].y) / pts[i].y;
        sse += r * r;
    }
    return sse;
}

static void fit_regime(const fit_pt_t *pts, const trace_ncclt_row_t *rows,
                       const size_t *idx, size_t lo, size_t hi,
                       trace_ncclt_regime_t *r)
{
    double a, g;
    fit_line(pts, lo, hi, &a, &g);
    r->lo = rows[idx[lo]].bytes;
    r->hi = rows[idx[hi - 1]].bytes;
    r->n = hi - lo;
    r->alpha_s = a;
    r->beta_Bps = g > 0 ? 1.0 / g : 0;
    r->max_resid = 0;
    for (size_t i = lo; i < hi; i++) {
        double e = fabs(a + g * pts[i].x - pts[i].y) / pts[i].y;
        if (e > r->max_resid)
            r->max_resid = e;
    }
}

herd_status_t trace_ncclt_fit(const trace_ncclt_table_t *t, int group,
                              trace_ncclt_fit_t *out, char *err,
                              size_t errlen)
{
    if (group < 0 || group >= t->groups) {
        snprintf(err, errlen, "table at line %u has no %s column group",
                 t->line, group ? "in-place" : "out-of-place");
        return HERD_ERR_INVALID_ARG;
    }
    fit_pt_t pts[1024];
    size_t idx[1024], n = 0;
    double factor = trace_ncclt_bus_factor(t->coll, t->nranks), peak = 0;
    for (size_t i = 0; i < t->nrows && n < 1024; i++) {
        const trace_ncclt_row_t *r = &t->rows[i];
        if (r->time_us[group] <= 0 || r->bytes == 0)
            continue;
        pts[n] = (fit_pt_t){(double)r->bytes * factor, r->time_us[group] * 1e-6};
        idx[n++] = i;
        if (r->busbw[group] * 1e9 > peak)
            peak = r->busbw[group] * 1e9;
    }
    if (n < 2) {
        snprintf(err, errlen, "table at line %u: %zu row(s) with a size and "
                 "a time; a fit needs 2 or more", t->line, n);
        return HERD_ERR_INVALID_ARG;
    }
    double a, g, one = fit_line(pts, 0, n, &a, &g), best = one;
    size_t split = 0;
    /* Two regimes of 2+ rows each, when they halve the error: one line
     * through noise is not worth a second. */
    for (size_t k = 2; k + 2 <= n; k++) {
        double a1, g1, a2, g2;
        double sse = fit_line(pts, 0, k, &a1, &g1) + fit_line(pts, k, n, &a2, &g2);
        if (sse < 0.5 * one && sse < best)
            best = sse, split = k;
    }
    trace_ncclt_fit_t f = {.peak_busbw_Bps = peak};
    if (split) {
        fit_regime(pts, t->rows, idx, 0, split, &f.regime[0]);
        fit_regime(pts, t->rows, idx, split, n, &f.regime[1]);
        f.nregimes = 2;
    } else {
        fit_regime(pts, t->rows, idx, 0, n, &f.regime[0]);
        f.nregimes = 1;
    }
    *out = f;
    return HERD_OK;
}
