/* real/launch/elastic.c - elastic membership for `herd launch --nnodes
 * MIN:MAX`, torchrun's c10d rendezvous over herd's store: each round
 * waits for MIN nodes, admits up to MAX (closing at once when MAX have
 * joined, or once no one else came within the last-call window after
 * MIN), numbers the nodes in the order they joined, and while the round
 * runs watches for lost nodes (keep-alives) and for nodes waiting to
 * join a group below MAX; either ends the round and every node still
 * there rendezvouses again.
 *
 * Keys, under herd/launch/<run_id>/: <round>/joined counts the nodes
 * that joined the round (the count before a node's own add is its node
 * rank); <round>/size is written once (compare_set) when the round
 * closes; <round>/who/<node> says "host pid" for messages;
 * <round>/beat/<node> is a node's keep-alive counter, which the others
 * watch change on their own clocks (no clock is shared); <round>/fail
 * ends the round (launch.c); finished marks the job done, so that nodes
 * still waiting leave. A node that joins a closed round waits for the
 * next: below MAX its arrival ends the running round, at MAX it waits
 * (without a deadline, as torchrun's redundant nodes) for a place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/launch/launch_int.h"

/* 1 and the value (NUL-terminated in buf) when the key exists, 0 when
 * not, -1 when the store did not answer. */
static int read_key(launch_agent_t *a, const char *key, char *buf, size_t len)
{
    const char *k = key;
    int exists = 0;
    if (store_check(a->cl, &k, 1, &exists) != HERD_OK)
        return -1;
    if (!exists)
        return 0;
    void *v = NULL;
    size_t n = 0;
    if (store_get(a->cl, key, 5.0, &v, &n) != HERD_OK)
        return -1;
    snprintf(buf, len, "%s", (char *)v);
    free(v);
    return 1;
}

/* A counter's value (add 0: a missing counter reads 0); -1 on error. */
static int64_t counter(launch_agent_t *a, int round, const char *what, int node)
{
    char key[256];
    int64_t v = 0;
    launch_key(a, key, sizeof(key), round, what, node);
    return store_add(a->cl, key, 0, &v) == HERD_OK ? v : -1;
}

static int job_finished(launch_agent_t *a)
{
    char key[256], v[16];
    snprintf(key, sizeof(key), "herd/launch/%s/finished", a->run_id);
    return read_key(a, key, v, sizeof(v));
}

/* Close round r at n nodes unless someone closed it first. */
static void close_round(launch_agent_t *a, int r, int64_t n)
{
    char key[256], val[32];
    launch_key(a, key, sizeof(key), r, "size", -1);
    snprintf(val, sizeof(val), "%lld", (long long)n);
    void *cur = NULL;
    size_t len = 0;
    if (store_compare_set(a->cl, key, "", 0, val, strlen(val), &cur, &len) ==
        HERD_OK)
        free(cur);
}

static herd_status_t join_round(launch_agent_t *a, int r, int *idx)
{
    char key[256], who[128], host[64] = "?";
    int64_t v = 0;
    launch_key(a, key, sizeof(key), r, "joined", -1);
    if (store_add(a->cl, key, 1, &v) != HERD_OK)
        return HERD_ERR_CLOSED;
    *idx = (int)(v - 1);
    gethostname(host, sizeof(host) - 1);
    snprintf(who, sizeof(who), "%s pid %ld", host, (long)getpid());
    launch_key(a, key, sizeof(key), r, "who", *idx);
    return store_set(a->cl, key, who, strlen(who));
}

/* Admitted as node idx of n: the round's keep-alive view starts now. */
static round_end_t admitted(launch_agent_t *a, int r, int idx, int n)
{
    launch_peer_t *p = realloc(a->peers, (size_t)n * sizeof(*p));
    if (!p)
        return ROUND_ERROR;
    a->peers = p;
    double now = launch_now_s();
    for (int i = 0; i < n; i++)
        p[i] = (launch_peer_t){.beats = -1, .seen_s = now};
    a->next_beat_s = now;
    a->g.node_rank = idx;
    a->g.nnodes = n;
    launch_log(a, "round %d: node %d of %d (--nnodes %d:%d)", r, idx, n,
               a->o->min_nodes, a->o->nnodes);
    return ROUND_OK;
}

/* The round is open: close it when MAX have joined, or when MIN have and
 * the count has not grown for the last-call window (or the deadline has
 * come). seen and seen_at follow the count on this node's clock. 1 when
 * it was closed (or may have been), 0 to wait on. */
static int maybe_close(launch_agent_t *a, int r, int64_t *seen, double *seen_at,
                       double deadline)
{
    const launch_opts_t *o = a->o;
    int64_t joined = counter(a, r, "joined", -1);
    double now = launch_now_s();
    if (joined >= o->nnodes) {
        close_round(a, r, o->nnodes);
        return 1;
    }
    if (joined < o->min_nodes)
        return 0;
    if (joined != *seen) {
        if (*seen < o->min_nodes)
            launch_log(a,
                       "round %d: %lld nodes joined (at least %d); waiting "
                       "%.3g s for more (at most %d)",
                       r, (long long)joined, o->min_nodes, o->last_call_s,
                       o->nnodes);
        *seen = joined;
        *seen_at = now;
    }
    if (now - *seen_at < o->last_call_s && now < deadline)
        return 0;
    close_round(a, r, joined);
    return 1;
}

