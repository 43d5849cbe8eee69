/* cli/cli_workload.h - the run-command plumbing that `herd ddp run`,
 * `herd fsdp run` and `herd parallel run` (and their layout/units
 * siblings) share: their options, the --json / --timeline / --trace
 * outputs, a workload section's errors and warnings, and the simulator's
 * settings for a scenario. One copy, so the three commands cannot drift
 * apart. */
#ifndef HERD_CLI_CLI_WORKLOAD_H
#define HERD_CLI_CLI_WORKLOAD_H

#include <jansson.h>
#include <stddef.h>

#include <herd/herd.h>

#include "trace/scenario.h"
#include "trace/timeline.h"
#include "trace/trace.h"
#include "workload/ddp/model.h"

#define CLI_WL_MAX_SETS 64

/* The options of a workload's run command. */
typedef struct cli_wl_args {
    const char *scenario, *json, *timeline, *trace;
    const char *plots; /* --plots DIR: the step's Gantt chart (and memory) */
    char *sets[CLI_WL_MAX_SETS + 1]; /* + the one --gpu-mem makes */
    char gpu_mem[64];                /* "KEY=GIB" of --gpu-mem */
    int nsets, quiet;
} cli_wl_args_t;

/* cli_wl_parse_args flags. */
#define CLI_WL_SET_LIMIT 1u /* more than 64 --set: say so (else: unknown) */

/* Parse [SCENARIO] [--set KEY=VALUE]... [--json F] [--timeline F]
 * [--trace F] [--plots DIR] [--quiet], and --gpu-mem GIB when
 * gpu_mem_key is not NULL
 * (it becomes the last --set, gpu_mem_key=GIB). Errors are usage errors
 * of `cmd`; 0 ok, 2 bad usage. */
int cli_wl_parse_args(const char *cmd, const char *gpu_mem_key, unsigned flags,
                      int argc, char **argv, cli_wl_args_t *a);

/* Write the report `j` (released here; NULL: it could not be built) to
 * path; 0 ok, 2 (printed) when it cannot be written. */
int cli_wl_write_json(const char *cmd, json_t *j, const char *path);
/* Sort `tl` and write it to path: a .tsv name as TSV, any other as a
 * Chrome trace; 0 ok, 2 (printed). */
int cli_wl_write_timeline(const char *cmd, trace_timeline_t *tl,
                          const char *path);
/* Write the trace a workload's *_trace_build made with status st (`t`
 * is destroyed here) to path; 0 ok, 2 (printed). */
int cli_wl_write_trace(const char *cmd, herd_status_t st, trace_t *t,
                       const char *path);

/* A workload option of the scenario (or --set) that the workload's
 * cfg_set refused with `why`: "file:line:col: why" or "--set why". */
void cli_wl_option_error(const char *cmd, const trace_scenario_t *sc,
                         const trace_kv_t *kv, const char *why);
/* Warn that a model has no compute, once per `warned` flag. */
void cli_wl_warn_no_compute(const char *cmd, const ddp_model_t *m, int *warned);

/* The scenario's collective settings, applied by a workload program to
 * its communicators. */
void cli_wl_comm_settings(const trace_scenario_t *sc,
                          herd_algo_t algo[HERD_COLL_COUNT], int *channels,
                          size_t *chunk_bytes);
/* The simulator's init for running the scenario with `world` ranks;
 * the timeline goes to cb(arg). engine_opts points into `sc`. */
herd_init_t cli_wl_sim_init(const trace_scenario_t *sc, int world,
                            herd_timeline_cb cb, void *arg);

#endif
