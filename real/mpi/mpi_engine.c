/* real/mpi/mpi_engine.c - the mpi engine's vtable: MPI started once per
 * process (MPI_Init_thread, unless the program already did) and finalized
 * when herd started it and its last communicator goes; the world and
 * subgroups as duplicated MPI communicators that return errors
 * (MPI_ERRORS_RETURN) instead of aborting; MPI errors as herd statuses;
 * modelled compute as a CPU spin that keeps MPI progressing; host
 * buffers, the clock, timeline records and herd_run for one process
 * (their shared part is core/host_engine.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/host_engine.h"
#include "real/mpi/mpi_internal.h"

/* herd called MPI_Init_thread in this process (and so finalizes). */
static int herd_owns_mpi;

uint64_t mpi_now_ns(void)
{
    return core_host_now_ns();
}

static herd_status_t status_of_class(int cls)
{
    switch (cls) {
    case MPI_SUCCESS:
        return HERD_OK;
    case MPI_ERR_TRUNCATE:
        return HERD_ERR_MISMATCH;
    case MPI_ERR_NO_MEM:
        return HERD_ERR_NO_MEMORY;
    case MPI_ERR_BUFFER:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_TAG:
    case MPI_ERR_COMM:
    case MPI_ERR_RANK:
    case MPI_ERR_ROOT:
    case MPI_ERR_GROUP:
    case MPI_ERR_OP:
    case MPI_ERR_ARG:
        return HERD_ERR_INVALID_ARG;
    case MPI_ERR_UNSUPPORTED_OPERATION:
        return HERD_ERR_UNSUPPORTED;
    case MPI_ERR_INTERN:
        return HERD_ERR_INTERNAL;
#ifdef MPI_ERR_PROC_ABORTED
    case MPI_ERR_PROC_ABORTED:
        return HERD_ERR_RANK_EXITED;
#endif
#ifdef MPIX_ERR_PROC_FAILED
    case MPIX_ERR_PROC_FAILED:
        return HERD_ERR_PEER_FAILED;
#endif
    default:
        return HERD_ERR_IO;
    }
}

herd_status_t mpi_fail(herd_comm_t *comm, int code, const char *what)
{
    int cls = MPI_ERR_OTHER, len = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(code, &cls);
    MPI_Error_string(code, text, &len);
    herd_status_t st = status_of_class(cls);
    if (st == HERD_OK)
        return st;
    return core_comm_error(comm, st, "%s: MPI error: %s", what, text);
}

void mpi_req_timeline(mpi_req_t *q, herd_tl_kind_t kind, uint64_t t0,
                      uint64_t t1)
{
    herd_comm_t *c = &q->c->base;
    const core_coll_args_t *a = &q->args;
    herd_tl_rec_t r = {.kind = kind,
                       .rank = c->world_rank,
                       .node = q->c->w->node,
                       .group = c->group_id,
                       .seq = a->seq,
                       .coll = a->coll,
                       .algo = q->algo,
                       .dtype = a->dtype,
                       .op = a->op,
                       .count = a->count,
                       .bytes = kind == HERD_TL_COLL
                                    ? core_args_send_count(a, c->size) *
                                          herd_dtype_size(a->dtype)
                                    : 0,
                       .peer = a->root,
                       .start_ns = t0,
                       .end_ns = t1,
                       .label = q->label[0] ? q->label : NULL,
                       .status = q->status};
    core_comm_timeline(c, &r);
}

/* MPI up, once per process. */
static herd_status_t start_mpi(char *err, size_t len)
{
    int fin = 0, init = 0, provided = 0;
    MPI_Finalized(&fin);
    if (fin) {
        snprintf(err, len,
                 "MPI was already finalized in this process (an MPI process "
                 "starts once: a program that runs herd more than once "
                 "calls MPI_Init_thread and MPI_Finalize itself)");
        return HERD_ERR_UNSUPPORTED;
    }
    MPI_Initialized(&init);
    if (init)
        return HERD_OK;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) !=
        MPI_SUCCESS) {
        snprintf(err, len, "MPI_Init_thread failed");
        return HERD_ERR_IO;
    }
    herd_owns_mpi = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return HERD_OK;
}

static void finalize_if_owned(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (herd_owns_mpi && !fin)
        MPI_Finalize();
}

static int mpi_alive(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    return !fin;
}

/* A duplicate of `from` that returns errors. */
static int dup_comm(MPI_Comm from, MPI_Comm *out)
{
    int rc = MPI_Comm_dup(from, out);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
    return rc;
}

/* Node-local rank and size (ranks sharing memory) and the node's index:
 * nodes numbered by their lowest world rank. */
