/* cli/cli_plots.h - the workload plots as the commands write them
 * (herd sweep, herd sim, herd fsdp strategies, herd ddp|fsdp|parallel
 * run --plots): DIR/NAME.dat + DIR/NAME.gp (trace/plot_wl.h), then gnuplot
 * for NAME.png and NAME.svg when it is installed. */
#ifndef HERD_CLI_CLI_PLOTS_H
#define HERD_CLI_CLI_PLOTS_H

#include "trace/plot_wl.h"
#include "trace/timeline.h"

/* Run DIR/NAME.gp and print the files; without gnuplot say the plot was
 * skipped (the .dat and .gp stay). 0 ok, 2 gnuplot failed. */
int cli_plot_gp(const char *cmd, const char *dir, const char *name);

/* A sweep or memory plot: written, and drawn unless `draw` is 0 (0 ok,
 * 2 error). */
int cli_plot_sweep(const char *cmd, const trace_sweep_plot_t *p,
                   const char *dir, const char *name, int draw);
int cli_plot_memory(const char *cmd, const trace_mem_plot_t *p, const char *dir,
                    const char *name, int draw);

/* DIR/step.*: the Gantt chart of the last step of a workload's timeline
 * (DDP, FSDP, parallel: rows by workload/common's wl_report_stream).
 * `ranks`: --gantt-ranks LIST, or NULL for a few (0, 1, the middle, the
 * last), and the title says which. 0 ok, 2 error. */
int cli_plot_step(const char *cmd, trace_timeline_t *tl, const char *dir,
                  const char *title, const char *ranks);

/* herd ddp|fsdp|parallel run --plots DIR: DIR/step.* (as above, the
 * default ranks) and, for a sharded job (bar not NULL), DIR/memory.*:
 * its peak memory per rank by part, against `limit_bytes` (0: none).
 * `title`: the scenario's name. 0 ok, 2 error. */
int cli_plot_run(const char *cmd, trace_timeline_t *tl, const char *dir,
                 const char *title, const trace_mem_bar_t *bar,
                 const char *unsharded_name, double limit_bytes);

#endif
