/* cli/cmd_sweep_mpi.c - `herd sweep` across the processes of an MPI job
 * (mpirun, srun): when the environment says this process is one of
 * several, the world comes from herd's mpi engine (no MPI call here),
 * each process simulates the combinations the plan gives its rank, and
 * rank 0 receives the others' rows (point-to-point, in the plan's order)
 * to write the one report. The plan is computed alike by every process,
 * so the rows need no index and the report is the one-process sweep's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_sweep.h"

/* The rows wait for the slowest process's share: a day of simulation
 * before a silent peer is an error. */
#define SWEEP_MPI_TIMEOUT_S 86400.0

/* Processes of the job as its launcher's environment tells (Open MPI's
 * mpirun, a PMI launcher, Slurm's srun); 1 when none does. */
static int env_world_size(const char **var)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        long n;
        if (v && *v && !cli_parse_int(v, 1, 1 << 24, &n) && n > 1) {
            *var = vars[i];
            return (int)n;
        }
    }
    return 1;
}

static int mpi_built(void)
{
    for (const char *const *e = herd_engine_names(); *e; e++)
        if (!strcmp(*e, "mpi"))
            return 1;
    return 0;
}

int cli_sweep_world_open(const cli_sweep_args_t *a, cli_sweep_world_t *w)
{
    memset(w, 0, sizeof(*w));
    w->size = 1;
    const char *var = NULL;
    int n = a->no_mpi ? 1 : env_world_size(&var);
    if (n == 1)
        return 0;
    if (!mpi_built())
        return cli_usage_error("sweep",
                               "started as one of %d processes (%s=%d), but "
                               "this herd has no mpi engine to share the "
                               "sweep (needs Open MPI: libopenmpi-dev); run "
                               "one process, or --no-mpi to let each run the "
                               "whole sweep",
                               n, var, n);
    herd_init_t init = {.backend = "mpi",
                        .rank = -1,
                        .local_rank = -1,
                        .timeout_s = SWEEP_MPI_TIMEOUT_S};
    herd_status_t st = herd_comm_create(&init, &w->comm);
    if (st != HERD_OK) {
        fprintf(stderr, "herd sweep: joining the MPI job (%s=%d) failed: %s\n",
                var, n, herd_status_string(st));
        return 1;
    }
    w->rank = herd_comm_rank(w->comm);
    w->size = herd_comm_size(w->comm);
    return 0;
}

void cli_sweep_world_close(cli_sweep_world_t *w)
{
    if (w->comm)
        herd_comm_destroy(w->comm);
    w->comm = NULL;
}

/* Rows owned by `rank`, in combination order, packed into `buf` (or
 * unpacked from it): both sides walk the same plan. */
static size_t pack(const int *owner, int total, int rank, cli_sweep_row_t *rows,
                   cli_sweep_row_t *buf, int unpack)
{
    size_t k = 0;
    for (int c = 0; c < total; c++)
        if (owner[c] == rank) {
            if (buf && unpack)
                rows[c] = buf[k];
            else if (buf)
                buf[k] = rows[c];
            k++;
        }
    return k;
}

int cli_sweep_world_gather(cli_sweep_world_t *w, const int *owner, int total,
                           cli_sweep_row_t *rows)
{
    if (w->size == 1)
        return 0;
    herd_status_t st = HERD_OK;
    cli_sweep_row_t *buf = NULL;
    int first = w->rank == 0 ? 1 : w->rank,
        last = w->rank == 0 ? w->size : w->rank + 1;
    for (int r = first; r < last && st == HERD_OK; r++) {
        size_t n = pack(owner, total, r, rows, NULL, 0);
        if (n == 0)
            continue;
        free(buf);
        buf = calloc(n, sizeof(*buf));
        if (!buf) {
            st = HERD_ERR_NO_MEMORY;
            break;
        }
        size_t bytes = n * sizeof(*buf);
        if (w->rank == 0) {
            st = herd_recv(w->comm, buf, bytes, HERD_UINT8, r, 0, NULL);
            if (st == HERD_OK)
                pack(owner, total, r, rows, buf, 1);
        } else {
            pack(owner, total, r, rows, buf, 0);
            st = herd_send(w->comm, buf, bytes, HERD_UINT8, 0, 0, NULL);
        }
    }
    free(buf);
    if (st != HERD_OK) {
        fprintf(stderr,
                "herd sweep: rank %d: gathering the rows failed: %s "
                "(%s)\n",
                w->rank, herd_status_string(st), herd_last_error(w->comm));
        return 1;
    }
    return 0;
}
