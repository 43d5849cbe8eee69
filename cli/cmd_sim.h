/* cli/cmd_sim.h - helpers shared by `herd sim`, `herd replay` and `herd
 * compare`: output folders, writing a timeline with its Gantt plot, and
 * the per-op-kind summary of a run. */
#ifndef HERD_CLI_CMD_SIM_H
#define HERD_CLI_CMD_SIM_H

#include <stdio.h>

#include "trace/scenario.h"
#include "trace/timeline.h"
#include "trace/trace.h"

/* mkdir -p; prints the error. 0 ok, 2 failure. */
int cli_sim_mkdir(const char *cmd, const char *dir);
#define SIM_GANTT_MAX_ROWS 64

/* The Gantt chart's ranks: `spec` ("0-7,64,100-103"; NULL: ranks 0-31)
 * checked against `world` ranks and, when rows is not NULL, expanded
 * into "0 1 ... 7 64 ..." for plots/gantt.gp. Prints the error; 0 ok,
 * 2 bad spec. */
int cli_sim_gantt_rows(const char *cmd, const char *spec, int world, char *rows,
                       size_t len);
/* DIR/timeline.json, DIR/timeline.tsv and, unless no_plots, the Gantt
 * chart DIR/gantt.png/.svg of the ranks `gantt_ranks` names (NULL: the
 * first 32; the title says which are shown). Prints what it wrote; 0 ok,
 * 2 failure. */
int cli_sim_write_timeline(const char *cmd, trace_timeline_t *tl,
                           const char *dir, const char *title,
                           const char *gantt_ranks, int no_plots);
/* DIR/timeline-rank<R>.json/.tsv of one process; 0 ok, 2 failure. */
int cli_sim_write_rank_timeline(trace_timeline_t *tl, const char *dir,
                                const char *rank);
/* Run a plots/ script; a missing gnuplot is a warning (plots skipped). */
int cli_sim_plot(const char *cmd, const char *script, const char *const *args,
                 int nargs);
/* Replay `t` on the simulator with the scenario's cluster and collective
 * settings, printing the outcome (and hang report); steps 0: the
 * scenario's. Returns herd_run's status. */
herd_status_t cli_sim_replay(const trace_scenario_t *sc, const trace_t *t,
                             int steps, trace_timeline_t *tl);
/* Step times (from "step" marks) and per op kind: count, mean and max
 * duration. Sorts the timeline. */
void cli_sim_print_kinds(trace_timeline_t *tl, FILE *f);

#endif
