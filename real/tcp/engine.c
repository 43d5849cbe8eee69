/* real/tcp/engine.c - the tcp engine's vtable: world creation through the
 * rendezvous store (publish this rank's listening address, learn all
 * others), subgroups that share the world's sockets, requests, modelled
 * compute as a CPU spin (that keeps communication progressing), buffers,
 * the clock, timeline markers and herd_run for one process (their shared
 * part is core/host_engine.c). */
#include <arpa/inet.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/host_engine.h"
#include "real/tcp/tcp.h"

uint64_t tcp_now_ns(void)
{
    return core_host_now_ns();
}

int tcp_group_world_rank(const tcp_comm_t *c, int r)
{
    return c->base.world_ranks ? c->base.world_ranks[r] : r;
}

static tcp_comm_t *as_tcp(herd_comm_t *c)
{
    return (tcp_comm_t *)c;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void sig_cb(evutil_socket_t fd, short what, void *arg)
{
    tcp_world_t *w = arg;
    (void)fd;
    (void)what;
    const char *dir = core_flight_dir();
    tcp_flight_dump(w, dir ? dir : ".", "signal");
}

static void world_free(tcp_world_t *w)
{
    if (!w)
        return;
    for (int r = 0; w->peers && r < w->size; r++) {
        tcp_peer_t *p = &w->peers[r];
        /* A message being read is unexpected (in the list below) or
         * orphaned by a failed op (only here). */
        if (p->rx.mode == TCP_RX_STAGED && p->rx.msg &&
            p->rx.msg->step == UINT32_MAX)
            tcp_msg_free(w, p->rx.msg);
        while (p->unexp_head) {
            tcp_msg_t *m = p->unexp_head;
            p->unexp_head = m->next;
            tcp_msg_free(w, m);
        }
        free(p->rx.bounce);
        free(p->rx.pre);
    }
    free(w->peers);
    for (int i = 0; i < 8; i++)
        free(w->pool[i]);
    if (w->listen_ev)
        event_free(w->listen_ev);
    if (w->listen_fd >= 0)
        close(w->listen_fd);
    if (w->sig_ev)
        event_free(w->sig_ev);
    if (w->tick_ev)
        event_free(w->tick_ev);
    if (w->base)
        event_base_free(w->base);
    core_flight_fini(&w->flight);
    if (core_steplog_close(w->steplog) != HERD_OK)
        fprintf(stderr,
                "herd tcp rank %d: writing the step records in %s "
                "failed\n",
                w->rank, core_steplog_dir());
    store_rdzv_close(&w->rdzv);
    free(w);
}

/* HERD_STEPS_DIR asks for step records; a directory that cannot take
 * them is said once and the run goes on without them. */
static void steplog_open(tcp_world_t *w)
{
    const char *dir = core_steplog_dir();
    char name[64], err[256];
    if (!dir)
        return;
    snprintf(name, sizeof(name), "steps-rank%d.tsv", w->rank);
    if (core_steplog_open(dir, name, &w->steplog, err, sizeof(err)) != HERD_OK)
        fprintf(stderr, "herd tcp rank %d: %s\n", w->rank, err);
}

static void world_unref(tcp_world_t *w)
{
    if (--w->refs == 0)
        world_free(w);
}

/* The address the others reach this host at, and the only one its data
 * port listens on: HERD_TCP_ADDR, else loopback when the store is on
 * loopback, else the interface that routes to the store host (a UDP
 * connect sends nothing). */
static void local_addr(const herd_init_t *init, char *out, size_t len)
{
    const char *env = getenv("HERD_TCP_ADDR");
    char host[256] = "127.0.0.1";
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return;
    }
    const char *m = init->init_method;
    if (m && !strncmp(m, "tcp://", 6)) {
        snprintf(host, sizeof(host), "%s", m + 6);
        char *colon = strrchr(host, ':');
        if (colon)
            *colon = '\0';
    } else if (getenv("MASTER_ADDR") && *getenv("MASTER_ADDR")) {
        snprintf(host, sizeof(host), "%s", getenv("MASTER_ADDR"));
    }
    snprintf(out, len, "127.0.0.1");
    if (!strncmp(host, "127.", 4) || !strcmp(host, "localhost"))
        return;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, "9", &hints, &ai) != 0 || !ai)
        return;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        inet_ntop(AF_INET, &sa.sin_addr, out, (socklen_t)len);
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
}

