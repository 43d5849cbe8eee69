/* sim/diag.h - the simulator's hang / timeout diagnosis, as a structure
 * (for tests and tools) and as text (herd_run_info_t.report).
 *
 * When nothing can progress, or a collective outlives its timeout, the
 * engine records who waits in which op and who is missing, and classifies
 * the cause the way PyTorch's flight-recorder analyser does. sim_run() is
 * herd_run() for the sim engine with the structured result as well. */
#ifndef HERD_SIM_DIAG_H
#define HERD_SIM_DIAG_H

#include <stdint.h>

#include <herd/herd.h>

typedef enum sim_diag_class {
    SIM_DIAG_NONE,
    SIM_DIAG_MISSING_RANK,  /* a rank never joined (exited, dead, elsewhere) */
    SIM_DIAG_COLL_MISMATCH, /* different ops at the same (group, seq) */
    SIM_DIAG_SIZE_MISMATCH, /* same op, different counts */
    SIM_DIAG_DTYPE_MISMATCH,
    SIM_DIAG_P2P_CYCLE /* ranks blocked on each other's send/recv */
} sim_diag_class_t;

typedef enum sim_diag_state {
    SIM_DIAG_RUNNING, /* not blocked (computing, or still progressing) */
    SIM_DIAG_WAITING, /* blocked in herd_req_wait */
    SIM_DIAG_EXITED,
    SIM_DIAG_DEAD
} sim_diag_state_t;

/* What one rank was doing when the run ended. */
typedef struct sim_diag_rank {
    sim_diag_state_t state;
    int exit_code;    /* EXITED */
    herd_coll_t coll; /* WAITING: the op it waits on */
    int group;
    uint64_t seq;
    uint64_t count;
    herd_dtype_t dtype;
    herd_op_t op;
    int peer;          /* root / p2p peer (world rank for p2p), or -1 */
    uint64_t since_ns; /* when that op was posted */
} sim_diag_rank_t;

typedef struct sim_diag {
    herd_status_t status; /* HERD_ERR_HANG, HERD_ERR_TIMEOUT, or
                             HERD_ERR_ABORTED when opts.stop ended the
                             run (an interrupt; cls is then NONE); OK:
                             none */
    sim_diag_class_t cls;
    uint64_t time_ns;
    uint64_t events;
    /* the stuck (or timed-out) collective, when there is one */
    int group;
    uint64_t seq;
    herd_coll_t coll;
    int nranks;
    sim_diag_rank_t *ranks; /* per world rank */
    int *waiting;
    int nwaiting; /* world ranks blocked in that op */
    int *missing;
    int nmissing; /* world ranks that did not join it */
    int *cycle;
    int ncycle; /* p2p cycle, in wait-for order */
    int *mismatched;
    int nmismatched; /* ranks that disagree with the first */
    char *text;
} sim_diag_t;

const char *sim_diag_class_name(sim_diag_class_t cls);
void sim_diag_clear(sim_diag_t *d);

/* herd_run for backend "sim" that also returns the structured diagnosis
 * (cleared with sim_diag_clear). `diag` may be NULL. */
herd_status_t sim_run(const herd_init_t *init, herd_main_fn fn, void *arg,
                      herd_run_info_t *info, sim_diag_t *diag);

#endif
