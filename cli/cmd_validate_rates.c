/* cli/cmd_validate_rates.c - `herd validate --rates R1,R2,...`: the whole
 * validation suite in one command. Each rate gets its own testbed shaped
 * to it, its own calibration and the full validation (DIR/<rate>/); then
 * the rows of all of them are summarised per rate and algorithm (median,
 * p95 and max |error|, rows within 10 %) in DIR/summary.md and
 * summary.tsv (and how many rows' predictions lie within their own
 * measurements' p10 - p90: a miss the real side's spread covers), and
 * DIR/points.tsv feeds one plot of predicted against
 * measured over every rate (plots/validate_summary.gp: log-log, y = x,
 * the +-10 % band). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "cli/cmd_validate.h"
#include "real/testbed/testbed.h"
#include "trace/plot.h"

#define V_WITHIN 0.10 /* the goal: every row within 10 % */

/* Distinct algorithms of the rows in first-seen order ("-" for steps). */
static size_t algos_of(const validate_rows_t *rows, char (*algo)[16],
                       size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < rows->n; i++) {
        size_t j = 0;
        while (j < n && strcmp(algo[j], rows->rows[i].algo))
            j++;
        if (j == n && n < max)
            snprintf(algo[n++], 16, "%s", rows->rows[i].algo);
    }
    return n;
}

static void summary_line(FILE *md, FILE *tsv, const char *rate,
                         const char *algo, const validate_row_t **sel, size_t k)
{
    double med, p95, mx;
    size_t within = 0, in = 0;
    validate_rows_stats(sel, k, &med, &p95, &mx);
    for (size_t i = 0; i < k; i++) {
        within += fabs(sel[i]->err) <= V_WITHIN;
        in += validate_row_in_spread(sel[i]);
    }
    fprintf(md,
            "| %s | %s | %zu | %.1f%% | %.1f%% | %.1f%% | %zu/%zu | %zu/%zu "
            "|\n",
            rate, algo, k, med * 100, p95 * 100, mx * 100, within, k, in, k);
    fprintf(tsv, "%s\t%s\t%zu\t%.4f\t%.4f\t%.4f\t%zu\t%zu\n", rate, algo, k,
            med * 100, p95 * 100, mx * 100, within, in);
}

/* summary.md and summary.tsv: per rate x algorithm, then all rows. */
static int write_summary(const vopts_t *o, const validate_rows_t *rows)
{
    char path[1100], tpath[1100];
    snprintf(path, sizeof(path), "%s/summary.md", o->out);
    snprintf(tpath, sizeof(tpath), "%s/summary.tsv", o->out);
    FILE *md = fopen(path, "w"), *tsv = fopen(tpath, "w");
    const validate_row_t **sel = malloc((rows->n + 1) * sizeof(*sel));
    char algo[32][16];
    size_t na = algos_of(rows, algo, 32);
    int rc = md && tsv && sel ? 0 : 1;
    if (rc == 0) {
        fprintf(md,
                "# herd validate --rates: %s\n\n"
                "| rate | algorithm | rows | median |error| | p95 |error| "
                "| max |error| | within 10%% "
                "| within the measured p10 - p90 |\n"
                "|---|---|---:|---:|---:|---:|---:|---:|\n",
                o->scenario);
        fprintf(tsv, "rate\talgorithm\trows\tmedian_err_pct\tp95_err_pct\t"
                     "max_err_pct\twithin_10pct\twithin_meas_p10_p90\n");
        for (int r = 0; r < o->nrates; r++)
            for (size_t a = 0; a < na; a++) {
                size_t k = 0;
                for (size_t i = 0; i < rows->n; i++)
                    if (rows->rows[i].n &&
                        !strcmp(rows->rows[i].rate, o->rate_names[r]) &&
                        !strcmp(rows->rows[i].algo, algo[a]))
                        sel[k++] = &rows->rows[i];
                if (k)
                    summary_line(md, tsv, o->rate_names[r], algo[a], sel, k);
            }
        size_t k = 0;
        for (size_t i = 0; i < rows->n; i++)
            if (rows->rows[i].n)
                sel[k++] = &rows->rows[i];
        summary_line(md, tsv, "all", "all", sel, k);
        double med, p95, mx;
        validate_rows_stats(sel, k, &med, &p95, &mx);
        fprintf(md, "\nPlot: [summary.png](summary.png). Per rate:");
        for (int r = 0; r < o->nrates; r++)
            fprintf(md, " [%s](%s/report.md)", o->rate_names[r],
                    o->rate_names[r]);
        fprintf(md, ".\n");
        printf("validate: summary in %s\n", path);
        printf("validate: %zu rows over %d rates, median |error| %.1f%%, p95 "
               "|error| %.1f%%, max |error| %.1f%%\n",
               k, o->nrates, med * 100, p95 * 100, mx * 100);
    }
    if (md)
        fclose(md);
    if (tsv)
        fclose(tsv);
    free(sel);
    return rc;
}