static int find_node(mpi_world_t *w, MPI_Comm world)
{
    MPI_Comm local;
    int leader = w->rank, rc;
    rc = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, w->rank,
                             MPI_INFO_NULL, &local);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Comm_rank(local, &w->local_rank);
    MPI_Comm_size(local, &w->local_size);
    rc = MPI_Allreduce(&w->rank, &leader, 1, MPI_INT, MPI_MIN, local);
    MPI_Comm_free(&local);
    int *all = malloc((size_t)w->size * sizeof(int));
    if (rc != MPI_SUCCESS || !all) {
        free(all);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    rc = MPI_Allgather(&leader, 1, MPI_INT, all, 1, MPI_INT, world);
    w->node = 0;
    for (int r = 0; rc == MPI_SUCCESS && r < w->size; r++)
        w->node += all[r] == r && r < leader; /* leaders below ours */
    free(all);
    return rc;
}

static herd_status_t world_setup(mpi_world_t *w, mpi_comm_t *c,
                                 const herd_init_t *init, char *err, size_t len)
{
    int rc = dup_comm(MPI_COMM_WORLD, &c->mc);
    const char *what = "duplicating MPI_COMM_WORLD";
    if (rc == MPI_SUCCESS)
        rc = dup_comm(c->mc, &c->sc);
    if (rc == MPI_SUCCESS)
        rc = dup_comm(c->mc, &w->ctl);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_rank(c->mc, &w->rank);
        MPI_Comm_size(c->mc, &w->size);
        what = "finding the node's ranks";
        rc = find_node(w, c->mc);
    }
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = "";
        int n = 0;
        MPI_Error_string(rc, text, &n);
        snprintf(err, len, "%s: %s", what, text);
        return HERD_ERR_IO;
    }
    if (init->world_size > 0 && (init->world_size != w->size ||
                                 (init->rank >= 0 && init->rank != w->rank))) {
        snprintf(err, len,
                 "rank %d of world size %d asked for, MPI started rank %d of "
                 "%d (leave rank and world_size unset: mpirun decides)",
                 init->rank, init->world_size, w->rank, w->size);
        return HERD_ERR_INVALID_ARG;
    }
    /* `herd launch` (or torchrun) starts processes that MPI sees as
     * singletons: each would run alone */
    int launched = core_env_int("WORLD_SIZE", 0);
    if (launched > 1 && w->size == 1) {
        snprintf(err, len,
                 "WORLD_SIZE is %d but MPI started a world of 1: start the "
                 "mpi engine with mpirun or srun, not herd launch",
                 launched);
        return HERD_ERR_INVALID_ARG;
    }
    void *ub = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    w->tag_ub = flag && ub ? *(int *)ub : 32767;
    const char *sc = getenv("HERD_COMPUTE_SCALE");
    w->compute_scale = sc && atof(sc) >= 0 ? atof(sc) : 1.0;
    if (mpi_ops_create(w) != HERD_OK) {
        snprintf(err, len, "MPI_Op_create failed");
        return HERD_ERR_INTERNAL;
    }
    return HERD_OK;
}

static void comm_free_mpi(mpi_comm_t *c)
{
    if (!mpi_alive())
        return;
    if (c->mc != MPI_COMM_NULL)
        MPI_Comm_free(&c->mc);
    if (c->sc != MPI_COMM_NULL)
        MPI_Comm_free(&c->sc);
}

static void world_release(mpi_world_t *w)
{
    if (--w->refs > 0)
        return;
    if (mpi_alive()) {
        mpi_ops_free(w);
        if (w->ctl != MPI_COMM_NULL)
            MPI_Comm_free(&w->ctl);
    }
    core_flight_fini(&w->flight);
    free(w);
    finalize_if_owned();
}

static herd_status_t comm_create(const herd_init_t *init, herd_comm_t **out)
{
    char err[CORE_ERROR_MAX] = "";
    herd_status_t st = start_mpi(err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd mpi: %s\n", err);
        return st;
    }
    mpi_world_t *w = calloc(1, sizeof(*w));
    mpi_comm_t *c = calloc(1, sizeof(*c));
    if (!w || !c) {
        free(w);
        free(c);
        return HERD_ERR_NO_MEMORY;
    }
    w->refs = 1;
    w->ctl = c->mc = c->sc = MPI_COMM_NULL;
    core_flight_init(&w->flight, core_flight_limit());
    for (int d = 0; d < HERD_DTYPE_COUNT; d++)
        for (int o = 0; o < HERD_OP_COUNT; o++)
            w->own_ops[d][o] = MPI_OP_NULL;
    c->w = w;
    st = world_setup(w, c, init, err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd mpi: rank %d: %s\n", w->rank, err);
        comm_free_mpi(c);
        free(c);
        world_release(w);
        return st;
    }
    core_comm_init(&c->base, &mpi_engine_ops, w->rank, w->size, w->local_rank,
                   w->rank, 0, NULL, init);
    *out = &c->base;
    return HERD_OK;
}

