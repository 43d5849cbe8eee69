/* real/tcp/progress.c - progress, waiting, timeouts and failures of the
 * tcp engine.
 *
 * Progress runs in the calling thread (inside post, wait, test and
 * modelled compute), not in a progress thread: there are no locks on the
 * data path and no cross-thread wake-up per completion, which on small
 * machines costs 10-60 us (DESIGN.md). A wait first polls without
 * blocking for HERD_TCP_SPIN_US (default 200 us; yielding the CPU between
 * polls), then blocks in epoll. Polling reads the awaited sockets directly
 * and runs the event loop every 8th pass (HERD_TCP_DIRECT=0: every pass).
 *
 * A timeout names the ranks that did not join: every rank that times out
 * publishes how far it got in the group through the store, waits a grace
 * period, and ranks that published nothing (or an earlier sequence number)
 * are the missing ones. A dead peer fails every active op at once and an
 * ABORT notice is forwarded to every connected peer, so ranks that do not
 * talk to the dead one directly fail fast too. */
#include <event2/event.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/store/store.h"
#include "real/tcp/tcp.h"

herd_status_t tcp_progress(tcp_world_t *w, int block_us)
{
    if (block_us <= 0)
        return event_base_loop(w->base, EVLOOP_NONBLOCK) < 0 ? HERD_ERR_IO
                                                             : HERD_OK;
    struct timeval tv = {.tv_sec = block_us / 1000000,
                         .tv_usec = block_us % 1000000};
    event_add(w->tick_ev, &tv);
    int rc = event_base_loop(w->base, EVLOOP_ONCE);
    event_del(w->tick_ev);
    return rc < 0 ? HERD_ERR_IO : HERD_OK;
}

void tcp_world_fail(tcp_world_t *w, int rank, herd_status_t st, const char *why)
{
    if (w->fail_status != HERD_OK)
        return;
    w->failed_rank = rank;
    w->fail_status = st;
    snprintf(w->fail_msg, sizeof(w->fail_msg), "%s", why);
    while (w->ops_head)
        tcp_op_fail(w->ops_head, st, why);
    if (rank >= 0)
        for (int r = 0; r < w->size; r++)
            if (r != rank && r != w->rank)
                tcp_send_control(w, &w->peers[r], TCP_MSG_ABORT, rank);
    const char *dir = core_flight_dir();
    if (dir)
        tcp_flight_dump(w, dir, "peer failure");
}

/* World ranks this op still waits to hear from, as "1, 3". */
static void waiting_on(const tcp_op_t *op, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    int seen_max = op->w->size;
    char *seen = calloc((size_t)seen_max, 1);
    for (uint32_t s = 0; s < op->sched.nsteps && seen; s++) {
        const core_step_t *st = &op->sched.steps[s];
        if ((st->kind != CORE_STEP_RECV && st->kind != CORE_STEP_RECV_REDUCE) ||
            op->state[s] == TCP_STEP_DONE || op->arrived[s])
            continue;
        int wr = tcp_group_world_rank(op->comm, st->peer);
        if (seen[wr] || n + 16 > len)
            continue;
        seen[wr] = 1;
        n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? ", " : "", wr);
    }
    free(seen);
}

static int64_t peer_position(tcp_world_t *w, int group, int wr)
{
    char key[128];
    snprintf(key, sizeof(key), "%spos/%d/%d", w->prefix, group, wr);
    const char *keys[1] = {key};
    int exists = 0;
    if (store_check(w->store, keys, 1, &exists) != HERD_OK || !exists)
        return -1;
    void *val = NULL;
    size_t len = 0;
    if (store_get(w->store, key, 1.0, &val, &len) != HERD_OK)
        return -1;
    int64_t v = strtoll(val, NULL, 10);
    free(val);
    return v;
}

/* Ask the store which members reached this op; "" if all did or the store
 * cannot tell. */
static void missing_ranks(tcp_op_t *op, char *buf, size_t len)
{
    tcp_world_t *w = op->w;
    herd_comm_t *c = &op->comm->base;
    buf[0] = '\0';
    if (!w->store)
        return;
    char key[128], val[32];
    snprintf(key, sizeof(key), "%spos/%d/%d", w->prefix, c->group_id, w->rank);
    snprintf(val, sizeof(val), "%" PRIu64, c->seq);
    if (store_set(w->store, key, val, strlen(val)) != HERD_OK)
        return;
    double grace = c->timeout_s < 0.5 ? 0.5 : c->timeout_s;
    uint64_t end = tcp_now_ns() + (uint64_t)((grace > 5 ? 5 : grace) * 1e9);
    size_t n = 0;
    for (int i = 0; i < c->size; i++) {
        int wr = tcp_group_world_rank(op->comm, i);
        int64_t pos = peer_position(w, c->group_id, wr);
        while (pos < (int64_t)op->args.seq && tcp_now_ns() < end) {
            tcp_progress(w, 20000);
            pos = peer_position(w, c->group_id, wr);
        }
        if (pos < (int64_t)op->args.seq && n + 16 < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? ", " : "", wr);
    }
}

/* A monitored_barrier past its deadline: rank 0 names the ranks whose
 * report did not come (its receives not arrived), the others say rank 0
 * did not release them; no store round (the schedule knows who is
 * missing). */