/* points.tsv: one gnuplot block per rate (blank lines between), each
 * with a title line, then predicted and measured ms per row. */
static int write_points(const vopts_t *o, const validate_rows_t *rows,
                        const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    int blocks = 0;
    for (int r = 0; r < o->nrates; r++) {
        int head = 0;
        for (size_t i = 0; i < rows->n; i++) {
            const validate_row_t *w = &rows->rows[i];
            if (!w->n || strcmp(w->rate, o->rate_names[r]) ||
                !(w->pred_us > 0) || !(w->meas_us > 0))
                continue;
            if (!head++)
                fprintf(f,
                        "%s%s\tpredicted_ms\tmeasured_ms\tcollective\t"
                        "algorithm\tbytes\tlabel\n",
                        blocks++ ? "\n\n" : "", o->rate_names[r]);
            fprintf(f, "%s\t%.6f\t%.6f\t%s\t%s\t%llu\t%s\n", o->rate_names[r],
                    w->pred_us / 1e3, w->meas_us / 1e3, w->name, w->algo,
                    w->bytes, w->label[0] ? w->label : "-");
        }
    }
    fclose(f);
    return blocks ? 0 : 1;
}

static void plot(const vopts_t *o, const char *points)
{
    char prefix[1100], err[512], title[512];
    snprintf(prefix, sizeof(prefix), "%s/summary", o->out);
    snprintf(title, sizeof(title), "herd validate: %s, predicted vs measured",
             o->scenario);
    const char *args[] = {points, prefix, title};
    if (trace_plot_run(cli_plots_dir(), "validate_summary.gp", args, 3, err,
                       sizeof(err)) != HERD_OK)
        fprintf(stderr, "herd validate: no plot: %s\n", err);
    else
        printf("validate: plot %s.png\n", prefix);
}

int validate_rates(vopts_t *o, const trace_scenario_t *sc)
{
    validate_rows_t all = {0};
    int rc = 0;
    if (cli_sim_mkdir("validate", o->out))
        return 2;
    for (int r = 0; r < o->nrates && rc == 0; r++) {
        vopts_t one = *o;
        char dir[1100], from[1100];
        snprintf(dir, sizeof(dir), "%s/%s", o->out, o->rate_names[r]);
        one.out = dir;
        if (o->from) { /* that rate's own measurements and calibration */
            snprintf(from, sizeof(from), "%s/%s", o->from, o->rate_names[r]);
            one.from = from;
        }
        one.rate_bps = o->rates[r];
        one.nrates = 0;
        printf("validate: == %s\n", o->rate_names[r]);
        fflush(stdout);
        size_t first = all.n;
        rc = validate_steps(&one, sc, &all);
        for (size_t i = first; i < all.n; i++)
            snprintf(all.rows[i].rate, sizeof(all.rows[i].rate), "%s",
                     o->rate_names[r]);
        if (one.testbed_made && !o->keep)
            testbed_down(NULL, 0);
    }
    if (rc == 0) {
        char points[1100];
        snprintf(points, sizeof(points), "%s/points.tsv", o->out);
        rc = write_summary(o, &all);
        if (rc == 0 && write_points(o, &all, points) == 0)
            plot(o, points);
    }
    free(all.rows);
    return rc;
}
