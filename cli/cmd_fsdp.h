/* cli/cmd_fsdp.h - helpers of `herd fsdp` that `herd sweep` and
 * `herd sim` share: build a scenario's FSDP job and simulate it. */
#ifndef HERD_CLI_CMD_FSDP_H
#define HERD_CLI_CMD_FSDP_H

#include "trace/scenario.h"
#include "workload/fsdp/prog.h"
#include "workload/fsdp/report.h"

/* Build the scenario's FSDP job (its `workload: fsdp:` section, --set
 * fsdp.KEY); prints errors (file:line:column for the scenario's keys);
 * 0 ok, 2 bad input. */
int cli_fsdp_make_job(const char *cmd, const trace_scenario_t *sc,
                      fsdp_job_t **out);

typedef struct cli_fsdp_result {
    herd_status_t status;
    herd_run_info_t info;
    fsdp_prog_t *prog;
    fsdp_collect_t *col;
    fsdp_summary_t summary;
    char diagnosis[8192]; /* "" when the run succeeded */
} cli_fsdp_result_t;

/* Run `job` on the simulator with the scenario's cluster; extra_cb (may
 * be NULL) sees every timeline record. 0 ok (whatever the outcome), 2
 * out of memory. Release with cli_fsdp_result_fini. */
int cli_fsdp_simulate(const trace_scenario_t *sc, const fsdp_job_t *job,
                      herd_timeline_cb extra_cb, void *extra_arg,
                      cli_fsdp_result_t *res);
void cli_fsdp_result_fini(cli_fsdp_result_t *res);

/* herd fsdp strategies (cmd_fsdp_memory.c). */
int cli_fsdp_strategies_main(int argc, char **argv);

#endif
