/* cli/cli_simflags.h - the simulated cluster as command-line flags, shared by
 * the commands that run the simulator (`herd perf`, and any command that
 * wants the same flags): --nodes, --gpus-per-node, --intra-bw, ...
 * filling a herd_sim_opts_t plus the collective settings (channels, chunk)
 * that live on the communicator rather than in the options. */
#ifndef HERD_CLI_SIMFLAGS_H
#define HERD_CLI_SIMFLAGS_H

#include <stdint.h>

#include <herd/sim.h>

typedef struct cli_simflags {
    herd_sim_opts_t opts;
    int channels;   /* 0: the communicator default */
    uint64_t chunk; /* 0: the communicator default */
} cli_simflags_t;

/* Defaults (herd_sim_opts_init). */
void cli_simflags_init(cli_simflags_t *f);

/* If argv[*i] is a cluster flag, parse it (and its value, "--flag value"
 * or "--flag=value"), advance *i past what it used and return 1; return
 * 0 if it is not one of these flags; print "herd <cmd>: ..." and return
 * -1 on a bad value. */
int cli_simflags_parse(const char *cmd, int argc, char **argv, int *i,
                       cli_simflags_t *f);

/* Cross-field checks after parsing; prints and returns -1 on error. */
int cli_simflags_check(const char *cmd, const cli_simflags_t *f);

/* The flags' help text (lines starting with two spaces). */
const char *cli_simflags_usage(void);

/* One line describing the cluster, for table headers. */
void cli_simflags_describe(const cli_simflags_t *f, char *buf, unsigned len);

#endif
