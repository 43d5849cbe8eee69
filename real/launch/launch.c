/* real/launch/launch.c - the launcher's agent loop: host (node 0) or join
 * the store, run restart rounds of the local worker group, watch signals
 * and child exits through a signalfd, and, with several nodes, agree on
 * failures and completion through the store so every node restarts or
 * finishes together.
 *
 * Store keys of the launcher (never prefixed; workers use the prefix
 * <run_id>/<round>/): herd/launch/<run_id>/<round>/fail holds
 * "code node rank local pid phrase" of the first failure of a round;
 * .../done/<node> marks a node whose workers all succeeded; .../bye/<node>
 * lets node 0 keep the store up until every node has left. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "real/launch/launch_int.h"
#include "real/store/store.h"

void launch_opts_init(launch_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->nproc_per_node = 1;
    o->nnodes = 1;
    o->master_addr = "127.0.0.1";
    o->master_port = 29500;
    o->monitor_interval_s = 0.1;
    o->run_id = "none";
    o->role_name = "default";
    o->stop_grace_s = 5.0;
    o->store_timeout_s = 300.0;
    o->last_call_s = 30.0;
    o->keep_alive_s = 5.0;
    o->keep_alive_max = 3;
}

double launch_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void launch_log(const launch_agent_t *a, const char *fmt, ...)
{
    if (a->o->quiet)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "herd launch: %s\n", msg);
}

void launch_key(const launch_agent_t *a, char *buf, size_t len, int round,
                const char *what, int node)
{
    if (node >= 0)
        snprintf(buf, len, "herd/launch/%s/%d/%s/%d", a->run_id, round, what,
                 node);
    else
        snprintf(buf, len, "herd/launch/%s/%d/%s", a->run_id, round, what);
}

/* Drain the signalfd; 1 when a stop signal (all but SIGCHLD) arrived. */
static int agent_signals(launch_agent_t *a)
{
    struct signalfd_siginfo si;
    int stop = 0;
    while (read(a->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        if (si.ssi_signo != SIGCHLD) {
            a->sig = (int)si.ssi_signo;
            stop = 1;
        }
    return stop;
}

int launch_agent_sleep(launch_agent_t *a)
{
    struct pollfd p = {.fd = a->sfd, .events = POLLIN};
    int ms = (int)(a->o->monitor_interval_s * 1000.0);
    if (poll(&p, 1, ms < 1 ? 1 : ms) > 0)
        return agent_signals(a);
    return 0;
}

int launch_remote_failed(launch_agent_t *a, int round)
{
    if (!a->cl)
        return 0;
    char key[256];
    launch_key(a, key, sizeof(key), round, "fail", -1);
    const char *k = key;
    int exists = 0;
    if (store_check(a->cl, &k, 1, &exists) != HERD_OK || !exists)
        return 0;
    void *v = NULL;
    size_t n = 0;
    if (store_get(a->cl, key, 1.0, &v, &n) == HERD_OK) {
        snprintf(a->fail, sizeof(a->fail), "%s", (char *)v);
        free(v);
    }
    return 1;
}

void launch_publish(launch_agent_t *a, int round, const char *record)
{
    char key[256];
    snprintf(a->fail, sizeof(a->fail), "%s", record);
    if (!a->cl)
        return;
    launch_key(a, key, sizeof(key), round, "fail", -1);
    void *cur = NULL;
    size_t n = 0;
    /* Only the first failure of a round is kept, and told by all. */
    if (store_compare_set(a->cl, key, "", 0, a->fail, strlen(a->fail), &cur,
                          &n) == HERD_OK) {
        snprintf(a->fail, sizeof(a->fail), "%s", (char *)cur);
        free(cur);
    }
}

static void publish_failure(launch_agent_t *a, int round)
{
    const launch_worker_t *w = &a->g.w[a->g.failed];
    char phrase[128], rec[256];
    launch_describe(w->status, phrase, sizeof(phrase));
    snprintf(rec, sizeof(rec), "%d %d %d %d %d %s", launch_exit_code(w->status),
             a->g.node_rank, w->rank, w->local_rank, (int)w->spawned, phrase);
    launch_publish(a, round, rec);
}

/* After local success with several nodes: wait until every node is done
 * or one reports a failure. */
static round_end_t round_wait_nodes(launch_agent_t *a, int round)
{
    char key[256];
    launch_key(a, key, sizeof(key), round, "done", a->g.node_rank);
    if (store_set(a->cl, key, "1", 1) != HERD_OK)
        return ROUND_ERROR;
    int n = a->g.nnodes;
    char **keys = calloc((size_t)n, sizeof(*keys));
    round_end_t end = keys ? ROUND_OK : ROUND_ERROR;
    for (int i = 0; keys && i < n; i++)
        if (!(keys[i] = malloc(256)))
            end = ROUND_ERROR;
        else
            launch_key(a, keys[i], 256, round, "done", i);
    while (end == ROUND_OK) {
        int all = 0;
        if (store_check(a->cl, (const char *const *)keys, n, &all) != HERD_OK)
            end = ROUND_ERROR;
        else if (all)
            break;
        else if (launch_remote_failed(a, round) ||
                 (a->elastic && launch_elastic_check(a, round, 0)))
            end = ROUND_REMOTE_FAILED;
        else if (launch_agent_sleep(a))
            end = ROUND_SIGNALED;
    }
    for (int i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    return end;
}

static round_end_t round_run(launch_agent_t *a, int round, char *err,
                             size_t errlen)
{
    if (launch_group_spawn(&a->g, round, err, errlen) != HERD_OK)
        return ROUND_ERROR;
    round_end_t end = ROUND_OK;
    for (;;) {
        launch_group_tail(&a->g);
        launch_group_reap(&a->g);
        if (a->g.failed >= 0) {
            publish_failure(a, round);
            launch_group_stop(&a->g, SIGTERM);
            end = ROUND_FAILED;
            break;
        }
        if (a->g.live == 0)
            break;
        if (launch_remote_failed(a, round) ||
            (a->elastic && launch_elastic_check(a, round, 1))) {
            launch_group_stop(&a->g, SIGTERM);
            end = ROUND_REMOTE_FAILED;
            break;
        }
        if (launch_agent_sleep(a)) {
            launch_log(a, "got signal %d; forwarding it to the workers",
                       a->sig);
            launch_group_stop(&a->g, a->sig);
            end = ROUND_SIGNALED;
            break;
        }
    }
    launch_group_tail(&a->g); /* what the workers wrote last */
    if (end != ROUND_OK)
        return end;
    return a->cl ? round_wait_nodes(a, round) : ROUND_OK;
}

/* The failure of a round, told the torchrun way; the job's exit code.
 * `restart` is the restart this failure would use. */
static int report_failure(launch_agent_t *a, int restart, int last)
{
    int code = 1, node = 0, rank = -1, local = -1, pid = 0, off = 0;
    sscanf(a->fail, "%d %d %d %d %d %n", &code, &node, &rank, &local, &pid,
           &off);
    char who[128] = "";
    if (code == LAUNCH_FAIL_LOST)
        snprintf(who, sizeof(who), "node %d", node);
    else if (node != a->g.node_rank)
        snprintf(who, sizeof(who), "rank %d (local %d on node %d, pid %d)",
                 rank, local, node, pid);
    else
        snprintf(who, sizeof(who), "rank %d (local %d, pid %d)", rank, local,
                 pid);
    if (last)
        launch_log(a, "%s %s; no restarts left", who, a->fail + off);
    else
        launch_log(a, "%s %s; restarting the group (restart %d of %d)", who,
                   a->fail + off, restart, a->o->max_restarts);
    return code > 0 ? code : 1;
}

static void fill_failure(const launch_agent_t *a, launch_result_t *res)
{
    int code = 1, node = 0, rank = -1, local = -1, pid = 0;
    sscanf(a->fail, "%d %d %d %d %d", &code, &node, &rank, &local, &pid);
    res->failed_rank = rank;
    res->failed_local_rank = local;
    res->failed_pid = pid;
}

static herd_status_t check_opts(const launch_opts_t *o, char *err,
                                size_t errlen)
{
    const char *bad = NULL;
    if (!o->argv || !o->argv[0])
        bad = "no worker command given";
    else if (o->nproc_per_node < 1)
        bad = "--nproc-per-node must be at least 1";
    else if (o->nnodes < 1 || o->node_rank < 0 || o->node_rank >= o->nnodes)
        bad = "--node-rank must be in 0..nnodes-1";
    else if (o->standalone && o->nnodes != 1)
        bad = "--standalone runs one node (--nnodes 1)";
    else if (o->min_nodes < 0 || o->min_nodes > o->nnodes)
        bad = "--nnodes MIN:MAX needs 1 <= MIN <= MAX";
    else if (o->min_nodes && (o->last_call_s < 0 || !(o->keep_alive_s > 0) ||
                              o->keep_alive_max < 1))
        bad = "--rdzv-conf: last_call_timeout must not be negative, "
              "keep_alive_interval must be positive and "
              "keep_alive_max_attempt at least 1";
    else if (o->max_restarts < 0)
        bad = "--max-restarts must not be negative";
    else if (o->master_port < 0 || o->master_port > 65535 ||
             (o->master_port == 0 && o->nnodes > 1))
        bad = "--master-port must be in 1..65535";
    else if (!o->master_addr || !*o->master_addr)
        bad = "--master-addr must not be empty";
    else if (!(o->monitor_interval_s > 0) || o->stop_grace_s < 0)
        bad = "--monitor-interval must be positive";
    else if (o->redirects && !launch_std_spec_valid(o->redirects))
        bad = "--redirects must be 0..3 or a map like 0:3,1:1";
    else if (o->tee && !launch_std_spec_valid(o->tee))
        bad = "--tee must be 0..3 or a map like 0:3,1:1";
    if (bad)
        snprintf(err, errlen, "%s", bad);
    return bad ? HERD_ERR_INVALID_ARG : HERD_OK;
}

static int is_loopback(const char *host)
{
    return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") ||
           !strcmp(host, "::1");
}

/* The store's token: HERD_STORE_TOKEN when set (empty: none, anyone who
 * reaches the port is trusted); else none on loopback, where only this
 * host's users reach it; else a random one, which the workers of a
 * single node get from the launcher. Several nodes must share one, so
 * there it has to be given. NULL with err set when it cannot be had. */
static const char *agent_token(launch_agent_t *a, char *err, size_t errlen)
{
    const launch_opts_t *o = a->o;
    const char *token = getenv("HERD_STORE_TOKEN");
    if (token || o->standalone || is_loopback(o->master_addr))
        return token ? token : "";
    if (o->nnodes > 1) {
        snprintf(err, errlen,
                 "the store on %s is reachable from the network: set "
                 "HERD_STORE_TOKEN to the same secret on every node (or to "
                 "the empty string to accept anyone who reaches port %d)",
                 o->master_addr, o->master_port);
        return NULL;
    }
    unsigned char raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        snprintf(err, errlen, "cannot make a store token: %s", strerror(errno));
        return NULL;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(a->token + 2 * i, 3, "%02x", raw[i]);
    a->g.token = a->token;
    return a->token;
}

/* 1 when host:port can be bound here now: the address is this
 * machine's and no one listens there (a quiet look before the store's
 * own bind, which logs its failures). */
static int can_bind(const char *host, int port)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, ps, &hints, &res) != 0)
        return 0;
    int ok = 0;
    for (struct addrinfo *ai = res; ai && !ok; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        ok = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(res);
    return ok;
}

/* Where and whether this agent hosts the store: node 0 does (on the
 * loopback address when that is the master's, else on every
 * interface); elastically the first agent that can bind the endpoint's
 * own address does, as torchrun's c10d backend, and the others join. */
static herd_status_t agent_host(launch_agent_t *a, const char *token, char *err,
                                size_t errlen)
{
    const launch_opts_t *o = a->o;
    if (a->elastic) {
        if (can_bind(o->master_addr, a->g.port) &&
            store_server_start(o->master_addr, a->g.port, token, &a->srv) ==
                HERD_OK)
            launch_log(a, "hosting the rendezvous store on %s:%d",
                       o->master_addr, a->g.port);
        return HERD_OK; /* not here, or taken: someone else hosts it */
    }
    if (o->node_rank != 0)
        return HERD_OK;
    const char *bind = o->standalone || is_loopback(o->master_addr)
                           ? (o->standalone ? "127.0.0.1" : o->master_addr)
                           : NULL;
    herd_status_t st = store_server_start(bind, a->g.port, token, &a->srv);
    if (st != HERD_OK)
        snprintf(err, errlen,
                 "cannot host the store on port %d: %s (another job "
                 "there? choose --master-port or --standalone)",
                 a->g.port, herd_status_string(st));
    else
        a->g.port = store_server_port(a->srv);
    return st;
}

/* Host the store, or join it; with several nodes every agent joins it. */
static herd_status_t agent_store(launch_agent_t *a, char *err, size_t errlen)
{
    const launch_opts_t *o = a->o;
    const char *token = agent_token(a, err, errlen);
    if (!token)
        return HERD_ERR_INVALID_ARG;
    a->g.store_token = token;
    a->g.port = o->standalone ? 0 : o->master_port;
    a->g.store_hosted = 1;
    herd_status_t st = agent_host(a, token, err, errlen);
    if (st == HERD_OK && o->nnodes > 1) {
        st = store_client_connect(o->master_addr, a->g.port, token,
                                  o->store_timeout_s, &a->cl);
        if (st == HERD_ERR_AUTH)
            snprintf(err, errlen,
                     "authentication failed at the store %s:%d: set "
                     "HERD_STORE_TOKEN to node 0's token",
                     o->master_addr, a->g.port);
        else if (st != HERD_OK)
            snprintf(err, errlen, "cannot reach the store at %s:%d: %s",
                     o->master_addr, a->g.port, herd_status_string(st));
    }
    return st;
}

/* The store's host keeps it up until every node has said goodbye (and,
 * elastically, the nodes that waited in vain have seen the end). */
static void agent_goodbye(launch_agent_t *a, int round)
{
    if (!a->cl)
        return;
    char key[256];
    launch_key(a, key, sizeof(key), round, "bye", a->g.node_rank);
    store_set(a->cl, key, "1", 1);
    if (!a->srv)
        return;
    int n = a->elastic ? a->joined : a->g.nnodes;
    double end = launch_now_s() + 30.0;
    for (int i = 0; i < n; i++) {
        double left = end - launch_now_s();
        if (i == a->g.node_rank || left <= 0)
            continue;
        launch_key(a, key, sizeof(key), round, "bye", i);
        const char *k = key;
        /* a node left waiting gets a few seconds to notice */
        if (store_wait(a->cl, &k, 1, i < a->g.nnodes ? left : 5.0) != HERD_OK &&
            i < a->g.nnodes)
            break;
    }
}

/* A membership change that re-rendezvouses without using a restart. */
static int membership_only(const launch_agent_t *a)
{
    int code = 0;
    return sscanf(a->fail, "%d", &code) == 1 &&
           (code == LAUNCH_FAIL_JOIN || code == LAUNCH_FAIL_LEFT);
}

/* Restart rounds until success, a signal, or no restarts left. Without
 * elastic membership a round is a restart; elastically each round is a
 * rendezvous first, and a round ended by a membership change (a node
 * waiting to join) does not use a restart, as under torchrun. */
static herd_status_t agent_rounds(launch_agent_t *a, launch_result_t *res,
                                  char *err, size_t errlen)
{
    for (int round = 0, restart = 0;; round++) {
        a->fail[0] = '\0';
        res->restarts = restart;
        a->g.restart = restart;
        round_end_t end = ROUND_OK;
        if (a->elastic)
            end = launch_elastic_join(a, &round, err, errlen);
        if (end == ROUND_REMOTE_FAILED) { /* finished without this node */
            launch_log(a, "%s", a->fail);
            agent_goodbye(a, round);
            res->exit_code = 0;
            return HERD_OK;
        }
        if (end == ROUND_OK)
            end = round_run(a, round, err, errlen);
        if (end == ROUND_OK) {
            if (a->elastic)
                launch_elastic_finish(a, round);
            agent_goodbye(a, round);
            res->exit_code = 0;
            return HERD_OK;
        }
        if (end == ROUND_SIGNALED) {
            res->signal = a->sig;
            res->exit_code = 128 + a->sig;
            return HERD_OK;
        }
        if (end == ROUND_ERROR) {
            if (!err[0])
                snprintf(err, errlen, "lost the store at %s:%d",
                         a->o->master_addr, a->g.port);
            return HERD_ERR_PEER_FAILED;
        }
        if (membership_only(a)) {
            int off = 0, skip = 0;
            sscanf(a->fail, "%d %d %d %d %d %n", &skip, &skip, &skip, &skip,
                   &skip, &off);
            launch_log(a, "%s; the group rendezvouses again (no restart used)",
                       a->fail + off);
            continue;
        }
        int last = restart >= a->o->max_restarts;
        fill_failure(a, res);
        res->exit_code = report_failure(a, restart + 1, last);
        if (last)
            return HERD_OK;
        restart++;
    }
}

/* The signals the launcher reads: SIGCHLD, and those it forwards. */
static void launch_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
    sigaddset(set, SIGCHLD);
}

