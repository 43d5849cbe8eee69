/* cli/cli_simwatch.h - long simulations seen and stopped from the command
 * line (cli/cli_simwatch.c). */
#ifndef HERD_CLI_SIMWATCH_H
#define HERD_CLI_SIMWATCH_H

#include <herd/sim.h>

/* Before herd_run: SIGINT ends the run with a partial report instead of
 * killing the process (a second SIGINT kills), and with `progress` a line
 * on stderr shows how far it is when stderr is a terminal or
 * HERD_PROGRESS=1 (HERD_PROGRESS=0: never). */
void cli_simwatch_arm(herd_sim_opts_t *o, int progress);
/* After herd_run: clears the progress line, restores SIGINT, and returns
 * 1 when an interrupt ended the run (herd_run returned HERD_ERR_ABORTED
 * with the partial report; the command goes on to print what it has and
 * exits 1, as for a failed run). */
int cli_simwatch_done(herd_sim_opts_t *o);

#endif