static round_end_t join_timeout(launch_agent_t *a, int r, int idx, char *err,
                                size_t errlen)
{
    const launch_opts_t *o = a->o;
    int64_t joined = counter(a, r, "joined", -1);
    char rec[160];
    /* the others start the round again without this node */
    snprintf(rec, sizeof(rec),
             "%d %d -1 -1 0 node %d left the rendezvous of round %d before "
             "it closed (timed out)",
             LAUNCH_FAIL_LEFT, idx, idx, r);
    if (idx >= 0)
        launch_publish(a, r, rec);
    snprintf(err, errlen,
             "rendezvous of run '%s' timed out after %.3g s (--rdzv-timeout): "
             "%lld of at least %d nodes joined round %d",
             a->run_id, o->store_timeout_s, (long long)joined, o->min_nodes, r);
    return ROUND_ERROR;
}

round_end_t launch_elastic_join(launch_agent_t *a, int *round, char *err,
                                size_t errlen)
{
    const launch_opts_t *o = a->o;
    double deadline = launch_now_s() + o->store_timeout_s;
    int r = *round, idx = -1, told = 0;
    int64_t seen = -1;
    double seen_at = 0;
    char key[256], val[32];
    for (;;) {
        int fin = job_finished(a);
        launch_key(a, key, sizeof(key), r, "fail", -1);
        int ended = fin == 0 ? read_key(a, key, val, sizeof(val)) : 0;
        if (fin < 0 || ended < 0)
            return ROUND_ERROR;
        if (fin) {
            *round = r;
            a->g.node_rank = idx;
            if (idx < 0) {
                snprintf(err, errlen,
                         "the rendezvous of run '%s' is closed: the job has "
                         "finished",
                         a->run_id);
                return ROUND_ERROR;
            }
            snprintf(a->fail, sizeof(a->fail),
                     "the job finished without this node (it was not "
                     "admitted: --nnodes %d:%d)",
                     o->min_nodes, o->nnodes);
            return ROUND_REMOTE_FAILED;
        }
        if (ended) { /* the round ended: the next one */
            r++, idx = -1, told = 0, seen = -1;
            continue;
        }
        if (idx < 0 && join_round(a, r, &idx) != HERD_OK)
            return ROUND_ERROR;
        launch_key(a, key, sizeof(key), r, "size", -1);
        int closed = read_key(a, key, val, sizeof(val));
        if (closed < 0)
            return ROUND_ERROR;
        int n = closed ? atoi(val) : 0;
        if (closed && idx < n) {
            *round = r;
            return admitted(a, r, idx, n);
        }
        if (closed) {
            a->g.node_rank = idx; /* its goodbye, if the job ends */
            if (!told++)
                launch_log(a,
                           "round %d closed with %d nodes%s; waiting for the "
                           "next round",
                           r, n,
                           n >= o->nnodes ? " (the most --nnodes allows)" : "");
            /* below MAX the running group restarts for this node; at MAX
             * a place may take any time, as for torchrun's redundant
             * nodes */
            if (n < o->nnodes && launch_now_s() > deadline)
                return join_timeout(a, r, -1, err, errlen);
        } else if (maybe_close(a, r, &seen, &seen_at, deadline)) {
            continue;
        } else if (launch_now_s() > deadline) {
            return join_timeout(a, r, idx, err, errlen);
        }
        if (launch_agent_sleep(a))
            return ROUND_SIGNALED;
    }
}

/* A peer whose counter did not move for keep_alive_max intervals. */
static int peers_alive(launch_agent_t *a, int r)
{
    const launch_opts_t *o = a->o;
    double now = launch_now_s();
    if (now < a->next_beat_s)
        return 1;
    char key[256];
    int64_t v = 0;
    launch_key(a, key, sizeof(key), r, "beat", a->g.node_rank);
    store_add(a->cl, key, 1, &v);
    a->next_beat_s = now + o->keep_alive_s;
    for (int i = 0; i < a->g.nnodes; i++) {
        int64_t b = i == a->g.node_rank ? -1 : counter(a, r, "beat", i);
        if (b < 0 || b != a->peers[i].beats) {
            a->peers[i].beats = b;
            a->peers[i].seen_s = now;
            continue;
        }
        double quiet = now - a->peers[i].seen_s;
        if (quiet <= o->keep_alive_s * o->keep_alive_max)
            continue;
        char who[128] = "", rec[256];
        launch_key(a, key, sizeof(key), r, "who", i);
        read_key(a, key, who, sizeof(who));
        snprintf(rec, sizeof(rec),
                 "%d %d -1 -1 0 (%s) stopped sending keep-alives (none for "
                 "%.3g s)",
                 LAUNCH_FAIL_LOST, i, who, quiet);
        launch_publish(a, r, rec);
        return 0;
    }
    return 1;
}

int launch_elastic_check(launch_agent_t *a, int round, int joins)
{
    const launch_opts_t *o = a->o;
    if (joins && a->g.nnodes < o->nnodes) {
        int64_t joined = counter(a, round, "joined", -1);
        if (joined > a->g.nnodes) {
            char rec[256];
            snprintf(rec, sizeof(rec),
                     "%d %d -1 -1 0 a node is waiting to join (round %d has "
                     "%d nodes, --nnodes %d:%d)",
                     LAUNCH_FAIL_JOIN, a->g.node_rank, round, a->g.nnodes,
                     o->min_nodes, o->nnodes);
            launch_publish(a, round, rec);
            return 1;
        }
    }
    return !peers_alive(a, round);
}

void launch_elastic_finish(launch_agent_t *a, int round)
{
    char key[256];
    snprintf(key, sizeof(key), "herd/launch/%s/finished", a->run_id);
    store_set(a->cl, key, "1", 1);
    int64_t joined = counter(a, round, "joined", -1);
    a->joined = joined > a->g.nnodes ? (int)joined : a->g.nnodes;
}