static herd_status_t world_events(tcp_world_t *w)
{
    w->base = event_base_new();
    if (!w->base)
        return HERD_ERR_NO_MEMORY;
    w->tick_ev = evtimer_new(w->base, tick_cb, w);
    w->sig_ev = evsignal_new(w->base, SIGUSR1, sig_cb, w);
    if (!w->tick_ev || !w->sig_ev)
        return HERD_ERR_NO_MEMORY;
    event_add(w->sig_ev, NULL);
    return HERD_OK;
}

static herd_status_t world_peers(tcp_world_t *w)
{
    w->peers = calloc((size_t)w->size, sizeof(tcp_peer_t));
    if (!w->peers)
        return HERD_ERR_NO_MEMORY;
    for (int r = 0; r < w->size; r++) {
        tcp_peer_t *p = &w->peers[r];
        p->w = w;
        p->world_rank = r;
        p->out_fd = p->in_fd = -1;
        p->rx.bounce = malloc(TCP_BOUNCE_BYTES);
        p->rx.pre = malloc(TCP_PRE_BYTES);
        if (!p->rx.bounce || !p->rx.pre)
            return HERD_ERR_NO_MEMORY;
    }
    return HERD_OK;
}

/* The job's cookie: rank 0 draws it, everyone reads it from the store,
 * and every connection's handshake must carry it (link.c). Whoever can
 * read the store is trusted anyway (docs/launch.md); the cookie keeps out
 * those who can only reach a data port. */
static herd_status_t exchange_cookie(tcp_world_t *w)
{
    char key[96];
    snprintf(key, sizeof(key), "%scookie", w->prefix);
    herd_status_t st = HERD_OK;
    if (w->rank == 0) {
        if (getrandom(w->cookie, sizeof(w->cookie), 0) !=
            (ssize_t)sizeof(w->cookie))
            return HERD_ERR_IO;
        return store_set(w->store, key, w->cookie, sizeof(w->cookie));
    }
    void *v = NULL;
    size_t len = 0;
    st = store_get(w->store, key, 0, &v, &len);
    if (st == HERD_OK && len != sizeof(w->cookie))
        st = HERD_ERR_PARSE;
    if (st == HERD_OK)
        memcpy(w->cookie, v, sizeof(w->cookie));
    free(v);
    return st;
}

/* Publish host:port, then learn every peer's (a rendezvous barrier). */
static herd_status_t exchange_addrs(tcp_world_t *w, const char *host, int port)
{
    char key[96], val[128];
    snprintf(key, sizeof(key), "%saddr/%d", w->prefix, w->rank);
    snprintf(val, sizeof(val), "%s %d", host, port);
    herd_status_t st = store_set(w->store, key, val, strlen(val));
    for (int r = 0; r < w->size && st == HERD_OK; r++) {
        void *v = NULL;
        size_t len = 0;
        snprintf(key, sizeof(key), "%saddr/%d", w->prefix, r);
        st = store_get(w->store, key, 0, &v, &len);
        if (st != HERD_OK)
            break;
        tcp_peer_t *p = &w->peers[r];
        if (sscanf(v, "%63s %d", p->host, &p->port) != 2)
            st = HERD_ERR_PARSE;
        free(v);
    }
    return st;
}