static herd_status_t comm_destroy(herd_comm_t *comm)
{
    mpi_comm_t *c = (mpi_comm_t *)comm;
    mpi_world_t *w = c->w;
    /* Requests still in flight on this comm end here (their MPI requests
     * cannot be cancelled: MPI completes them, or drops them at
     * MPI_Finalize). */
    for (mpi_req_t *q = w->active, *next; q; q = next) {
        next = q->next;
        if (q->c == c)
            mpi_req_finish(q, HERD_ERR_CLOSED,
                           "communicator destroyed with the op in flight");
    }
    comm_free_mpi(c);
    core_comm_fini(comm);
    free(c);
    world_release(w);
    return HERD_OK;
}

static herd_status_t group_create(herd_comm_t *parent, const int *ranks, int n,
                                  int gid, herd_comm_t **out)
{
    mpi_comm_t *pc = (mpi_comm_t *)parent;
    int me = -1;
    for (int i = 0; i < n; i++)
        if (ranks[i] == parent->rank)
            me = i;
    if (me < 0) { /* MPI_Comm_create_group involves the members only */
        *out = NULL;
        return HERD_OK;
    }
    mpi_comm_t *g = calloc(1, sizeof(*g));
    int *wr = malloc((size_t)n * sizeof(int));
    if (!g || !wr) {
        free(g);
        free(wr);
        return HERD_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++)
        wr[i] = herd_comm_world_rank(parent, ranks[i]);
    g->mc = g->sc = MPI_COMM_NULL;
    MPI_Group pg = MPI_GROUP_NULL, sub = MPI_GROUP_NULL;
    int rc = MPI_Comm_group(pc->mc, &pg);
    if (rc == MPI_SUCCESS)
        rc = MPI_Group_incl(pg, n, ranks, &sub);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_create_group(
            pc->mc, sub, (int)((unsigned)gid % ((unsigned)pc->w->tag_ub + 1u)),
            &g->mc);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(g->mc, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = dup_comm(g->mc, &g->sc);
    if (sub != MPI_GROUP_NULL)
        MPI_Group_free(&sub);
    if (pg != MPI_GROUP_NULL)
        MPI_Group_free(&pg);
    if (rc != MPI_SUCCESS) {
        herd_status_t st = mpi_fail(parent, rc, "new_group");
        comm_free_mpi(g);
        free(g);
        free(wr);
        return st;
    }
    core_comm_init(&g->base, &mpi_engine_ops, me, n, parent->local_rank,
                   parent->world_rank, gid, wr, NULL);
    core_comm_inherit(&g->base, parent);
    g->w = pc->w;
    g->w->refs++;
    *out = &g->base;
    return HERD_OK;
}

static void poll_cb(void *arg)
{
    mpi_world_t *w = arg;
    if (w->active)
        mpi_progress(w);
}

/* A CPU spin for the (scaled) duration that keeps MPI progressing, so
 * asynchronous collectives overlap modelled compute as on a device. */
static herd_status_t compute(herd_comm_t *comm, double seconds,
                             const char *label)
{
    mpi_world_t *w = ((mpi_comm_t *)comm)->w;
    return core_host_compute(comm, seconds * w->compute_scale, w->node, poll_cb,
                             w, label);
}

static herd_status_t mark(herd_comm_t *comm, const char *label)
{
    return core_host_mark(comm, ((mpi_comm_t *)comm)->w->node, label);
}

/* Subgroups the program did not destroy keep the world alive; a process
 * that leaves MPI without MPI_Finalize fails the whole job, so the run's
 * end finalizes all the same (finalize_if_owned after the world). */
static herd_status_t run(const herd_init_t *init, herd_main_fn fn, void *arg,
                         herd_run_info_t *info)
{
    return core_host_run(&mpi_engine_ops, init, fn, arg, info,
                         finalize_if_owned);
}

const herd_engine_ops_t mpi_engine_ops = {.name = "mpi",
                                          .run = run,
                                          .comm_create = comm_create,
                                          .comm_destroy = comm_destroy,
                                          .group_create = group_create,
                                          .coll_post = mpi_coll_post,
                                          .req_wait = mpi_req_wait,
                                          .req_test = mpi_req_test,
                                          .req_free = mpi_req_free,
                                          .compute = compute,
                                          .alloc = core_host_alloc,
                                          .free = core_host_free,
                                          .now = core_host_now,
                                          .mark = mark,
                                          .flight_dump = mpi_flight_dump_op};
