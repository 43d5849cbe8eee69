/* cli/cmd_sweep_report.c - the report of a finished `herd sweep`: the
 * table (best row marked *, rows within the tolerance of the best marked
 * =, the scenario's own value named), the set of values within the
 * tolerance, a recommendation, DIR/sweep.tsv (one numeric key) and the
 * plots: DIR/sweep.* (step time and exposed communication against the
 * knob, any knob, plots/wl_sweep.gp) and, for FSDP and parallel jobs,
 * DIR/memory.* (memory per rank by part, plots/wl_memory.gp).
 *
 * Values within the tolerance (default 2 %) of the best are ties: the
 * simulator's gain between them is smaller than what a real cluster's
 * noise and the model's error can tell apart. So when the scenario's own
 * value is among them the recommendation is to keep it. Where a
 * validation measured the model's error (--uncertainty), the report says
 * so, and marks ~ the values within its median |error| of the best. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_plots.h"
#include "cli/cmd_sim.h"
#include "cli/cmd_sweep.h"

static int row_ok(const cli_sweep_row_t *r)
{
    return r->done && r->rc == 0 && r->status == HERD_OK && !r->nofit;
}

static int best_row(const cli_sweep_row_t *rows, int n)
{
    int best = -1;
    for (int c = 0; c < n; c++)
        if (row_ok(&rows[c]) &&
            (best < 0 || rows[c].step_s < rows[best].step_s))
            best = c;
    return best;
}

/* Within the tolerance of the best (the best itself included). */
static int within(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                  int best, int c)
{
    return best >= 0 && row_ok(&rows[c]) &&
           rows[c].step_s <= rows[best].step_s * (1 + a->tolerance / 100);
}

/* Within the validation's median |error| of the best (--uncertainty). */
static int within_unc(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                      int best, int c)
{
    return a->unc.n && best >= 0 && row_ok(&rows[c]) &&
           rows[c].step_s <= rows[best].step_s * (1 + a->unc.median);
}

static const char *short_key(const char *key)
{
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

static void print_table(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                        int best, int current)
{
    int ddp = 0, n = cli_sweep_ncombos(a);
    for (int c = 0; c < n; c++)
        ddp |= rows[c].ddp;
    printf("  ");
    for (int ax = 0; ax < a->naxes; ax++)
        printf("%16s", short_key(a->axes[ax].key));
    if (ddp)
        printf(" %8s %10s %11s %10s %8s",
               ddp == 3   ? "mem_GiB"
               : ddp == 2 ? "units"
                          : "buckets",
               "step_ms", "exposed_ms", "comm_ms", "overlap");
    else
        printf(" %12s", "time_ms");
    printf(" %8s  %s\n", "vs_best", "status");
    for (int c = 0; c < n; c++) {
        const cli_sweep_row_t *r = &rows[c];
        printf("%c ", c == best                      ? '*'
                      : within(a, rows, best, c)     ? '='
                      : within_unc(a, rows, best, c) ? '~'
                                                     : ' ');
        for (int ax = 0; ax < a->naxes; ax++)
            printf("%16s", a->axes[ax].vals[cli_sweep_value_of(a, c, ax)]);
        if (ddp == 3)
            printf(" %8.1f", r->mem_gib);
        else if (ddp)
            printf(" %8ld", r->buckets);
        if (ddp)
            printf(" %10.3f %11.3f %10.3f %7.1f%%", r->step_s * 1e3,
                   r->exposed_s * 1e3, r->comm_s * 1e3, r->overlap * 100);
        else
            printf(" %12.3f", r->step_s * 1e3);
        if (c == best)
            printf(" %8s", "best");
        else if (best >= 0 && row_ok(r))
            printf(" %+7.1f%%",
                   100 * (r->step_s - rows[best].step_s) / rows[best].step_s);
        else
            printf(" %8s", "-");
        printf("  %s%s\n",
               r->rc       ? "bad input"
               : r->status ? herd_status_string(r->status)
               : r->nofit  ? "does not fit gpu_mem"
                           : "ok",
               c == current ? " (the scenario's value)" : "");
    }
    printf("* best, = within %g%% of the best (--tolerance)", a->tolerance);
    if (a->unc.n)
        printf(", ~ within the model's median |error| (%.1f%%)",
               a->unc.median * 100);
    printf("\n");
}

/* The combination's values as "key=v, key=w". */
static void combo_text(const cli_sweep_args_t *a, int c, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int ax = 0; ax < a->naxes && o < len; ax++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s=%s", ax ? ", " : "",
                              a->axes[ax].key,
                              a->axes[ax].vals[cli_sweep_value_of(a, c, ax)]);
}

/* "within 2% of the best: k=v, k=w (the scenario's)" */
static void print_ties(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                       int best, int current)
{
    char what[512];
    printf("within %g%% of the best (%.3f ms):", a->tolerance,
           rows[best].step_s * 1e3);
    for (int c = 0, k = 0; c < cli_sweep_ncombos(a); c++)
        if (within(a, rows, best, c)) {
            combo_text(a, c, what, sizeof(what));
            printf("%s %s%s", k++ ? "," : "", what,
                   c == current ? " (the scenario's)" : "");
        }
    printf("\n");
}

