/* cli/cmd_ddp.h - helpers shared by the `herd ddp` and `herd sweep`
 * subcommand files. */
#ifndef HERD_CLI_CMD_DDP_H
#define HERD_CLI_CMD_DDP_H

#include <jansson.h>
#include <stddef.h>

#include "trace/scenario.h"
#include "workload/ddp/bucket.h"
#include "workload/ddp/job.h"
#include "workload/ddp/model.h"
#include "workload/ddp/prog.h"
#include "workload/ddp/report.h"

/* Where model names are looked up (HERD_MODELS_DIR or <source>/models). */
const char *cli_ddp_models_dir(char *buf, size_t len);
/* Load MODEL (a path or a name); prints the error and returns 2 on
 * failure, 0 on success. */
int cli_ddp_load_model(const char *cmd, const char *arg, ddp_model_t *m);
/* {"num_buckets", "bucket_indices", "per_bucket_size_limits",
 * "bucket_bytes"} for an assignment. */
json_t *cli_ddp_buckets_json(const ddp_buckets_t *bs);

/* Load a scenario (NULL: the defaults) and apply KEY=VALUE overrides
 * (the strings are restored). Prints errors; 0 ok, 2 bad input. */
int cli_ddp_load_scenario(const char *cmd, const char *path, char **sets,
                          int nsets, trace_scenario_t **out);
/* A model path in a scenario is relative to the scenario's folder (a
 * name stays a name, for the models dir): rewrite `model` in place when
 * that file exists. Shared with the FSDP commands. */
void cli_ddp_resolve_model(const trace_scenario_t *sc, char *model, size_t len);
/* The DDP options of a scenario's ddp section; errors name file:line. */
int cli_ddp_cfg_from_scenario(const trace_scenario_t *sc, ddp_cfg_t *cfg,
                              char *err, size_t errlen);
/* The scenario's stragglers.grads for a workload on model m (FSDP's):
 * checked against the model, errors printed at their place; 0 ok, 2 bad
 * input. */
int cli_ddp_grad_delays(const char *cmd, const trace_scenario_t *sc,
                        const ddp_model_t *m, ddp_grad_delays_t *out);
/* Build the scenario's DDP job; prints errors; 0 ok, 2 bad input. */
int cli_ddp_make_job(const char *cmd, const trace_scenario_t *sc,
                     ddp_job_t **out);

/* One simulated DDP run. */
typedef struct cli_ddp_result {
    herd_status_t status;
    herd_run_info_t info;
    ddp_prog_t *prog;
    ddp_collect_t *col;
    ddp_summary_t summary;
    char diagnosis[8192]; /* "" when the run succeeded */
} cli_ddp_result_t;

/* Run `job` on the simulator with the scenario's cluster; extra_cb (may
 * be NULL) sees every timeline record. 0 ok (whatever the run's outcome),
 * 2 out of memory. Release with cli_ddp_result_fini. */
int cli_ddp_simulate(const trace_scenario_t *sc, const ddp_job_t *job,
                     herd_timeline_cb extra_cb, void *extra_arg,
                     cli_ddp_result_t *res);
void cli_ddp_result_fini(cli_ddp_result_t *res);
/* cli_ddp_simulate shows a long run's progress on stderr (on a terminal,
 * or with HERD_PROGRESS=1); a command with progress of its own (herd
 * sweep) turns that off for the whole process. */
void cli_ddp_progress_off(void);

int cli_ddp_sampler_main(int argc, char **argv);
int cli_ddp_report_main(int argc, char **argv);
int cli_ddp_run_main(int argc, char **argv);

#endif