static herd_status_t world_setup(tcp_world_t *w, const herd_init_t *init,
                                 char *err, size_t errlen)
{
    char host[64];
    int port = 0;
    local_addr(init, host, sizeof(host));
    herd_status_t st = world_events(w);
    if (st == HERD_OK)
        st = world_peers(w);
    core_flight_init(&w->flight, core_flight_limit());
    if (st == HERD_OK)
        steplog_open(w);
    if (st == HERD_OK)
        st = tcp_listen(w, host, &port, err, errlen);
    if (st == HERD_OK && (st = exchange_cookie(w)) != HERD_OK)
        snprintf(err, errlen, "the job cookie: %s", herd_status_string(st));
    if (st == HERD_OK && (st = exchange_addrs(w, host, port)) != HERD_OK)
        snprintf(err, errlen, "exchanging addresses: %s",
                 herd_status_string(st));
    return st;
}

static herd_status_t comm_create(const herd_init_t *init, herd_comm_t **out)
{
    char err[256] = "";
    tcp_world_t *w = calloc(1, sizeof(*w));
    tcp_comm_t *c = calloc(1, sizeof(*c));
    if (!w || !c) {
        free(w);
        free(c);
        return HERD_ERR_NO_MEMORY;
    }
    w->listen_fd = -1;
    w->failed_rank = -1;
    w->refs = 1;
    snprintf(w->prefix, sizeof(w->prefix), "herd/tcp/");
    herd_status_t st = store_rdzv_open(init, &w->rdzv, err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd tcp: rendezvous failed: %s\n", err);
        free(w);
        free(c);
        return st;
    }
    w->store = w->rdzv.client;
    w->rank = w->rdzv.rank;
    w->size = w->rdzv.world_size;
    w->local_rank = w->rdzv.local_rank;
    w->local_size =
        w->rdzv.local_world_size > 0 ? w->rdzv.local_world_size : w->size;
    w->spin_us = core_env_int("HERD_TCP_SPIN_US", 200);
    w->fail_grace_ns =
        (uint64_t)core_env_int("HERD_TCP_FAIL_GRACE_MS", 100) * 1000000u;
    /* Yield between polls: ~1 us when the core is free, and the peer's
     * turn when other processes compete for the cores (measured: without
     * it 8-byte latency on a loaded 2-core VM rose from ~40 us to ~1 ms,
     * BENCHMARKS.md). HERD_TCP_YIELD=0 spins without yielding. */
    w->yield = core_env_int("HERD_TCP_YIELD", 1) != 0;
    w->direct = core_env_int("HERD_TCP_DIRECT", 1) != 0;
    err[0] = '\0';
    st = world_setup(w, init, err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd tcp: rank %d: setting up sockets failed: %s\n",
                w->rank, err[0] ? err : herd_status_string(st));
        world_free(w);
        free(c);
        return st;
    }
    core_comm_init(&c->base, &tcp_engine_ops, w->rank, w->size, w->local_rank,
                   w->rank, 0, NULL, init);
    c->w = w;
    *out = &c->base;
    return HERD_OK;
}

static herd_status_t comm_destroy(herd_comm_t *comm)
{
    tcp_comm_t *c = as_tcp(comm);
    tcp_world_t *w = c->w;
    if (comm->group_id == 0) {
        while (w->ops_head)
            tcp_op_fail(w->ops_head, HERD_ERR_CLOSED,
                        "communicator destroyed with the op in flight");
        w->closing = 1;
        tcp_link_close_all(w, 1);
    }
    core_comm_fini(comm);
    free(c);
    world_unref(w);
    return HERD_OK;
}

static herd_status_t group_create(herd_comm_t *parent, const int *ranks, int n,
                                  int id, herd_comm_t **out)
{
    tcp_comm_t *pc = as_tcp(parent);
    int me = -1;
    for (int i = 0; i < n; i++)
        if (ranks[i] == parent->rank)
            me = i;
    int *wr = malloc((size_t)n * sizeof(int));
    if (!wr)
        return HERD_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++)
        wr[i] = tcp_group_world_rank(pc, ranks[i]);
    if (me < 0) {
        free(wr);
        *out = NULL;
        return HERD_OK;
    }
    tcp_comm_t *g = calloc(1, sizeof(*g));
    if (!g) {
        free(wr);
        return HERD_ERR_NO_MEMORY;
    }
    core_comm_init(&g->base, &tcp_engine_ops, me, n, parent->local_rank,
                   parent->world_rank, id, wr, NULL);
    core_comm_inherit(&g->base, parent);
    g->w = pc->w;
    g->w->refs++;
    *out = &g->base;
    return HERD_OK;
}