static void recommend(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                      int best, int current)
{
    char what[512], other[512];
    if (best < 0) {
        printf("recommendation: none (no run completed)\n");
        return;
    }
    print_ties(a, rows, best, current);
    if (a->unc.n) {
        printf("model uncertainty: %zu validation points in %s: median "
               "|error| %.1f%%, p95 %.1f%%; within the median of the best:",
               a->unc.n, a->unc.path, a->unc.median * 100, a->unc.p95 * 100);
        for (int c = 0, k = 0; c < cli_sweep_ncombos(a); c++)
            if (within(a, rows, best, c) || within_unc(a, rows, best, c)) {
                combo_text(a, c, what, sizeof(what));
                printf("%s %s", k++ ? "," : "", what);
            }
        printf("\n");
    }
    const cli_sweep_row_t *b = &rows[best];
    const char *measure = b->ddp ? "step" : "time";
    combo_text(a, best, other, sizeof(other));
    if (current >= 0 && within(a, rows, best, current)) {
        const cli_sweep_row_t *r = &rows[current];
        combo_text(a, current, what, sizeof(what));
        printf("recommendation: keep %s (the scenario's value): %s %.3f ms",
               what, measure, r->step_s * 1e3);
        if (current == best)
            printf(", the best\n");
        else
            printf(", %.1f%% slower than the best (%s, %.3f ms), within the "
                   "%g%% tolerance\n",
                   100 * (r->step_s - b->step_s) / b->step_s, other,
                   b->step_s * 1e3, a->tolerance);
        return;
    }
    printf("recommendation: %s: %s %.3f ms", other, measure, b->step_s * 1e3);
    if (b->ddp)
        printf(", exposed communication %.3f ms, overlap %.0f%%",
               b->exposed_s * 1e3, b->overlap * 100);
    int worst = best;
    for (int c = 0; c < cli_sweep_ncombos(a); c++)
        if (row_ok(&rows[c]) && rows[c].step_s > rows[worst].step_s)
            worst = c;
    int than = current >= 0 && row_ok(&rows[current]) ? current : worst;
    if (than != best) {
        combo_text(a, than, what, sizeof(what));
        printf(" (%.1f%% faster than %s, %s)",
               100 * (rows[than].step_s - b->step_s) / rows[than].step_s,
               than == current ? "the scenario's value" : "the slowest", what);
    }
    if (current < 0) /* nothing to keep: say why */
        printf("; the scenario's own value is not among those swept");
    printf("\n");
}

/* One numeric axis: DIR/sweep.tsv sorted by value (the table as
 * numbers, for scripts; the plot reads sweep.dat). */
