/* tests/real_tcp_harness.h - helpers for the tcp engine suites: fork N
 * rank processes on loopback around a store hosted by the test process,
 * deterministic inputs for any rank, and a reference for every collective
 * computed locally from all ranks' inputs (inputs are small integers, so
 * every reduction order gives bit-identical results). */
#ifndef HERD_TESTS_REAL_TCP_HARNESS_H
#define HERD_TESTS_REAL_TCP_HARNESS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/engine.h"
#include "core/reduce.h"
#include "core/sched.h"
#include "real/store/store.h"

#define RT_MAX_RANKS 16

/* 1 when a loopback TCP socket can be bound (else suites skip with 77). */
static inline int rt_loopback_ok(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok =
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0;
    close(fd);
    return ok;
}

static inline double rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Per-rank hook run in the child before herd_run (e.g. setenv). */
typedef void (*rt_child_cb)(int rank, void *arg);

typedef struct rt_opts {
    double op_timeout_s; /* collective timeout; 0: 30 s */
    double wall_s;       /* kill everything after this; 0: 60 s */
    rt_child_cb child_cb;
} rt_opts_t;

/* Fork p ranks that each run fn through herd_run on the tcp engine.
 * codes[r]: the rank's exit status (fn's return value; 100 + -status when
 * herd_run failed before fn; -1 killed by a signal or by the wall limit).
 * Returns 0 when every rank exited 0. */
/* The store lives in its own process: the test process must stay
 * single-threaded, since the ranks are forked from it (a fork while a
 * server thread holds an allocator lock deadlocks the child under ASan).
 * Returns its pid and port; closing *stop_fd ends it. */
static inline pid_t rt_store_start(int *port_out, int *stop_fd)
{
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        store_server_t *srv = NULL;
        int port = -1;
        if (store_server_start("127.0.0.1", 0, NULL, &srv) == HERD_OK)
            port = store_server_port(srv);
        if (write(up[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
            _exit(1);
        char c;
        while (read(down[0], &c, 1) > 0)
            ;
        if (srv)
            store_server_stop(srv);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    int port = -1;
    if (pid < 0 || read(up[0], &port, sizeof(port)) != (ssize_t)sizeof(port) ||
        port <= 0) {
        close(up[0]);
        close(down[1]);
        return -1;
    }
    close(up[0]);
    *port_out = port;
    *stop_fd = down[1];
    return pid;
}

static inline int rt_spawn_opts(int p, herd_main_fn fn, void *arg,
                                const rt_opts_t *o, int *codes)
{
    int port, stop_fd;
    pid_t store_pid = rt_store_start(&port, &stop_fd);
    if (store_pid < 0)
        return -1;
    char method[64];
    snprintf(method, sizeof(method), "tcp://127.0.0.1:%d", port);
    pid_t pids[RT_MAX_RANKS];
    fflush(NULL);
    for (int r = 0; r < p; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            close(stop_fd);
            setenv("HERD_STORE_EXTERNAL", "1", 1);
            if (o && o->child_cb)
                o->child_cb(r, arg);
            herd_init_t init = {
                .backend = "tcp",
                .init_method = method,
                .rank = r,
                .world_size = p,
                .local_rank = r,
                .timeout_s = o && o->op_timeout_s > 0 ? o->op_timeout_s : 30.0};
            herd_run_info_t info;
            herd_status_t st = herd_run(&init, fn, arg, &info);
            fflush(NULL);
            _exit(st == HERD_OK    ? 0
                  : info.exit_code ? info.exit_code
                                   : 100 + (-(int)st));
        }
    }
    double end = rt_now() + (o && o->wall_s > 0 ? o->wall_s : 60.0);
    int left = p, bad = 0;
    for (int r = 0; r < p; r++)
        codes[r] = -2;
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid == store_pid)
            continue;
        if (pid <= 0) {
            if (rt_now() > end) {
                for (int r = 0; r < p; r++)
                    if (codes[r] == -2)
                        kill(pids[r], SIGKILL);
            }
            usleep(2000);
            continue;
        }
        for (int r = 0; r < p; r++)
            if (pids[r] == pid) {
                codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
                    fprintf(stderr, "rank %d killed by signal %d\n", r,
                            WTERMSIG(status));
                bad |= codes[r] != 0;
                left--;
            }
    }
    close(stop_fd);
    waitpid(store_pid, NULL, 0);
    return bad;
}

static inline int rt_spawn(int p, herd_main_fn fn, void *arg)
{
    int codes[RT_MAX_RANKS] = {0};
    int rc = rt_spawn_opts(p, fn, arg, NULL, codes);
    for (int r = 0; rc && r < p; r++)
        if (codes[r])
            fprintf(stderr, "rank %d of %d exited with %d\n", r, p, codes[r]);
    return rc;
}

