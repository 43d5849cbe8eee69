/* sim/world.c - herd_run for the simulator: builds the world (options,
 * network model, one context and world communicator per rank, faults),
 * runs the event loop, then diagnoses, unwinds and frees everything. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sym.h"

static herd_status_t opts_error(herd_run_info_t *info, herd_status_t st,
                                const char *msg, int v, int n)
{
    if (info) {
        char buf[256];
        snprintf(buf, sizeof(buf), "sim: %s %d out of range [0, %d)", msg, v,
                 n);
        info->report = strdup(buf);
    }
    return st;
}

static herd_status_t check_opts(const herd_sim_opts_t *o, int n,
                                herd_run_info_t *info)
{
    for (size_t i = 0; i < o->nranks_overrides; i++)
        if (o->ranks[i].rank < 0 || o->ranks[i].rank >= n)
            return opts_error(info, HERD_ERR_INVALID_ARG, "rank override",
                              o->ranks[i].rank, n);
    for (size_t i = 0; i < o->nlink_overrides; i++)
        if (o->links[i].a < 0 || o->links[i].a >= n || o->links[i].b < 0 ||
            o->links[i].b >= n)
            return opts_error(info, HERD_ERR_INVALID_ARG, "link override rank",
                              o->links[i].a < 0 || o->links[i].a >= n
                                  ? o->links[i].a
                                  : o->links[i].b,
                              n);
    for (size_t i = 0; i < o->nfaults; i++)
        if (o->faults[i].rank < 0 || o->faults[i].rank >= n)
            return opts_error(info, HERD_ERR_INVALID_ARG, "fault rank",
                              o->faults[i].rank, n);
    return HERD_OK;
}

static void rank_opts(sim_world_t *w, sim_rank_t *r)
{
    const herd_sim_opts_t *o = &w->opts;
    r->compute_factor = 1.0;
    r->die_at_step = -1;
    for (size_t i = 0; i < o->nranks_overrides; i++)
        if (o->ranks[i].rank == r->id && o->ranks[i].compute_factor > 0)
            r->compute_factor = o->ranks[i].compute_factor;
    sim_rng_seed(&r->rng, o->seed, (uint64_t)r->id);
}

static herd_status_t faults_init(sim_world_t *w)
{
    const herd_sim_opts_t *o = &w->opts;
    for (size_t i = 0; i < o->nfaults; i++) {
        const herd_fault_t *f = &o->faults[i];
        if (f->at_step >= 0)
            w->ranks[f->rank].die_at_step = f->at_step;
        if (f->at_time >= 0) {
            uint64_t t = (uint64_t)llround(f->at_time * 1e9);
            herd_status_t st =
                sim_push(w, t, SIM_EV_DEATH, (uint32_t)f->rank, NULL);
            if (st != HERD_OK)
                return st;
        }
    }
    return HERD_OK;
}

static int world_size_of(const herd_init_t *init, const herd_sim_opts_t *o)
{
    if (o->world_size > 0)
        return o->world_size;
    if (init->world_size > 0)
        return init->world_size;
    return o->cluster.nodes * o->cluster.gpus_per_node;
}

static herd_status_t ranks_init(sim_world_t *w)
{
    size_t stack =
        w->opts.stack_bytes ? w->opts.stack_bytes : sim_ctx_default_stack();
    w->ranks = calloc((size_t)w->n, sizeof(*w->ranks));
    w->dead = calloc((size_t)w->n, 1);
    if (!w->ranks || !w->dead)
        return HERD_ERR_NO_MEMORY;
    sim_stack_pool_init(&w->stacks, stack, (size_t)w->n);
    for (int i = 0; i < w->n; i++) {
        sim_rank_t *r = &w->ranks[i];
        r->w = w;
        r->id = i;
        rank_opts(w, r);
        herd_status_t st =
            sim_ctx_create(&r->ctx, &w->stacks, sim_rank_entry, r);
        if (st == HERD_OK)
            st = sim_comm_new(w, r, i, w->n, 0, NULL, NULL, &r->world_comm);
        if (st == HERD_OK)
            st = sim_push(w, 0, SIM_EV_RESUME, (uint32_t)i, NULL);
        if (st != HERD_OK)
            return st;
    }
    return HERD_OK;
}

/* HERD_STEPS_DIR asks for step records (every rank's, so the symmetry
 * shortcut stands aside); a directory that cannot take them is said once
 * and the run goes on without them. */
static void steplog_open(sim_world_t *w)
{
    const char *dir = core_steplog_dir();
    char err[256];
    if (dir && core_steplog_open(dir, "steps.tsv", &w->steplog, err,
                                 sizeof(err)) != HERD_OK)
        fprintf(stderr, "herd sim: %s\n", err);
}