static herd_status_t coll_post(herd_comm_t *comm, const core_coll_args_t *a,
                               herd_req_t **req_out)
{
    tcp_comm_t *c = as_tcp(comm);
    if (c->w->closing)
        return core_comm_error(comm, HERD_ERR_CLOSED,
                               "%s: the world communicator was destroyed",
                               herd_coll_name(a->coll));
    tcp_op_t *op = NULL;
    herd_status_t st = tcp_op_post(c, a, &op);
    if (st != HERD_OK)
        return st;
    *req_out = &op->req;
    return HERD_OK;
}

static herd_status_t req_wait(herd_req_t *req)
{
    return tcp_op_wait((tcp_op_t *)req);
}

static herd_status_t req_test(herd_req_t *req, int *done)
{
    tcp_op_t *op = (tcp_op_t *)req;
    if (!op->done) {
        tcp_progress(op->w, 0);
        tcp_check_suspects(op->w);
        uint64_t deadline =
            op->t_post + (uint64_t)(op->comm->base.timeout_s * 1e9);
        if (!op->done && tcp_now_ns() >= deadline)
            tcp_op_wait(op); /* times out now, naming the missing ranks */
    }
    *done = op->done;
    if (op->done && op->status != HERD_OK)
        core_comm_error(&op->comm->base, op->status, "%s", op->err);
    return op->done ? op->status : HERD_OK;
}

static void req_free(herd_req_t *req)
{
    tcp_op_t *op = (tcp_op_t *)req;
    if (!op->done)
        tcp_op_wait(op);
    tcp_op_free(op);
}

/* The node of this rank's timeline records: ranks numbered node by node
 * (local_size to a node). */
static int node_of(const herd_comm_t *comm)
{
    const tcp_world_t *w = ((const tcp_comm_t *)comm)->w;
    return w->local_size ? comm->world_rank / w->local_size : 0;
}

static void poll_cb(void *arg)
{
    tcp_world_t *w = arg;
    if (w->ops_head)
        tcp_progress(w, 0);
}

/* A CPU spin for the (scaled) duration that keeps polling the sockets, so
 * asynchronous collectives overlap modelled compute as they would on a
 * device. */
static herd_status_t compute(herd_comm_t *comm, double seconds,
                             const char *label)
{
    const char *sc = getenv("HERD_COMPUTE_SCALE");
    double scale = sc && *sc ? atof(sc) : 1.0;
    if (!(scale >= 0))
        scale = 1.0;
    return core_host_compute(comm, seconds * scale, node_of(comm), poll_cb,
                             as_tcp(comm)->w, label);
}

static herd_status_t mark(herd_comm_t *comm, const char *label)
{
    return core_host_mark(comm, node_of(comm), label);
}

static herd_status_t run(const herd_init_t *init, herd_main_fn fn, void *arg,
                         herd_run_info_t *info)
{
    return core_host_run(&tcp_engine_ops, init, fn, arg, info, NULL);
}

const herd_engine_ops_t tcp_engine_ops = {.name = "tcp",
                                          .run = run,
                                          .comm_create = comm_create,
                                          .comm_destroy = comm_destroy,
                                          .group_create = group_create,
                                          .coll_post = coll_post,
                                          .req_wait = req_wait,
                                          .req_test = req_test,
                                          .req_free = req_free,
                                          .compute = compute,
                                          .alloc = core_host_alloc,
                                          .free = core_host_free,
                                          .now = core_host_now,
                                          .mark = mark,
                                          .flight_dump = tcp_flight_dump_op};
