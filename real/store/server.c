/* real/store/server.c - the rendezvous store server: a libevent loop
 * (event_base + evconnlistener + bufferevents) in its own thread.
 *
 * Requests are answered in arrival order per connection. get and wait on
 * missing keys park a waiter on the server; it is answered when a set,
 * add or compare_set makes its keys exist, or with HERD_ERR_TIMEOUT by
 * its own timer, so nothing polls. A malformed or truncated frame closes
 * only that connection, with a logged reason. Stopping writes an eventfd
 * whose event breaks the loop; the thread is joined and everything freed
 * by the caller. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "real/store/map.h"
#include "real/store/proto.h"
#include "real/store/store.h"

typedef struct srv_waiter srv_waiter_t;

typedef struct srv_conn {
    store_server_t *srv;
    struct bufferevent *bev;
    int authed;
    int closing; /* a final reply is queued; free once it is flushed */
    srv_waiter_t *waiter;
    char peer[96];
    struct srv_conn *prev, *next;
} srv_conn_t;

struct srv_waiter {
    srv_conn_t *conn;
    uint8_t op; /* STORE_OP_GET or STORE_OP_WAIT */
    int nkeys;
    char **keys;
    size_t *klens;
    struct event *timer;
    srv_waiter_t *prev, *next;
};

struct store_server {
    struct event_base *base;
    struct evconnlistener *lis;
    struct event *stop_ev;
    int stop_fd;
    pthread_t thread;
    char *token;
    int port;
    store_map_t *map;
    srv_conn_t *conns;
    srv_waiter_t *waiters;
};

/* Result of handling one frame. */
enum { FRAME_NEXT = 0, FRAME_STOP = 1, FRAME_FREED = -1 };

static void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void srv_log(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "herd store: %s\n", msg);
}

/* ---- waiters ---------------------------------------------------------- */

static void waiter_free(srv_waiter_t *w)
{
    store_server_t *srv = w->conn->srv;
    if (w->prev)
        w->prev->next = w->next;
    else
        srv->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->conn->waiter = NULL;
    if (w->timer)
        event_free(w->timer);
    for (int i = 0; i < w->nkeys; i++)
        free(w->keys[i]);
    free(w->keys);
    free(w->klens);
    free(w);
}

/* ---- connections ------------------------------------------------------ */

static void conn_free(srv_conn_t *c)
{
    store_server_t *srv = c->srv;
    if (c->waiter)
        waiter_free(c->waiter);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bufferevent_free(c->bev);
    free(c);
}

