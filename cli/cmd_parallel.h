/* cli/cmd_parallel.h - helpers of `herd parallel` that `herd sweep` and
 * `herd sim` share: build a scenario's 3D-parallel job and simulate it. */
#ifndef HERD_CLI_CMD_PARALLEL_H
#define HERD_CLI_CMD_PARALLEL_H

#include "trace/scenario.h"
#include "workload/parallel/prog.h"
#include "workload/parallel/report.h"

/* Build the scenario's job (its `workload: parallel:` section, --set
 * parallel.KEY); prints errors (file:line:column for the scenario's
 * keys); 0 ok, 2 bad input. */
int cli_parallel_make_job(const char *cmd, const trace_scenario_t *sc,
                          par_job_t **out);

typedef struct cli_parallel_result {
    herd_status_t status;
    herd_run_info_t info;
    par_prog_t *prog;
    par_collect_t *col;
    par_summary_t summary;
    char diagnosis[8192]; /* "" when the run succeeded */
} cli_parallel_result_t;

/* Run `job` on the simulator with the scenario's cluster; extra_cb (may
 * be NULL) sees every timeline record. 0 ok (whatever the outcome), 2
 * out of memory. Release with cli_parallel_result_fini. */
int cli_parallel_simulate(const trace_scenario_t *sc, const par_job_t *job,
                          herd_timeline_cb extra_cb, void *extra_arg,
                          cli_parallel_result_t *res);
void cli_parallel_result_fini(cli_parallel_result_t *res);

#endif