static void monitored_timeout(tcp_op_t *op, char *msg, size_t len)
{
    herd_comm_t *c = &op->comm->base;
    int *absent = malloc((size_t)c->size * sizeof(int)), n = 0;
    for (uint32_t s = 0; absent && s < op->sched.nsteps; s++) {
        const core_step_t *st = &op->sched.steps[s];
        if (st->kind == CORE_STEP_RECV && op->state[s] != TCP_STEP_DONE &&
            !op->arrived[s])
            absent[n++] = st->peer;
    }
    char keep[CORE_ERROR_MAX];
    memcpy(keep, c->last_error, sizeof(keep));
    core_monitored_barrier_error(c, &op->args, c->rank == 0 ? absent : NULL, n,
                                 HERD_ERR_TIMEOUT);
    snprintf(msg, len, "%s", c->last_error);
    memcpy(c->last_error, keep, sizeof(keep));
    free(absent);
}

static void op_timeout(tcp_op_t *op)
{
    char waiting[256], missing[256], msg[CORE_ERROR_MAX];
    herd_comm_t *c = &op->comm->base;
    int p2p =
        op->args.coll == HERD_COLL_SEND || op->args.coll == HERD_COLL_RECV;
    if (op->args.coll == HERD_COLL_MONITORED_BARRIER) {
        monitored_timeout(op, msg, sizeof(msg));
        tcp_op_fail(op, HERD_ERR_TIMEOUT, msg);
        goto failed;
    }
    waiting_on(op, waiting, sizeof(waiting));
    missing[0] = '\0';
    if (!p2p)
        missing_ranks(op, missing, sizeof(missing));
    if (op->done)
        return; /* it completed during the grace period after all */
    int n = snprintf(msg, sizeof(msg),
                     "%s (group %d, seq %" PRIu64 ") timed out after %.3g s "
                     "on rank %d",
                     herd_coll_name(op->args.coll), c->group_id, op->args.seq,
                     c->timeout_s, c->world_rank);
    if (missing[0] && n > 0 && (size_t)n < sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n,
                      ": rank(s) %s did not join", missing);
    if (waiting[0] && n > 0 && (size_t)n < sizeof(msg))
        snprintf(msg + n, sizeof(msg) - (size_t)n,
                 "; waiting for data from rank(s) %s", waiting);
    tcp_op_fail(op, HERD_ERR_TIMEOUT, msg);
failed:;
    tcp_world_t *w = op->w;
    if (w->fail_status == HERD_OK) {
        /* Like a torch watchdog timeout: the communicator is unusable. */
        w->fail_status = HERD_ERR_TIMEOUT;
        snprintf(w->fail_msg, sizeof(w->fail_msg), "%s", msg);
    }
    const char *dir = core_flight_dir();
    if (dir)
        tcp_flight_dump(w, dir, "timeout");
}

#define DIRECT_PEERS 4

/* Read the sockets of the peers this rank awaits data from straight away,
 * without the event loop: one epoll_wait and libevent's dispatch less per
 * message. Only while no send is blocked (the loop watches those) and few
 * peers are awaited. Returns 0 when the event loop must run instead. */
static int poll_direct(tcp_world_t *w)
{
    tcp_peer_t *ps[DIRECT_PEERS];
    int n = 0;
    for (int r = 0; r < w->size; r++) {
        tcp_peer_t *p = &w->peers[r];
        if (p->tx_head)
            return 0;
        if (p->in_fd < 0 ||
            (!p->posted_head && p->rx.mode == TCP_RX_HEADER && !p->rx.hdr_got))
            continue;
        if (n == DIRECT_PEERS)
            return 0;
        ps[n++] = p;
    }
    for (int i = 0; i < n; i++)
        tcp_peer_readable(w, ps[i]);
    return n > 0;
}

static void spin(tcp_op_t *op)
{
    tcp_world_t *w = op->w;
    uint64_t end = tcp_now_ns() + (uint64_t)w->spin_us * 1000;
    do {
        /* Every 8th pass (counted across waits) runs the loop: accepts,
         * control messages, signals, data nothing is posted for yet. */
        if ((++w->polls & 7) == 0 || !w->direct || !poll_direct(w))
            tcp_progress(w, 0);
        if (op->done)
            return;
        if (w->yield)
            sched_yield();
    } while (tcp_now_ns() < end);
}

herd_status_t tcp_op_wait(tcp_op_t *op)
{
    tcp_world_t *w = op->w;
    uint64_t t0 = tcp_now_ns();
    double tmo =
        op->args.timeout_s > 0 ? op->args.timeout_s : op->comm->base.timeout_s;
    uint64_t deadline = op->t_post + (uint64_t)(tmo * 1e9);
    int waited = !op->done;
    while (!op->done) {
        tcp_check_suspects(w);
        if (op->done)
            break;
        spin(op);
        if (op->done)
            break;
        uint64_t t = tcp_now_ns();
        if (t >= deadline) {
            op_timeout(op);
            break;
        }
        uint64_t left_us = (deadline - t) / 1000 + 1;
        tcp_progress(w, left_us > 100000 ? 100000 : (int)left_us);
    }
    if (waited)
        tcp_op_timeline(op, HERD_TL_WAIT, 0, t0, tcp_now_ns());
    if (op->status != HERD_OK)
        core_comm_error(&op->comm->base, op->status, "%s", op->err);
    return op->status;
}