/* Element i of rank q's input (salt distinguishes buffers) as an int64,
 * chosen so that every op stays exact in every dtype. */
static inline int64_t rt_value(int q, uint64_t i, int salt, herd_op_t op)
{
    switch (op) {
    case HERD_PRODUCT:
        return (q + i) % 5 == 0 ? -1 : (q + i + salt) % 3 == 0 ? 2 : 1;
    case HERD_BAND:
    case HERD_BOR:
    case HERD_BXOR:
        return (int64_t)((q * 37 + i * 11 + (uint64_t)salt) & 0x7f);
    default:
        return (int64_t)((q * 7 + i * 13 + (uint64_t)salt) % 9) - 4;
    }
}

static inline void rt_fill(void *buf, uint64_t n, herd_dtype_t dt, int q,
                           int salt, herd_op_t op)
{
    for (uint64_t i = 0; i < n; i++)
        core_dtype_store(dt, buf, i, (double)rt_value(q, i, salt, op));
}

/* One collective to run and check. */
typedef struct rt_case {
    herd_coll_t coll;
    herd_algo_t algo;
    herd_dtype_t dtype;
    herd_op_t op;
    uint64_t count;
    int root;
    int inplace;
} rt_case_t;

/* Reduce block `blk` (count elements at blk*count) of all p ranks'
 * inputs (each n elements long) into out. */
static inline void rt_ref_reduce(void *out, const rt_case_t *k, int p,
                                 uint64_t n, uint64_t blk)
{
    size_t es = herd_dtype_size(k->dtype);
    char *tmp = malloc(n * es + 1);
    for (int q = 0; q < p; q++) {
        rt_fill(tmp, n, k->dtype, q, 1, k->op);
        if (q == 0)
            memcpy(out, tmp + blk * k->count * es, k->count * es);
        else
            core_reduce(out, out, tmp + blk * k->count * es, k->count, k->dtype,
                        k->op);
    }
    if (k->op == HERD_AVG)
        core_reduce_avg_finish(out, k->count, k->dtype, p);
    free(tmp);
}

/* The expected output of rank r (NULL when it has none). */
static inline char *rt_expected(const rt_case_t *k, int p, int r,
                                uint64_t *n_out)
{
    size_t es = herd_dtype_size(k->dtype);
    uint64_t n = core_coll_recv_count(k->coll, k->count, p);
    uint64_t c = k->count;
    char *e = calloc(n * es + 1, 1), *tmp = malloc(c * p * es + 1);
    *n_out = n;
    switch (k->coll) {
    case HERD_COLL_ALL_REDUCE:
        rt_ref_reduce(e, k, p, c, 0);
        break;
    case HERD_COLL_REDUCE:
        rt_ref_reduce(e, k, p, c, 0);
        break;
    case HERD_COLL_REDUCE_SCATTER:
        rt_ref_reduce(e, k, p, c * p, (uint64_t)r);
        break;
    case HERD_COLL_BROADCAST:
        rt_fill(e, c, k->dtype, k->root, 1, k->op);
        break;
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_GATHER:
        for (int q = 0; q < p; q++)
            rt_fill(e + (size_t)q * c * es, c, k->dtype, q, 1, k->op);
        break;
    case HERD_COLL_SCATTER:
        rt_fill(tmp, c * p, k->dtype, k->root, 1, k->op);
        memcpy(e, tmp + (size_t)r * c * es, c * es);
        break;
    case HERD_COLL_ALL_TO_ALL:
        for (int q = 0; q < p; q++) {
            rt_fill(tmp, c * p, k->dtype, q, 1, k->op);
            memcpy(e + (size_t)q * c * es, tmp + (size_t)r * c * es, c * es);
        }
        break;
    default:
        break;
    }
    free(tmp);
    int has = !((k->coll == HERD_COLL_REDUCE || k->coll == HERD_COLL_GATHER) &&
                r != k->root);
    if (!has) {
        free(e);
        return NULL;
    }
    return e;
}