static void world_free(sim_world_t *w)
{
    sim_inst_free_all(w);
    sim_sym_fini(w);
    if (core_steplog_close(w->steplog) != HERD_OK)
        fprintf(stderr, "herd sim: writing the step records in %s failed\n",
                core_steplog_dir());
    sim_p2p_fini(w);
    for (int i = 0; w->ranks && i < w->n; i++) {
        sim_rank_t *r = &w->ranks[i];
        while (r->reqs)
            sim_req_release(r->reqs);
        while (r->groups) {
            sim_comm_t *g = r->groups;
            r->groups = g->next;
            core_comm_fini(&g->base);
            free(g);
        }
        if (r->world_comm) {
            core_comm_fini(&r->world_comm->base);
            free(r->world_comm);
        }
        core_flight_fini(&r->flight);
        for (size_t j = 0; j < r->nallocs; j++)
            free(r->allocs[j]);
        free(r->allocs);
        sim_ctx_destroy(&r->ctx);
    }
    sim_stack_pool_fini(&w->stacks);
    free(w->ranks);
    free(w->dead);
    if (w->net)
        sim_net_destroy(w->net);
    sim_flow_fini(w);
    sim_exec_build_fini(w);
    sim_evq_fini(&w->q);
    sim_htab_fini(&w->insts);
    free(w->work);
    free(w->work_step);
}

static herd_status_t world_init(sim_world_t *w, const herd_init_t *init,
                                herd_run_info_t *info)
{
    if (init->engine_opts)
        w->opts = *(const herd_sim_opts_t *)init->engine_opts;
    else
        herd_sim_opts_init(&w->opts);
    w->init = *init;
    w->n = world_size_of(init, &w->opts);
    w->gpus_per_node =
        w->opts.cluster.gpus_per_node > 0 ? w->opts.cluster.gpus_per_node : 1;
    w->first_failed = -1;
    if (w->n < 1 || w->n > (1 << 20))
        return opts_error(info, HERD_ERR_INVALID_ARG, "world size", w->n,
                          (1 << 20) + 1);
    herd_status_t st = check_opts(&w->opts, w->n, info);
    if (st == HERD_OK)
        st = sim_mem_init(w, info);
    char err[256] = "";
    if (st == HERD_OK) {
        st = sim_net_check_opts(&w->opts, w->n, err, sizeof(err));
        if (st != HERD_OK && info) {
            char buf[300];
            snprintf(buf, sizeof(buf), "sim: %s", err);
            info->report = strdup(buf);
        }
    }
    if (st == HERD_OK)
        st = sim_net_create(&w->opts, w->n, sim_net_cb, w, &w->net);
    if (st == HERD_OK)
        steplog_open(w);
    if (st == HERD_OK)
        st = sim_sym_init(w);
    if (st == HERD_OK)
        st = ranks_init(w);
    if (st == HERD_OK)
        st = faults_init(w);
    w->live = w->n;
    return st;
}

static herd_status_t run_result(sim_world_t *w, herd_run_info_t *info,
                                sim_diag_t *diag)
{
    herd_status_t st = HERD_OK;
    sim_diag_t d;
    memset(&d, 0, sizeof(d));
    if (w->end_status == HERD_ERR_HANG || w->end_status == HERD_ERR_TIMEOUT ||
        w->interrupted || w->mem_over) {
        st = w->end_status;
        if (sim_diag_build(w, &d) != HERD_OK)
            st = HERD_ERR_NO_MEMORY;
    } else if (w->end_status != HERD_OK) {
        st = w->end_status;
    } else if (w->first_failed >= 0) {
        st = HERD_ERR_RANK_EXITED;
    }
    uint64_t tend = 0;
    for (int i = 0; i < w->n; i++)
        if (w->ranks[i].t_end > tend)
            tend = w->ranks[i].t_end;
    if (w->end_status != HERD_OK)
        tend = w->now;
    if (info) {
        info->failed_rank = w->first_failed;
        info->exit_code = w->first_failed >= 0 ? w->first_exit_code : 0;
        info->end_time_ns = tend;
        info->events = w->events;
        if (d.text)
            info->report = strdup(d.text);
    }
    if (diag)
        *diag = d;
    else
        sim_diag_clear(&d);
    return st;
}

herd_status_t sim_run(const herd_init_t *init, herd_main_fn fn, void *arg,
                      herd_run_info_t *info, sim_diag_t *diag)
{
    if (diag)
        memset(diag, 0, sizeof(*diag));
    sim_world_t *w = calloc(1, sizeof(*w));
    if (!w)
        return HERD_ERR_NO_MEMORY;
    w->fn = fn;
    w->fn_arg = arg;
    herd_status_t st = world_init(w, init, info);
    if (st == HERD_OK) {
        sim_world_loop(w);
        st = run_result(w, info, diag);
        sim_flight_at_end(w, info); /* before the ranks unwind */
        sim_world_abort_ranks(w);
    }
    world_free(w);
    free(w);
    return st;
}

static herd_status_t sim_engine_run(const herd_init_t *init, herd_main_fn fn,
                                    void *arg, herd_run_info_t *info)
{
    return sim_run(init, fn, arg, info, NULL);
}

herd_status_t sim_engine_run_op(const herd_init_t *init, herd_main_fn fn,
                                void *arg, herd_run_info_t *info)
{
    return sim_engine_run(init, fn, arg, info);
}
