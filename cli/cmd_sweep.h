/* cli/cmd_sweep.h - the pieces of `herd sweep`: the parsed arguments and
 * one row of results per combination of swept values (cmd_sweep.c parses,
 * plans and runs them in worker processes), and the report of a finished
 * sweep (cmd_sweep_report.c: the table, the values within a tolerance of
 * the best, the recommendation, the TSV and the plot), and the share of
 * each process of an MPI job (cmd_sweep_mpi.c). */
#ifndef HERD_CLI_SWEEP_H
#define HERD_CLI_SWEEP_H

#include "cli/cli_uncertainty.h"
#include <herd/herd.h>

#define SWEEP_MAX_AXES 4
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_SETS 64
#define SWEEP_DEFAULT_TOLERANCE 2.0 /* percent */

typedef struct cli_sweep_axis {
    char key[128];
    char *vals[SWEEP_MAX_VALUES];
    int n;
} cli_sweep_axis_t;

typedef struct cli_sweep_args {
    const char *scenario, *out;
    char name[128]; /* the scenario's name, for titles */
    char *fixed[SWEEP_MAX_SETS];
    int nfixed;
    cli_sweep_axis_t axes[SWEEP_MAX_AXES];
    int naxes, jobs, no_plot, quiet;
    int jobs_set;     /* --jobs given (else one per CPU, one under MPI) */
    int no_mpi;       /* --no-mpi: run alone even under mpirun/srun */
    double tolerance; /* percent of the best step time */
    const char *uncertainty_path;  /* --uncertainty: a validation's table */
    cli_uncertainty_t unc;         /* loaded from it (unc.n 0: none) */
    char *storage[SWEEP_MAX_SETS]; /* strdup'd value lists */
    int nstorage;
} cli_sweep_args_t;

/* One run's numbers, passed back from a worker through a pipe. */
typedef struct cli_sweep_row {
    int done, rc, ddp; /* ddp: 1 DDP, 2 FSDP (buckets holds its units),
                          3 parallel (mem_gib: memory per rank) */
    herd_status_t status;
    double step_s, exposed_s, comm_s, overlap, wall_s;
    long buckets;
    double mem_gib;
    int nofit; /* over its memory limit: marked, never the best */
    /* FSDP and parallel: peak memory per rank on the device, bytes, by
     * part (trace/plot_wl.h's TRACE_MEM_*), and the device's memory
     * (0: none given) */
    double mem_part[5], mem_limit;
} cli_sweep_row_t;

/* Combinations of the swept values (the cross product). */
int cli_sweep_ncombos(const cli_sweep_args_t *a);
/* Value index of axis `ax` in combination `c` (last axis fastest). */
int cli_sweep_value_of(const cli_sweep_args_t *a, int c, int ax);

/* Print the table and the recommendation, write DIR/sweep.tsv and the
 * plot. `current` is the combination that equals the scenario as given
 * (its own values), -1 when none does. Returns 0 or an exit code. */
int cli_sweep_report(const cli_sweep_args_t *a, const cli_sweep_row_t *rows,
                     int current);

/* The processes of an MPI job sharing a sweep (cmd_sweep_mpi.c). */
typedef struct cli_sweep_world {
    herd_comm_t *comm; /* NULL when this process runs alone */
    int rank, size;
} cli_sweep_world_t;

/* Joins the MPI job when the launcher's environment says there are
 * several processes (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * SLURM_STEP_NUM_TASKS); alone otherwise (size 1). 0 or an exit code. */
int cli_sweep_world_open(const cli_sweep_args_t *a, cli_sweep_world_t *w);
/* Rank 0 receives into `rows` the rows of the combinations that
 * `owner[c]` (a rank, or -1: none) gives the other ranks; they send
 * theirs. 0 or an exit code. */
int cli_sweep_world_gather(cli_sweep_world_t *w, const int *owner, int total,
                           cli_sweep_row_t *rows);
void cli_sweep_world_close(cli_sweep_world_t *w);

#endif