static int write_tsv(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                     int best, const char *dir)
{
    const cli_sweep_axis_t *ax = &a->axes[0];
    double x[SWEEP_MAX_VALUES];
    int order[SWEEP_MAX_VALUES];
    if (a->naxes != 1)
        return 0;
    for (int i = 0; i < ax->n; i++) {
        if (cli_parse_double(ax->vals[i], &x[i]))
            return 0; /* not numeric */
        order[i] = i;
        for (int j = i; j > 0 && x[order[j]] < x[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    }
    char tsv[4096 + 16];
    snprintf(tsv, sizeof(tsv), "%s/sweep.tsv", dir);
    FILE *f = fopen(tsv, "w");
    if (!f)
        return cli_usage_error("sweep", "cannot write %s", tsv);
    fprintf(f, "%s\tstep_ms\texposed_ms\tcomm_ms\toverlap\tbuckets\twithin\n",
            ax->key);
    for (int i = 0; i < ax->n; i++) {
        const cli_sweep_row_t *r = &rows[order[i]];
        if (row_ok(r))
            fprintf(f, "%g\t%.6f\t%.6f\t%.6f\t%.4f\t%ld\t%d\n", x[order[i]],
                    r->step_s * 1e3, r->exposed_s * 1e3, r->comm_s * 1e3,
                    r->overlap, r->buckets, within(a, rows, best, order[i]));
    }
    if (fclose(f))
        return cli_usage_error("sweep", "cannot write %s", tsv);
    printf("wrote %s\n", tsv);
    return 0;
}

/* A run that completed: a step time to draw (ddp_run's own status may
 * still be a failure: drawn as failed). */
static int row_ran(const cli_sweep_row_t *r)
{
    return r->done && r->rc == 0 && r->status == HERD_OK;
}

/* DIR/sweep.{dat,gp,png,svg}: step time and exposed communication
 * against the first key, a line per value of the others; the best, the
 * ties, the scenario's value, runs that do not fit or failed marked. */
static int write_sweep_plot(const cli_sweep_args_t *a,
                            const cli_sweep_row_t *rows, int best, int current,
                            const char *dir)
{
    int n = cli_sweep_ncombos(a), rc = 2;
    const char *keys[SWEEP_MAX_AXES];
    int nvals[SWEEP_MAX_AXES];
    const char *const *vals[SWEEP_MAX_AXES];
    int *vidx = calloc((size_t)n * (size_t)a->naxes, sizeof(int));
    trace_sweep_pt_t *pts = calloc((size_t)n, sizeof(*pts));
    if (!vidx || !pts)
        goto cleanup;
    for (int ax = 0; ax < a->naxes; ax++) {
        keys[ax] = a->axes[ax].key;
        nvals[ax] = a->axes[ax].n;
        vals[ax] = (const char *const *)a->axes[ax].vals;
    }
    for (int c = 0; c < n; c++) {
        const cli_sweep_row_t *r = &rows[c];
        for (int ax = 0; ax < a->naxes; ax++)
            vidx[c * a->naxes + ax] = cli_sweep_value_of(a, c, ax);
        pts[c] = (trace_sweep_pt_t){c,
                                    row_ran(r),
                                    !r->nofit,
                                    within(a, rows, best, c),
                                    c == best,
                                    c == current,
                                    r->step_s * 1e3,
                                    r->exposed_s * 1e3,
                                    r->comm_s * 1e3};
    }
    int workload = 0;
    for (int c = 0; c < n; c++)
        workload |= rows[c].ddp;
    trace_sweep_plot_t p = {a->name,      a->naxes,  keys,     nvals,
                            vals,         vidx,      pts,      n,
                            a->tolerance, "gpu_mem", !workload};
    rc = cli_plot_sweep("sweep", &p, dir, "sweep", !a->no_plot);
cleanup:
    free(pts);
    free(vidx);
    return rc;
}

/* DIR/memory.*: FSDP and parallel runs' peak memory per rank by part. */
static int write_memory_plot(const cli_sweep_args_t *a,
                             const cli_sweep_row_t *rows, int best,
                             const char *dir)
{
    int n = cli_sweep_ncombos(a), kind = 0, rc = 2;
    double limit = 0;
    for (int c = 0; c < n; c++) {
        kind =
            rows[c].ddp > 1 && rows[c].done && !rows[c].rc ? rows[c].ddp : kind;
        limit = rows[c].mem_limit > limit ? rows[c].mem_limit : limit;
    }
    if (!kind)
        return 0; /* DDP (not sharded) and trace workloads: none */
    trace_mem_bar_t *bars = calloc((size_t)n, sizeof(*bars));
    char(*labels)[256] = calloc((size_t)n, sizeof(*labels));
    if (!bars || !labels)
        goto cleanup;
    int nb = 0;
    for (int c = 0; c < n; c++) {
        const cli_sweep_row_t *r = &rows[c];
        if (!r->done || r->rc)
            continue; /* bad input (a layout that does not add up) */
        trace_mem_bar_t *b = &bars[nb];
        char *label = labels[nb++];
        size_t o = 0;
        for (int ax = 0; ax < a->naxes; ax++)
            o += (size_t)snprintf(
                label + o, sizeof(labels[0]) - o, "%s%s%s%s", ax ? " " : "",
                a->naxes > 1 ? short_key(a->axes[ax].key) : "",
                a->naxes > 1 ? "=" : "",
                a->axes[ax].vals[cli_sweep_value_of(a, c, ax)]);
        b->label = label;
        memcpy(b->bytes, r->mem_part, sizeof(b->bytes));
        b->step_ms = r->step_s * 1e3;
        b->ok = row_ran(r);
        b->fits = !r->nofit;
        b->best = c == best;
    }
    char title[512], xlabel[512];
    size_t o = 0;
    snprintf(title, sizeof(title), "%s: peak memory per rank and step time",
             a->name);
    xlabel[0] = '\0';
    for (int ax = 0; ax < a->naxes; ax++)
        o += (size_t)snprintf(xlabel + o, sizeof(xlabel) - o, "%s%s",
                              ax ? " x " : "", a->axes[ax].key);
    trace_mem_plot_t p = {
        title,
        xlabel,
        {NULL, NULL, NULL,
         kind == 2 ? "unsharded units (params + grads)" : "ZeRO-3 gathered",
         NULL},
        bars,
        nb,
        limit,
        kind == 2 ? "FSDP: activations not modelled; the rank with the most "
                    "(fsdp.gpu_mem: the line)"
                  : "the rank with the most (parallel.gpu_mem: the line)"};
    rc = nb ? cli_plot_memory("sweep", &p, dir, "memory", !a->no_plot) : 0;
cleanup:
    free(labels);
    free(bars);
    return rc;
}

static int write_plot(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                      int best, int current)
{
    const char *dir = a->out ? a->out : "sweep-out";
    if (cli_sim_mkdir("sweep", dir))
        return 2;
    int rc = write_tsv(a, rows, best, dir);
    if (!rc)
        rc = write_sweep_plot(a, rows, best, current, dir);
    if (!rc)
        rc = write_memory_plot(a, rows, best, dir);
    return rc;
}

int cli_sweep_report(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                     int current)
{
    int best = best_row(rows, cli_sweep_ncombos(a));
    print_table(a, rows, best, current);
    recommend(a, rows, best, current);
    return write_plot(a, rows, best, current);
}
