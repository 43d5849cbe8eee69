/* trace/plot_wl.c - the data and scripts of the workload plots
 * (plot_wl.h): a sweep's step time and exposed communication against the
 * swept knob, and the memory per rank stacked by component. The Gantt
 * chart of one step is in plot_step.c.
 *
 * The .dat files are tab-separated with `#` comment lines, the .gp files
 * a preamble of variables followed by a script of plots/: what the plot
 * marks (best, ties, layouts that do not fit) is in the data, so a test
 * can read it back without gnuplot, and a user can re-plot. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/plot_wl.h"
#include "trace/plot_wl_int.h"

void plot_gp_string(FILE *f, const char *s)
{
    /* single quotes: gnuplot reads no escapes there but '' */
    fputc('\'', f);
    for (; s && *s; s++) {
        if (*s == '\'')
            fputs("''", f);
        else
            fputc(*s == '\n' || *s == '\t' ? ' ' : *s, f);
    }
    fputc('\'', f);
}

void plot_gp_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("NaN", f); /* gnuplot's name; C prints "nan" */
}

void plot_dat_field(FILE *f, const char *s)
{
    if (!s || !*s) {
        fputc('-', f);
        return;
    }
    for (; *s; s++)
        fputc(*s == '\n' || *s == '\t' ? ' ' : *s, f);
}

herd_status_t plot_open(const char *dir, const char *name, const char *ext,
                        FILE **out, char *err, size_t errlen)
{
    char path[4096 + 256];
    snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return HERD_ERR_IO;
    }
    *out = f;
    return HERD_OK;
}

herd_status_t plot_close(FILE *f, const char *dir, const char *name,
                         const char *ext, char *err, size_t errlen)
{
    if (ferror(f) | fclose(f)) {
        snprintf(err, errlen, "cannot write %s/%s.%s", dir, name, ext);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}

herd_status_t trace_plot_write_gp(const char *dir, const char *name,
                                  const char *preamble, const char *plots_dir,
                                  const char *script, char *err, size_t errlen)
{
    char path[4096 + 256];
    snprintf(path, sizeof(path), "%s/%s", plots_dir, script);
    FILE *in = fopen(path, "r"), *f = NULL;
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HERD_ERR_NOT_FOUND;
    }
    herd_status_t st = plot_open(dir, name, "gp", &f, err, errlen);
    if (st == HERD_OK) {
        fprintf(f,
                "# %s.gp - written by herd from plots/%s; re-plot with\n"
                "#   cd <this folder> && gnuplot %s.gp\n"
                "# (writes %s.png and %s.svg from %s.dat)\n",
                name, script, name, name, name, name);
        fputs(preamble, f);
        fputs("\n# ---- plots/", f);
        fputs(script, f);
        fputs(" ----\n", f);
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
            fwrite(buf, 1, n, f);
        st = plot_close(f, dir, name, "gp", err, errlen);
    }
    fclose(in);
    return st;
}

static int is_number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && !*end && !errno && isfinite(*v);
}