static inline herd_status_t rt_call(herd_comm_t *c, const rt_case_t *k,
                                    const void *in, void *out, herd_req_t **req)
{
    switch (k->coll) {
    case HERD_COLL_ALL_REDUCE:
        return herd_all_reduce(c, in, out, k->count, k->dtype, k->op, req);
    case HERD_COLL_BROADCAST:
        return herd_broadcast(c, out, k->count, k->dtype, k->root, req);
    case HERD_COLL_REDUCE:
        return herd_reduce(c, in, out, k->count, k->dtype, k->op, k->root, req);
    case HERD_COLL_ALL_GATHER:
        return herd_all_gather(c, in, out, k->count, k->dtype, req);
    case HERD_COLL_GATHER:
        return herd_gather(c, in, out, k->count, k->dtype, k->root, req);
    case HERD_COLL_SCATTER:
        return herd_scatter(c, in, out, k->count, k->dtype, k->root, req);
    case HERD_COLL_REDUCE_SCATTER:
        return herd_reduce_scatter(c, in, out, k->count, k->dtype, k->op, req);
    case HERD_COLL_ALL_TO_ALL:
        return herd_all_to_all(c, in, out, k->count, k->dtype, req);
    default:
        return herd_barrier(c, req);
    }
}

/* Buffers of one case on this rank: input filled, output poisoned. The
 * in-place forms follow herd.h (all_gather: input at block r of out). */
typedef struct rt_bufs {
    char *in, *out;
    char *in_own;
} rt_bufs_t;

static inline void rt_bufs_make(herd_comm_t *c, const rt_case_t *k,
                                rt_bufs_t *b)
{
    int p = herd_comm_size(c), r = herd_comm_rank(c);
    size_t es = herd_dtype_size(k->dtype);
    uint64_t ni = core_coll_send_count(k->coll, k->count, p);
    uint64_t no = core_coll_recv_count(k->coll, k->count, p);
    b->out = malloc(no * es + 1);
    memset(b->out, 0x5a, no * es + 1);
    b->in_own = malloc(ni * es + 1);
    rt_fill(b->in_own, ni, k->dtype, r, 1, k->op);
    b->in = b->in_own;
    if (k->coll == HERD_COLL_BROADCAST && r == k->root)
        memcpy(b->out, b->in_own, ni * es);
    if (!k->inplace)
        return;
    if (k->coll == HERD_COLL_ALL_GATHER) {
        memcpy(b->out + (size_t)r * k->count * es, b->in_own, ni * es);
        b->in = b->out + (size_t)r * k->count * es;
    } else if (no >= ni) {
        memcpy(b->out, b->in_own, ni * es);
        b->in = b->out;
    } else { /* reduce_scatter: input in a p*count buffer, out its head */
        free(b->out);
        b->out = malloc(ni * es + 1);
        memcpy(b->out, b->in_own, ni * es);
        b->in = b->out;
    }
}

static inline void rt_bufs_free(rt_bufs_t *b)
{
    free(b->in_own);
    free(b->out);
}

static inline void rt_case_name(const rt_case_t *k, char *buf, size_t len)
{
    snprintf(buf, len, "%s algo=%s %s %s count=%llu root=%d%s",
             herd_coll_name(k->coll), herd_algo_name(k->algo),
             herd_dtype_name(k->dtype), herd_op_name(k->op),
             (unsigned long long)k->count, k->root,
             k->inplace ? " in-place" : "");
}

/* Compare the output with the reference; 0 if equal. */
static inline int rt_check(herd_comm_t *c, const rt_case_t *k,
                           const rt_bufs_t *b)
{
    int p = herd_comm_size(c), r = herd_comm_rank(c);
    uint64_t n;
    char *e = rt_expected(k, p, r, &n);
    if (!e)
        return 0;
    size_t es = herd_dtype_size(k->dtype);
    int bad = 0;
    for (uint64_t i = 0; i < n && !bad; i++)
        if (memcmp(e + i * es, b->out + i * es, es) != 0) {
            char name[160];
            rt_case_name(k, name, sizeof(name));
            fprintf(stderr, "rank %d/%d: %s: element %llu differs\n", r, p,
                    name, (unsigned long long)i);
            bad = 1;
        }
    free(e);
    return bad;
}

/* Run one case on comm (blocking) and check it; 0 on success. */
static inline int rt_run_case(herd_comm_t *c, const rt_case_t *k)
{
    rt_bufs_t b;
    rt_bufs_make(c, k, &b);
    herd_comm_set_algo(c, k->coll, k->algo);
    herd_status_t st = rt_call(c, k, b.in, b.out, NULL);
    int bad = st != HERD_OK;
    if (bad) {
        char name[160];
        rt_case_name(k, name, sizeof(name));
        fprintf(stderr, "rank %d: %s: %s (%s)\n", herd_comm_rank(c), name,
                herd_status_string(st), herd_last_error(c));
    } else {
        bad = rt_check(c, k, &b);
    }
    rt_bufs_free(&b);
    return bad;
}

#endif
