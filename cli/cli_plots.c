/* cli/cli_plots.c - the workload plots as the commands write them
 * (cli_plots.h): the data and script through trace/plot_wl.h, then
 * gnuplot in the output folder; the step Gantt's ranks and title. */
#include "cli/cli_plots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "trace/plot.h"
#include "workload/common/report.h"

int cli_plot_gp(const char *cmd, const char *dir, const char *name)
{
    char err[1024];
    printf("wrote %s/%s.dat, %s/%s.gp\n", dir, name, dir, name);
    herd_status_t st = trace_plot_run_gp(dir, name, err, sizeof(err));
    if (st == HERD_ERR_NOT_FOUND && !trace_plot_available()) {
        fprintf(stderr, "herd %s: plots skipped: %s\n", cmd, err);
        return 0;
    }
    if (st) {
        fprintf(stderr, "herd %s: %s/%s.gp: %s\n", cmd, dir, name, err);
        return 2;
    }
    printf("  %s/%s.png, %s/%s.svg\n", dir, name, dir, name);
    return 0;
}

static int written(const char *cmd, herd_status_t st, const char *err,
                   const char *dir, const char *name, int draw)
{
    if (st != HERD_OK) {
        fprintf(stderr, "herd %s: %s\n", cmd,
                *err ? err : herd_status_string(st));
        return 2;
    }
    if (!draw) {
        printf("wrote %s/%s.dat, %s/%s.gp\n", dir, name, dir, name);
        return 0;
    }
    return cli_plot_gp(cmd, dir, name);
}

int cli_plot_sweep(const char *cmd, const trace_sweep_plot_t *p,
                   const char *dir, const char *name, int draw)
{
    char err[1024] = "";
    herd_status_t st =
        trace_plot_sweep(p, dir, name, cli_plots_dir(), err, sizeof(err));
    return written(cmd, st, err, dir, name, draw);
}

int cli_plot_memory(const char *cmd, const trace_mem_plot_t *p, const char *dir,
                    const char *name, int draw)
{
    char err[1024] = "";
    herd_status_t st =
        trace_plot_memory(p, dir, name, cli_plots_dir(), err, sizeof(err));
    return written(cmd, st, err, dir, name, draw);
}

/* The ranks drawn: --gantt-ranks, or rank 0, 1, the middle one and the
 * last (each row of the chart is a stream of a rank: a few ranks fit). */
static int step_ranks(const char *cmd, const char *spec, int world, int *list,
                      int *n)
{
    char rows[SIM_GANTT_MAX_ROWS * 8];
    *n = 0;
    if (spec) {
        if (cli_sim_gantt_rows(cmd, spec, world, rows, sizeof(rows)))
            return 2;
        for (char *save = NULL, *w = strtok_r(rows, " ", &save);
             w && *n < SIM_GANTT_MAX_ROWS; w = strtok_r(NULL, " ", &save))
            list[(*n)++] = atoi(w);
        return 0;
    }
    int want[] = {0, 1, world / 2, world - 1};
    for (int i = 0; i < 4; i++) {
        int dup = want[i] < 0 || want[i] >= world;
        for (int k = 0; k < *n && !dup; k++)
            dup = list[k] == want[i];
        if (!dup)
            list[(*n)++] = want[i];
    }
    /* in rank order */
    for (int i = 1; i < *n; i++)
        for (int j = i; j > 0 && list[j] < list[j - 1]; j--) {
            int t = list[j];
            list[j] = list[j - 1];
            list[j - 1] = t;
        }
    return 0;
}

int cli_plot_step(const char *cmd, trace_timeline_t *tl, const char *dir,
                  const char *title, const char *ranks)
{
    trace_timeline_sort(tl);
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    size_t n = trace_timeline_count(tl);
    int world = 0, list[SIM_GANTT_MAX_ROWS], nr = 0;
    for (size_t i = 0; i < n; i++)
        world = r[i].rank >= world ? r[i].rank + 1 : world;
    if (!world)
        return 0;
    if (step_ranks(cmd, ranks, world, list, &nr))
        return 2;
    char sub[1024], shown[512] = "";
    size_t o = 0;
    for (int i = 0; i < nr && o < sizeof(shown); i++)
        o += (size_t)snprintf(shown + o, sizeof(shown) - o, "%s%d",
                              i ? "," : "", list[i]);
    snprintf(sub, sizeof(sub), "ranks %s of %d shown%s", ranks ? ranks : shown,
             world, ranks ? "" : " (--gantt-ranks LIST chooses)");
    trace_step_plot_t p = {title, nr < world ? sub : NULL, r,   n, list, nr,
                           -1,    wl_report_stream,        NULL};
    char err[1024] = "";
    long step = -1;
    herd_status_t st = trace_plot_step(&p, dir, "step", cli_plots_dir(), &step,
                                       err, sizeof(err));
    if (st == HERD_ERR_NOT_FOUND) { /* a run that stopped before a step */
        printf("no step Gantt chart: %s\n", err);
        return 0;
    }
    return written(cmd, st, err, dir, "step", 1);
}

int cli_plot_run(const char *cmd, trace_timeline_t *tl, const char *dir,
                 const char *title, const trace_mem_bar_t *bar,
                 const char *unsharded_name, double limit_bytes)
{
    if (cli_sim_mkdir(cmd, dir))
        return 2;
    int rc = cli_plot_step(cmd, tl, dir, title, NULL);
    if (rc || !bar)
        return rc;
    char t[512];
    snprintf(t, sizeof(t), "%s: peak memory per rank", title);
    trace_mem_plot_t p = {t,   "", {NULL, NULL, NULL, unsharded_name, NULL},
                          bar, 1,  limit_bytes,
                          NULL};
    return cli_plot_memory(cmd, &p, dir, "memory", 1);
}