trace_axis_kind_t trace_plot_axis_kind(const char *const *vals, int n)
{
    double lo = HUGE_VAL, hi = -HUGE_VAL, v;
    for (int i = 0; i < n; i++) {
        if (!is_number(vals[i], &v))
            return TRACE_AXIS_CAT;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    return n > 1 && lo > 0 && hi / lo >= 16 ? TRACE_AXIS_LOG : TRACE_AXIS_LIN;
}

/* ---- sweep ------------------------------------------------------------ */

/* The series a combination belongs to: its value indexes on the axes
 * after the first, mixed-radix (the last fastest, as the sweep orders). */
static int series_of(const trace_sweep_plot_t *p, int c)
{
    int s = 0;
    for (int ax = 1; ax < p->naxes; ax++)
        s = s * p->nvals[ax] + p->vidx[c * p->naxes + ax];
    return s;
}

/* "pp=2, zero_stage=1": the values of series s (short keys). */
static void series_name(const trace_sweep_plot_t *p, int s, char *buf,
                        size_t len)
{
    int idx[16] = {0};
    for (int ax = p->naxes - 1; ax >= 1; ax--) {
        idx[ax] = s % p->nvals[ax];
        s /= p->nvals[ax];
    }
    size_t o = 0;
    buf[0] = '\0';
    for (int ax = 1; ax < p->naxes && o < len; ax++) {
        const char *k = strrchr(p->keys[ax], '.');
        o += (size_t)snprintf(buf + o, len - o, "%s%s=%s", ax > 1 ? ", " : "",
                              k ? k + 1 : p->keys[ax], p->vals[ax][idx[ax]]);
    }
}

/* Axis-0 positions: the value, or its index on a categorical axis. */
static void axis_x(const trace_sweep_plot_t *p, trace_axis_kind_t kind,
                   double *x, int *order)
{
    int n = p->nvals[0];
    for (int i = 0; i < n; i++) {
        if (kind == TRACE_AXIS_CAT || !is_number(p->vals[0][i], &x[i]))
            x[i] = i;
        order[i] = i;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[order[j]] < x[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

static void sweep_dat(const trace_sweep_plot_t *p, const double *x,
                      const int *order, int nseries, FILE *f)
{
    fprintf(f,
            "# herd sweep of %s: step time and exposed communication "
            "against %s\n",
            p->title, p->keys[0]);
    fprintf(f, "# one block per series (the values of the other keys), "
               "separated by two blank lines\n");
    fprintf(f, "# x\tvalue\tstep_ms\texposed_ms\tcomm_ms\tok\tfits\twithin"
               "\tbest\tcurrent\n");
    for (int s = 0; s < nseries; s++) {
        char name[512];
        series_name(p, s, name, sizeof(name));
        fprintf(f, "%s# series %d: %s\n", s ? "\n\n" : "", s,
                p->naxes > 1 ? name : "all");
        for (int i = 0; i < p->nvals[0]; i++)
            for (int c = 0; c < p->npts; c++) {
                const trace_sweep_pt_t *pt = &p->pts[c];
                if (p->vidx[pt->combo * p->naxes] != order[i] ||
                    series_of(p, pt->combo) != s)
                    continue;
                fprintf(f, "%.17g\t", x[order[i]]);
                plot_dat_field(f, p->vals[0][order[i]]);
                if (pt->ok)
                    fprintf(f, "\t%.6f\t%.6f\t%.6f", pt->step_ms,
                            pt->exposed_ms, pt->comm_ms);
                else
                    fprintf(f, "\tNaN\tNaN\tNaN");
                fprintf(f, "\t%d\t%d\t%d\t%d\t%d\n", pt->ok, pt->fits,
                        pt->within, pt->best, pt->current);
            }
    }
}

static void sweep_preamble(const trace_sweep_plot_t *p, const char *name,
                           trace_axis_kind_t kind, const double *x, int nseries,
                           FILE *f)
{
    const trace_sweep_pt_t *best = NULL, *cur = NULL;
    int unfit = 0, failed = 0;
    for (int c = 0; c < p->npts; c++) {
        best = p->pts[c].best ? &p->pts[c] : best;
        cur = p->pts[c].current ? &p->pts[c] : cur;
        unfit |= p->pts[c].ok && !p->pts[c].fits;
        failed |= !p->pts[c].ok;
    }
    fprintf(f, "data = '%s.dat'\nout = '%s'\nttl = ", name, name);
    char t[1024];
    snprintf(t, sizeof(t), "%s: predicted step time vs %s", p->title,
             p->keys[0]);
    plot_gp_string(f, t);
    fprintf(f, "\nxlab = ");
    plot_gp_string(f, p->keys[0]);
    fprintf(f, "\nlogx = %d\ncat = %d\nnx = %d\ntol = %g\n",
            kind == TRACE_AXIS_LOG, kind == TRACE_AXIS_CAT, p->nvals[0],
            p->tolerance);
    if (best) {
        char what[512];
        int bi = p->vidx[best->combo * p->naxes];
        snprintf(what, sizeof(what), "%s", p->vals[0][bi]);
        if (p->naxes > 1) {
            char sname[400];
            const char *k = strrchr(p->keys[0], '.');
            series_name(p, series_of(p, best->combo), sname, sizeof(sname));
            snprintf(what, sizeof(what), "%s=%s, %s", k ? k + 1 : p->keys[0],
                     p->vals[0][bi], sname);
        }
        fprintf(f, "best_x = %.17g\nbest_y = %.6f\nbest_text = ", x[bi],
                best->step_ms);
        plot_gp_string(f, what);
        fprintf(f, "\n");
    } else {
        fprintf(f, "best_x = NaN\nbest_y = NaN\nbest_text = ''\n");
    }
    /* the scenario's value: a line on a one-key sweep, a square otherwise */
    fprintf(f, "cur_x = ");
    plot_gp_number(f, cur ? x[p->vidx[cur->combo * p->naxes]] : NAN);
    fputc('\n', f);
    fprintf(f, "have_unfit = %d\nhave_failed = %d\ntime_only = %d\nmem_key = ",
            unfit, failed, p->time_only);
    plot_gp_string(f, p->mem_key ? p->mem_key : "the memory");
    fprintf(f, "\nnser = %d\narray ser[%d]\n", nseries, nseries);
    for (int s = 0; s < nseries; s++) {
        char sname[512];
        series_name(p, s, sname, sizeof(sname));
        fprintf(f, "ser[%d] = ", s + 1);
        plot_gp_string(f, sname);
        fputc('\n', f);
    }
    /* a tick at every swept value, labelled with its text */
    fprintf(f, "set xtics (");
    for (int i = 0; i < p->nvals[0]; i++) {
        fprintf(f, "%s", i ? ", " : "");
        plot_gp_string(f, p->vals[0][i]);
        fprintf(f, " %.17g", x[i]);
    }
    fprintf(f, ")\n");
}

herd_status_t trace_plot_sweep(const trace_sweep_plot_t *p, const char *dir,
                               const char *name, const char *plots_dir,
                               char *err, size_t errlen)
{
    if (p->naxes < 1 || p->naxes > 16 || p->nvals[0] < 1)
        return HERD_ERR_INVALID_ARG;
    int nseries = 1, n = p->nvals[0];
    for (int ax = 1; ax < p->naxes; ax++)
        nseries *= p->nvals[ax];
    double *x = calloc((size_t)n, sizeof(*x));
    int *order = calloc((size_t)n, sizeof(*order));
    char *pre = NULL;
    size_t prelen = 0;
    FILE *f = NULL, *m = NULL;
    herd_status_t st = HERD_ERR_NO_MEMORY;
    if (!x || !order)
        goto cleanup;
    trace_axis_kind_t kind =
        trace_plot_axis_kind((const char *const *)p->vals[0], n);
    axis_x(p, kind, x, order);
    st = plot_open(dir, name, "dat", &f, err, errlen);
    if (st != HERD_OK)
        goto cleanup;
    sweep_dat(p, x, order, nseries, f);
    st = plot_close(f, dir, name, "dat", err, errlen);
    if (st != HERD_OK)
        goto cleanup;
    st = HERD_ERR_NO_MEMORY;
    if (!(m = open_memstream(&pre, &prelen)))
        goto cleanup;
    sweep_preamble(p, name, kind, x, nseries, m);
    if (fclose(m))
        goto cleanup;
    st = trace_plot_write_gp(dir, name, pre, plots_dir, "wl_sweep.gp", err,
                             errlen);
cleanup:
    free(pre);
    free(order);
    free(x);
    return st;
}

/* ---- memory ----------------------------------------------------------- */

static const char *const part_default[TRACE_MEM_NPARTS] = {
    "parameters", "gradients", "optimizer state", "unsharded parameters",
    "activations"};

static void memory_preamble(const trace_mem_plot_t *p, const char *name,
                            double unit, const char *uname, FILE *f)
{
    int shown[TRACE_MEM_NPARTS], ns = 0, have_step = 0;
    for (int k = 0; k < TRACE_MEM_NPARTS; k++) {
        int any = 0;
        for (int b = 0; b < p->nbars; b++)
            any |= p->bars[b].bytes[k] > 0;
        if (any)
            shown[ns++] = k;
    }
    for (int b = 0; b < p->nbars; b++)
        have_step |= p->bars[b].step_ms >= 0 && p->bars[b].ok;
    fprintf(f, "data = '%s.dat'\nout = '%s'\nttl = ", name, name);
    plot_gp_string(f, p->title);
    fprintf(f, "\nxlab = ");
    plot_gp_string(f, p->xlabel ? p->xlabel : "");
    fprintf(f, "\nnote = ");
    plot_gp_string(f, p->note ? p->note : "");
    fprintf(f, "\nunit = '%s'\nlim = %.6f\nnbars = %d\nhave_step = %d\n", uname,
            p->limit_bytes > 0 ? p->limit_bytes / unit : 0.0, p->nbars,
            have_step);
    /* the parts drawn, by their .dat column (3 = parameters) */
    fprintf(f, "nparts = %d\narray pcol[%d]\narray pname[%d]\n", ns,
            ns ? ns : 1, ns ? ns : 1);
    for (int i = 0; i < ns; i++) {
        const char *pn = p->part_names[shown[i]];
        fprintf(f, "pcol[%d] = %d\npname[%d] = ", i + 1, 3 + shown[i], i + 1);
        plot_gp_string(f, pn ? pn : part_default[shown[i]]);
        fputc('\n', f);
    }
    fprintf(f, "set xtics (");
    for (int b = 0; b < p->nbars; b++) {
        fprintf(f, "%s", b ? ", " : "");
        plot_gp_string(f, p->bars[b].label);
        fprintf(f, " %d", b);
    }
    fprintf(f, ")\n");
}

herd_status_t trace_plot_memory(const trace_mem_plot_t *p, const char *dir,
                                const char *name, const char *plots_dir,
                                char *err, size_t errlen)
{
    if (p->nbars < 1)
        return HERD_ERR_INVALID_ARG;
    double most = p->limit_bytes;
    for (int b = 0; b < p->nbars; b++) {
        double t = 0;
        for (int k = 0; k < TRACE_MEM_NPARTS; k++)
            t += p->bars[b].bytes[k];
        most = t > most ? t : most;
    }
    /* GiB once a bar (or the limit) passes 2 GiB, else MiB */
    int gib = most >= 2.0 * 1073741824.0;
    double unit = gib ? 1073741824.0 : 1048576.0;
    const char *uname = gib ? "GiB" : "MiB";
    FILE *f = NULL, *m = NULL;
    char *pre = NULL;
    size_t prelen = 0;
    herd_status_t st = plot_open(dir, name, "dat", &f, err, errlen);
    if (st != HERD_OK)
        return st;
    fprintf(f, "# herd: %s (by part, %s)\n", p->title, uname);
    fprintf(f, "# x\tlabel\tparams\tgrads\toptimizer\tunsharded\tactivations"
               "\ttotal\tstep_ms\tfits\tbest\tok\n");
    for (int b = 0; b < p->nbars; b++) {
        const trace_mem_bar_t *r = &p->bars[b];
        double t = 0;
        fprintf(f, "%d\t", b);
        plot_dat_field(f, r->label);
        for (int k = 0; k < TRACE_MEM_NPARTS; k++) {
            fprintf(f, "\t%.6f", r->bytes[k] / unit);
            t += r->bytes[k];
        }
        fprintf(f, "\t%.6f\t", t / unit);
        if (r->step_ms >= 0 && r->ok)
            fprintf(f, "%.6f", r->step_ms);
        else
            fprintf(f, "NaN");
        fprintf(f, "\t%d\t%d\t%d\n", r->fits, r->best, r->ok);
    }
    st = plot_close(f, dir, name, "dat", err, errlen);
    if (st != HERD_OK)
        return st;
    if (!(m = open_memstream(&pre, &prelen)))
        return HERD_ERR_NO_MEMORY;
    memory_preamble(p, name, unit, uname, m);
    if (fclose(m)) {
        free(pre);
        return HERD_ERR_NO_MEMORY;
    }
    st = trace_plot_write_gp(dir, name, pre, plots_dir, "wl_memory.gp", err,
                             errlen);
    free(pre);
    return st;
}