/* torchrun writes redirected/teed streams under a temporary directory
 * when --log-dir is not given; so does herd, and says where. */
static herd_status_t agent_log_dir(launch_agent_t *a, char *err, size_t errlen)
{
    const launch_opts_t *o = a->o;
    int any = 0;
    for (int i = 0; i < o->nproc_per_node; i++)
        any |= launch_std_mode(o->redirects, i) | launch_std_mode(o->tee, i);
    a->g.log_dir = o->log_dir;
    if (!any || o->log_dir)
        return HERD_OK;
    const char *tmp = getenv("TMPDIR");
    snprintf(a->log_tmp, sizeof(a->log_tmp), "%s/herd_launch_XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(a->log_tmp)) {
        snprintf(err, errlen, "cannot create a log directory %s: %s",
                 a->log_tmp, strerror(errno));
        return HERD_ERR_IO;
    }
    a->g.log_dir = a->log_tmp;
    launch_log(a, "worker logs in %s", a->log_tmp);
    return HERD_OK;
}

static herd_status_t agent_init(launch_agent_t *a, const launch_opts_t *o,
                                sigset_t *old, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    a->o = o;
    a->sfd = -1;
    if (o->standalone && !strcmp(o->run_id, "none"))
        snprintf(a->run_id, sizeof(a->run_id), "standalone-%ld-%ld",
                 (long)getpid(), (long)time(NULL));
    else
        snprintf(a->run_id, sizeof(a->run_id), "%s", o->run_id);
    a->g.o = o;
    a->g.run_id = a->run_id;
    a->g.n = o->nproc_per_node;
    a->g.node_rank = o->node_rank;
    a->g.nnodes = o->nnodes;
    a->elastic = o->min_nodes > 0 && o->min_nodes < o->nnodes;
    a->g.failed = -1;
    a->g.child_mask = *old;
    a->g.launcher_pid = getpid();
    if (!(a->g.w = calloc((size_t)a->g.n, sizeof(*a->g.w)))) {
        snprintf(err, errlen, "out of memory");
        return HERD_ERR_NO_MEMORY;
    }
    for (int i = 0; i < a->g.n; i++)
        for (int s = 0; s < 2; s++)
            a->g.w[i].log_fd[s] = a->g.w[i].tail_fd[s] = -1;
    herd_status_t st = agent_log_dir(a, err, errlen);
    if (st != HERD_OK)
        return st;
    sigset_t set;
    sigemptyset(&set);
    launch_stop_signals(&set);
    a->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (a->sfd < 0) {
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
        return HERD_ERR_IO;
    }
    return agent_store(a, err, errlen);
}

herd_status_t launch_run(const launch_opts_t *o, launch_result_t *out,
                         char *err, size_t errlen)
{
    char scratch[8];
    if (!err || !errlen)
        err = scratch, errlen = sizeof(scratch);
    err[0] = '\0';
    if (!o || !out)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = check_opts(o, err, errlen);
    if (st != HERD_OK)
        return st;
    /* Signals are read from a signalfd, so they are blocked first (the
     * store thread started below inherits the block). */
    sigset_t set, old;
    sigemptyset(&set);
    launch_stop_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    launch_agent_t a;
    launch_result_t res = {.failed_rank = -1, .failed_local_rank = -1};
    st = agent_init(&a, o, &old, err, errlen);
    if (st == HERD_OK)
        st = agent_rounds(&a, &res, err, errlen);
    store_client_close(a.cl);
    store_server_stop(a.srv);
    if (a.sfd >= 0) {
        agent_signals(&a);
        close(a.sfd);
    }
    for (int i = 0; a.g.w && i < a.g.n; i++)
        launch_worker_logs_close(&a.g.w[i]);
    free(a.g.w);
    free(a.peers);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (st == HERD_OK)
        *out = res;
    return st;
}