static int conn_fail(srv_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int conn_fail(srv_conn_t *c, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    srv_log("client %s: %s; closing the connection", c->peer, why);
    conn_free(c);
    return FRAME_FREED;
}

static void put_le64(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Frame header and status; `extra` payload bytes follow from the caller. */
static void reply_head(srv_conn_t *c, herd_status_t st, size_t extra)
{
    uint8_t h[8];
    put_le64(h, 4 + extra, 4);
    put_le64(h + 4, (uint32_t)(int32_t)st, 4);
    bufferevent_write(c->bev, h, sizeof(h));
}

static void reply_status(srv_conn_t *c, herd_status_t st)
{
    reply_head(c, st, 0);
}

static void reply_i64(srv_conn_t *c, herd_status_t st, int64_t v)
{
    uint8_t b[8];
    put_le64(b, (uint64_t)v, 8);
    reply_head(c, st, 8);
    bufferevent_write(c->bev, b, 8);
}

static void reply_bytes(srv_conn_t *c, herd_status_t st, const void *p,
                        size_t n)
{
    uint8_t b[8];
    put_le64(b, n, 8);
    reply_head(c, st, 8 + n);
    bufferevent_write(c->bev, b, 8);
    if (n)
        bufferevent_write(c->bev, p, n);
}

static void conn_resume(srv_conn_t *c)
{
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        bufferevent_trigger(c->bev, EV_READ,
                            BEV_TRIG_IGNORE_WATERMARKS |
                                BEV_TRIG_DEFER_CALLBACKS);
}

static int waiter_ready(const srv_waiter_t *w)
{
    for (int i = 0; i < w->nkeys; i++)
        if (!store_map_get(w->conn->srv->map, w->keys[i], w->klens[i]))
            return 0;
    return 1;
}

static void waiter_answer(srv_waiter_t *w, herd_status_t st)
{
    srv_conn_t *c = w->conn;
    if (st == HERD_OK && w->op == STORE_OP_GET) {
        store_entry_t *e = store_map_get(c->srv->map, w->keys[0], w->klens[0]);
        reply_bytes(c, st, e->val, e->vlen);
    } else {
        reply_status(c, st);
    }
    waiter_free(w);
    conn_resume(c);
}

static void srv_wake(store_server_t *srv)
{
    srv_waiter_t *w = srv->waiters;
    while (w) {
        srv_waiter_t *next = w->next;
        if (waiter_ready(w))
            waiter_answer(w, HERD_OK);
        w = next;
    }
}

static void waiter_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    waiter_answer(arg, HERD_ERR_TIMEOUT);
}

/* Park `c` until keys[] all exist, or timeout_ms (<= 0: no limit). */
static herd_status_t waiter_park(srv_conn_t *c, uint8_t op, int n,
                                 const uint8_t **keys, const size_t *klens,
                                 int64_t timeout_ms)
{
    srv_waiter_t *w = calloc(1, sizeof(*w));
    if (!w)
        return HERD_ERR_NO_MEMORY;
    w->conn = c;
    w->op = op;
    w->keys = calloc((size_t)n, sizeof(*w->keys));
    w->klens = calloc((size_t)n, sizeof(*w->klens));
    c->waiter = w;
    w->next = c->srv->waiters;
    if (w->next)
        w->next->prev = w;
    c->srv->waiters = w;
    if (!w->keys || !w->klens)
        goto oom;
    for (int i = 0; i < n; i++, w->nkeys++) {
        if (!(w->keys[i] = malloc(klens[i] + 1)))
            goto oom;
        memcpy(w->keys[i], keys[i], klens[i]);
        w->keys[i][klens[i]] = '\0';
        w->klens[i] = klens[i];
    }
    /* Beyond a month the timer is pointless (and near overflow). */
    if (timeout_ms > 0 && timeout_ms < 31LL * 86400 * 1000) {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        w->timer = evtimer_new(c->srv->base, waiter_timeout_cb, w);
        if (!w->timer || evtimer_add(w->timer, &tv) != 0)
            goto oom;
    }
    return HERD_OK;
oom:
    waiter_free(w);
    return HERD_ERR_NO_MEMORY;
}

/* ---- requests --------------------------------------------------------- */

static const char *const op_names[STORE_OP_MAX_] = {
    [STORE_OP_AUTH] = "auth",         [STORE_OP_SET] = "set",
    [STORE_OP_GET] = "get",           [STORE_OP_ADD] = "add",
    [STORE_OP_CAS] = "compare_set",   [STORE_OP_WAIT] = "wait",
    [STORE_OP_CHECK] = "check",       [STORE_OP_DELETE] = "delete",
    [STORE_OP_NUM_KEYS] = "num_keys",
};

static int frame_done(srv_conn_t *c, const store_rbuf_t *r, uint8_t op)
{
    if (r->bad || r->off != r->len)
        return conn_fail(c, "malformed %s request (%zu bytes)", op_names[op],
                         r->len);
    return FRAME_NEXT;
}

/* Reads `n` keys; 0 when the count or a key is out of bounds. */
static int read_keys(store_rbuf_t *r, int64_t n, const uint8_t **keys,
                     size_t *klens)
{
    for (int64_t i = 0; i < n; i++)
        if (!(keys[i] = store_rbuf_bytes(r, STORE_MAX_KEY, &klens[i])))
            return 0;
    return 1;
}

static int op_set(srv_conn_t *c, store_rbuf_t *r)
{
    size_t kl = 0, vl = 0;
    const uint8_t *k = store_rbuf_bytes(r, STORE_MAX_KEY, &kl);
    const uint8_t *v = store_rbuf_bytes(r, STORE_MAX_VALUE, &vl);
    if (frame_done(c, r, STORE_OP_SET) != FRAME_NEXT)
        return FRAME_FREED;
    herd_status_t st = store_map_put(c->srv->map, k, kl, v, vl);
    reply_status(c, st);
    srv_wake(c->srv);
    return FRAME_NEXT;
}

static int op_get(srv_conn_t *c, store_rbuf_t *r)
{
    size_t kl = 0;
    const uint8_t *k = store_rbuf_bytes(r, STORE_MAX_KEY, &kl);
    int64_t tmo = store_rbuf_i64(r);
    if (frame_done(c, r, STORE_OP_GET) != FRAME_NEXT)
        return FRAME_FREED;
    store_entry_t *e = store_map_get(c->srv->map, k, kl);
    if (e) {
        reply_bytes(c, HERD_OK, e->val, e->vlen);
        return FRAME_NEXT;
    }
    herd_status_t st = waiter_park(c, STORE_OP_GET, 1, &k, &kl, tmo);
    if (st != HERD_OK)
        reply_status(c, st);
    return FRAME_NEXT;
}

static int op_add(srv_conn_t *c, store_rbuf_t *r)
{
    size_t kl = 0;
    const uint8_t *k = store_rbuf_bytes(r, STORE_MAX_KEY, &kl);
    int64_t delta = store_rbuf_i64(r), v = 0;
    if (frame_done(c, r, STORE_OP_ADD) != FRAME_NEXT)
        return FRAME_FREED;
    herd_status_t st = store_map_add(c->srv->map, k, kl, delta, &v);
    reply_i64(c, st, v);
    srv_wake(c->srv);
    return FRAME_NEXT;
}

static int op_cas(srv_conn_t *c, store_rbuf_t *r)
{
    size_t kl = 0, el = 0, dl = 0, curl = 0;
    const uint8_t *k = store_rbuf_bytes(r, STORE_MAX_KEY, &kl);
    const uint8_t *e = store_rbuf_bytes(r, STORE_MAX_VALUE, &el);
    const uint8_t *d = store_rbuf_bytes(r, STORE_MAX_VALUE, &dl);
    if (frame_done(c, r, STORE_OP_CAS) != FRAME_NEXT)
        return FRAME_FREED;
    const void *cur = NULL;
    herd_status_t st =
        store_map_cas(c->srv->map, k, kl, e, el, d, dl, &cur, &curl);
    reply_bytes(c, st, st == HERD_OK ? cur : "", st == HERD_OK ? curl : 0);
    srv_wake(c->srv);
    return FRAME_NEXT;
}

static int op_keys(srv_conn_t *c, store_rbuf_t *r, uint8_t op)
{
    int64_t n = store_rbuf_i64(r);
    if (n < 1 || n > (int64_t)STORE_MAX_WAIT_KEYS)
        return conn_fail(c, "%s of %lld keys (limit %u)", op_names[op],
                         (long long)n, STORE_MAX_WAIT_KEYS);
    const uint8_t **keys = calloc((size_t)n, sizeof(*keys));
    size_t *klens = calloc((size_t)n, sizeof(*klens));
    int ok = keys && klens && read_keys(r, n, keys, klens);
    int64_t tmo = op == STORE_OP_WAIT ? store_rbuf_i64(r) : 0;
    int res = FRAME_NEXT;
    if (!keys || !klens)
        res = conn_fail(c, "out of memory");
    else if (!ok || frame_done(c, r, op) != FRAME_NEXT)
        res = ok ? FRAME_FREED
                 : conn_fail(c, "malformed %s request", op_names[op]);
    if (res == FRAME_NEXT) {
        srv_waiter_t probe = {
            .conn = c, .nkeys = (int)n, .keys = (char **)keys, .klens = klens};
        int all = waiter_ready(&probe);
        if (op == STORE_OP_CHECK)
            reply_i64(c, HERD_OK, all);
        else if (all)
            reply_status(c, HERD_OK);
        else if (waiter_park(c, op, (int)n, keys, klens, tmo) != HERD_OK)
            reply_status(c, HERD_ERR_NO_MEMORY);
    }
    free(keys);
    free(klens);
    return res;
}

static int op_delete(srv_conn_t *c, store_rbuf_t *r)
{
    size_t kl = 0;
    const uint8_t *k = store_rbuf_bytes(r, STORE_MAX_KEY, &kl);
    if (frame_done(c, r, STORE_OP_DELETE) != FRAME_NEXT)
        return FRAME_FREED;
    reply_i64(c, HERD_OK, store_map_del(c->srv->map, k, kl));
    return FRAME_NEXT;
}

/* Reply, then close once the reply has left. */
static int conn_refuse(srv_conn_t *c, herd_status_t st, const char *why)
{
    srv_log("client %s: %s; closing the connection", c->peer, why);
    reply_status(c, st);
    c->closing = 1;
    bufferevent_disable(c->bev, EV_READ);
    return FRAME_STOP;
}

static int op_auth(srv_conn_t *c, store_rbuf_t *r)
{
    size_t tl = 0;
    const uint8_t *t = store_rbuf_bytes(r, STORE_MAX_TOKEN, &tl);
    if (frame_done(c, r, STORE_OP_AUTH) != FRAME_NEXT)
        return FRAME_FREED;
    const char *want = c->srv->token;
    if (want && (tl != strlen(want) || memcmp(t, want, tl) != 0))
        return conn_refuse(c, HERD_ERR_AUTH, "wrong token");
    c->authed = 1;
    reply_status(c, HERD_OK);
    return FRAME_NEXT;
}

static int handle_frame(srv_conn_t *c, const uint8_t *body, size_t len)
{
    store_rbuf_t r;
    store_rbuf_init(&r, body, len);
    uint8_t op = store_rbuf_u8(&r);
    if (op == 0 || op >= STORE_OP_MAX_)
        return conn_fail(c, "unknown request type %u", op);
    if (!c->authed && op != STORE_OP_AUTH)
        return conn_refuse(c, HERD_ERR_AUTH, "request before authentication");
    switch (op) {
    case STORE_OP_AUTH:
        return op_auth(c, &r);
    case STORE_OP_SET:
        return op_set(c, &r);
    case STORE_OP_GET:
        return op_get(c, &r);
    case STORE_OP_ADD:
        return op_add(c, &r);
    case STORE_OP_CAS:
        return op_cas(c, &r);
    case STORE_OP_WAIT:
    case STORE_OP_CHECK:
        return op_keys(c, &r, op);
    case STORE_OP_DELETE:
        return op_delete(c, &r);
    default:
        if (frame_done(c, &r, op) != FRAME_NEXT)
            return FRAME_FREED;
        reply_i64(c, HERD_OK, (int64_t)store_map_count(c->srv->map));
        return FRAME_NEXT;
    }
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    srv_conn_t *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (!c->waiter && !c->closing) {
        uint8_t h[4];
        if (evbuffer_copyout(in, h, 4) < 4)
            return;
        uint32_t n = store_le32(h);
        if (n == 0 || n > STORE_MAX_FRAME) {
            conn_fail(c, "frame of %u bytes (limit %u)", n, STORE_MAX_FRAME);
            return;
        }
        if (evbuffer_get_length(in) < 4 + (size_t)n)
            return;
        const uint8_t *p = evbuffer_pullup(in, 4 + (ssize_t)n);
        if (!p) {
            conn_fail(c, "out of memory for a %u-byte frame", n);
            return;
        }
        if (handle_frame(c, p + 4, n) == FRAME_FREED)
            return;
        evbuffer_drain(in, 4 + (size_t)n);
    }
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    srv_conn_t *c = arg;
    if (c->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        conn_free(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    srv_conn_t *c = arg;
    size_t pending = evbuffer_get_length(bufferevent_get_input(bev));
    if ((what & BEV_EVENT_EOF) && pending > 0 && !c->closing)
        conn_fail(c, "truncated frame (%zu bytes left at end of stream)",
                  pending);
    else if ((what & BEV_EVENT_ERROR) && !c->closing)
        conn_fail(c, "socket error: %s", strerror(EVUTIL_SOCKET_ERROR()));
    else
        conn_free(c);
}

/* ---- listener, thread, start and stop --------------------------------- */

static void accept_cb(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    (void)lis;
    store_server_t *srv = arg;
    srv_conn_t *c = calloc(1, sizeof(*c));
    struct bufferevent *bev =
        c ? bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
    if (!bev) {
        srv_log("out of memory accepting a client; refused");
        free(c);
        evutil_closesocket(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char host[64] = "?", port[16] = "?";
    getnameinfo(sa, (socklen_t)salen, host, sizeof(host), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(c->peer, sizeof(c->peer), "%s:%s", host, port);
    c->srv = srv;
    c->bev = bev;
    c->authed = srv->token == NULL;
    c->next = srv->conns;
    if (c->next)
        c->next->prev = c;
    srv->conns = c;
    bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    /* Stop reading a client that is ahead by more than one frame (e.g.
     * pipelining behind a parked get): its input stays bounded. */
    bufferevent_setwatermark(bev, EV_READ, 0, 4 + (size_t)STORE_MAX_FRAME);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void accept_error_cb(struct evconnlistener *lis, void *arg)
{
    (void)lis;
    (void)arg;
    /* Out of descriptors and the like: keep serving the clients we have. */
    srv_log("accept failed: %s", strerror(EVUTIL_SOCKET_ERROR()));
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static void *srv_thread(void *arg)
{
    store_server_t *srv = arg;
    event_base_dispatch(srv->base);
    return NULL;
}

static herd_status_t srv_listen(store_server_t *srv, const char *host, int port)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {.ai_family = host ? AF_UNSPEC : AF_INET,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, ps, &hints, &res);
    if (gai != 0) {
        srv_log("cannot resolve %s: %s", host, gai_strerror(gai));
        return HERD_ERR_INVALID_ARG;
    }
    unsigned flags =
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
    int err = 0;
    for (struct addrinfo *a = res; a && !srv->lis; a = a->ai_next) {
        srv->lis = evconnlistener_new_bind(srv->base, accept_cb, srv, flags,
                                           128, a->ai_addr, (int)a->ai_addrlen);
        err = errno;
    }
    freeaddrinfo(res);
    if (!srv->lis) {
        srv_log("cannot listen on %s:%d: %s", host ? host : "0.0.0.0", port,
                strerror(err));
        return err == EADDRINUSE ? HERD_ERR_BUSY : HERD_ERR_IO;
    }
    evconnlistener_set_error_cb(srv->lis, accept_error_cb);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(evconnlistener_get_fd(srv->lis), (struct sockaddr *)&ss, &sl);
    srv->port =
        ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                       : ((struct sockaddr_in *)&ss)->sin_port);
    return HERD_OK;
}

static void srv_free(store_server_t *srv)
{
    while (srv->conns)
        conn_free(srv->conns);
    if (srv->lis)
        evconnlistener_free(srv->lis);
    if (srv->stop_ev)
        event_free(srv->stop_ev);
    if (srv->stop_fd >= 0)
        close(srv->stop_fd);
    if (srv->base)
        event_base_free(srv->base);
    store_map_destroy(srv->map);
    free(srv->token);
    free(srv);
}

/* The loop thread takes no signals: they stay with the caller's threads
 * (the launcher reads them through a signalfd), and a write to a closed
 * socket cannot kill the process. */
static herd_status_t srv_spawn(store_server_t *srv)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&srv->thread, NULL, srv_thread, srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0 ? HERD_OK : HERD_ERR_NO_MEMORY;
}

herd_status_t store_server_start(const char *host, int port, const char *token,
                                 store_server_t **out)
{
    if (port < 0 || port > 65535 || !out)
        return HERD_ERR_INVALID_ARG;
    if (token && strlen(token) > STORE_MAX_TOKEN)
        return HERD_ERR_INVALID_ARG;
    store_server_t *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return HERD_ERR_NO_MEMORY;
    srv->stop_fd = -1;
    herd_status_t st = store_map_create(&srv->map);
    if (st != HERD_OK)
        goto fail;
    st = HERD_ERR_NO_MEMORY;
    if (token && *token && !(srv->token = strdup(token)))
        goto fail;
    if (!(srv->base = event_base_new()))
        goto fail;
    st = HERD_ERR_IO;
    srv->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (srv->stop_fd < 0)
        goto fail;
    srv->stop_ev =
        event_new(srv->base, srv->stop_fd, EV_READ, stop_cb, srv->base);
    if (!srv->stop_ev || event_add(srv->stop_ev, NULL) != 0)
        goto fail;
    if ((st = srv_listen(srv, host, port)) != HERD_OK)
        goto fail;
    if ((st = srv_spawn(srv)) != HERD_OK)
        goto fail;
    *out = srv;
    return HERD_OK;
fail:
    srv_free(srv);
    return st;
}

int store_server_port(const store_server_t *srv)
{
    return srv->port;
}

void store_server_stop(store_server_t *srv)
{
    if (!srv)
        return;
    uint64_t one = 1;
    ssize_t w;
    do
        w = write(srv->stop_fd, &one, sizeof(one));
    while (w < 0 && errno == EINTR);
    pthread_join(srv->thread, NULL);
    srv_free(srv);
}
