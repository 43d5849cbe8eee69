/* sim/flight.c - the simulator's flight records: each rank keeps the
 * record a real rank would (core/flight.c: its last HERD_FLIGHT_ENTRIES
 * ops, with group, sequence, kind, sizes, state and times), here in
 * virtual nanoseconds. An op is "started" when posted, as an NCCL kernel
 * starts at once and then waits for its peers, and "completed" when the
 * simulator completes it.
 *
 * herd_flight_dump() writes the calling rank's record, as on the real
 * engines. When a run hangs or times out, the simulator writes every
 * rank's record at the moment it gave up (opts.flight_dir, else
 * $HERD_FLIGHT_DIR), so `herd diagnose DIR` can be run on the
 * simulator's dumps as on a real job's; it finds what the simulator's
 * own report says. Ranks that died or exited write theirs too (a real
 * dead process could not): the dump says so in "rank_state", and
 * `herd diagnose` counts a dead rank as missing from the op it was in.
 *
 * The record starts empty and grows with the ops a rank posts (core/
 * flight.c doubles the ring up to its limit), so a large world that posts
 * few ops pays little for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* The rank's record, set up at its first use with the world's limit
 * (read once per run, not once per rank). */
static core_flight_t *rank_flight(sim_world_t *w, sim_rank_t *r)
{
    if (!w->flight_read) {
        w->flight_max = core_flight_limit();
        w->flight_read = 1;
    }
    if (r->flight.max == 0 && !r->flight.off)
        core_flight_init(&r->flight, w->flight_max);
    return &r->flight;
}

uint64_t sim_flight_post(sim_comm_t *c, const core_coll_args_t *a)
{
    sim_world_t *w = c->w;
    sim_rank_t *r = c->r;
    rank_flight(w, r);
    uint64_t id = core_flight_add(&r->flight, &c->base, a, w->now);
    core_flight_update(&r->flight, id, CORE_FR_STARTED, HERD_OK, w->now);
    return id;
}

void sim_flight_done(sim_world_t *w, const sim_req_t *req, herd_status_t st)
{
    core_flight_update(&req->owner->flight, req->fr_id,
                       st == HERD_OK ? CORE_FR_COMPLETED : CORE_FR_STARTED, st,
                       w->now);
}

static const char *rank_state(const sim_rank_t *r)
{
    switch (r->state) {
    case SIM_RANK_DEAD:
        return "dead";
    case SIM_RANK_EXITED:
        return "exited";
    default:
        return sim_rank_stuck(r) ? "waiting" : "running";
    }
}

static herd_status_t dump_rank(sim_world_t *w, const sim_rank_t *r,
                               const char *reason, const char *dir)
{
    core_flight_meta_t m = {.engine = "sim",
                            .rank = r->id,
                            .world_size = w->n,
                            .now = w->now,
                            .clock = "virtual",
                            .reason = reason,
                            .rank_state = rank_state(r)};
    return core_flight_dump(&r->flight, &m, dir);
}

herd_status_t sim_flight_dump_op(herd_comm_t *comm, const char *dir)
{
    sim_comm_t *c = (sim_comm_t *)comm;
    if (sim_rank_aborting(c->r))
        return core_comm_error(comm, HERD_ERR_ABORTED,
                               "flight dump: the simulated run has ended");
    core_flight_meta_t m = {.engine = "sim",
                            .rank = c->r->id,
                            .world_size = c->w->n,
                            .now = c->w->now,
                            .clock = "virtual",
                            .reason = "api"};
    return core_flight_dump_api(comm, rank_flight(c->w, c->r), &m,
                                dir ? dir : c->w->opts.flight_dir);
}

/* One line after the report: where the dumps went, or why they did not. */
static void report_line(herd_run_info_t *info, const char *line)
{
    if (!info)
        return;
    size_t old = info->report ? strlen(info->report) : 0;
    char *s = realloc(info->report, old + strlen(line) + 2);
    if (!s)
        return;
    if (old && s[old - 1] != '\n')
        s[old++] = '\n';
    strcpy(s + old, line);
    info->report = s;
}

void sim_flight_at_end(sim_world_t *w, herd_run_info_t *info)
{
    if (w->end_status != HERD_ERR_HANG && w->end_status != HERD_ERR_TIMEOUT)
        return;
    const char *dir = w->opts.flight_dir;
    if (!dir)
        dir = core_flight_dir();
    if (!dir)
        return;
    const char *reason = w->end_status == HERD_ERR_HANG ? "hang" : "timeout";
    char line[4200];
    herd_status_t st = HERD_OK;
    int r = 0;
    for (; r < w->n && st == HERD_OK; r++)
        st = dump_rank(w, &w->ranks[r], reason, dir);
    if (st == HERD_OK)
        snprintf(line, sizeof(line),
                 "flight records of all %d ranks: %s/rank<r>.json (herd "
                 "diagnose %s)\n",
                 w->n, dir, dir);
    else
        snprintf(line, sizeof(line),
                 "flight records: writing %s/rank%d.json failed: %s\n", dir,
                 r - 1, herd_status_string(st));
    report_line(info, line);
}
