/* real/store/server.c - the rendezvous store server: a libevent loop
 * (event_base + evconnlistener + bufferevents) in its own thread, and
 * what keeps one client from starving the others.
 *
 * Each connection's input is cut into frames by store_frame_decode
 * (proto.c) and handed to server_req.c. A malformed or truncated frame
 * closes only that connection, with a logged reason. Limits
 * (store_limits_t): with a token, a connection may send nothing but one
 * small auth frame, within auth_s; a begun frame must arrive at a least
 * rate (slow-loris clients are closed); the unprocessed input of all
 * connections together and the number of connections are capped. When
 * accept fails (out of descriptors) the listener pauses briefly instead
 * of spinning on the pending connection, and repeated messages are rate
 * limited. Stopping writes an eventfd whose event breaks the loop; the
 * thread is joined and everything freed by the caller. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "real/store/server_int.h"

void store_limits_default(store_limits_t *lim)
{
    lim->max_buffered = (size_t)512 << 20;
    lim->max_conns = 8192;
    lim->auth_s = 5.0;
    lim->stall_s = 10.0;
    lim->min_rate = 256.0 * 1024;
    lim->accept_pause_s = 0.1;
    lim->log_every_s = 10.0;
}

double srv_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct timeval tv_of(double s)
{
    if (s < 0)
        s = 0;
    struct timeval tv = {(time_t)s,
                         (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    return tv;
}

void srv_log(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "herd store: %s\n", msg);
}

/* A message that may repeat at the rate clients arrive: at most one per
 * log_every_s, with a count of those left out. */
static void srv_log_limited(store_server_t *srv, const char *msg)
{
    double t = srv_now_s();
    if (srv->last_log > 0 && t - srv->last_log < srv->lim.log_every_s) {
        srv->suppressed++;
        return;
    }
    if (srv->suppressed)
        srv_log("%s (and %lu more like it)", msg, srv->suppressed);
    else
        srv_log("%s", msg);
    srv->last_log = t;
    srv->suppressed = 0;
}

/* ---- connections ------------------------------------------------------ */

void srv_conn_free(srv_conn_t *c)
{
    store_server_t *srv = c->srv;
    if (c->waiter)
        srv_waiter_free(c->waiter);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    srv->buffered -= c->buffered;
    if (c->timer)
        event_free(c->timer);
    bufferevent_free(c->bev);
    free(c);
}

int srv_conn_fail(srv_conn_t *c, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    srv_log("client %s: %s; closing the connection", c->peer, why);
    srv_conn_free(c);
    return FRAME_FREED;
}

void srv_conn_resume(srv_conn_t *c)
{
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        bufferevent_trigger(c->bev, EV_READ,
                            BEV_TRIG_IGNORE_WATERMARKS |
                                BEV_TRIG_DEFER_CALLBACKS);
}

/* When the connection must have made progress: authenticated (token
 * servers), or finished the frame it began. 0: no deadline. */
static double conn_deadline(const srv_conn_t *c)
{
    const store_limits_t *l = &c->srv->lim;
    if (!c->authed)
        return c->t_accept + l->auth_s;
    if (c->partial && !c->waiter && !c->closing)
        return c->t_frame + l->stall_s + (double)c->need / l->min_rate;
    return 0;
}

static void conn_arm(srv_conn_t *c)
{
    double d = conn_deadline(c);
    if (d <= 0) {
        evtimer_del(c->timer);
        return;
    }
    struct timeval tv = tv_of(d - srv_now_s());
    evtimer_add(c->timer, &tv);
}

static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    srv_conn_t *c = arg;
    (void)fd;
    (void)what;
    double d = conn_deadline(c);
    if (d <= 0)
        return;
    /* Bytes waiting in the socket: the delay is this loop's, not the
     * client's (a busy server reads them in this same pass). */
    int waiting = 0;
    if (ioctl(bufferevent_getfd(c->bev), FIONREAD, &waiting) == 0 &&
        waiting > 0) {
        struct timeval tv = tv_of(0.5);
        evtimer_add(c->timer, &tv);
        return;
    }
    if (!c->authed)
        srv_conn_fail(c, "did not authenticate within %.3g s",
                      c->srv->lim.auth_s);
    else
        srv_conn_fail(c,
                      "a request stalled (%zu of %zu bytes after %.3g s); "
                      "slow or stuck client",
                      evbuffer_get_length(bufferevent_get_input(c->bev)),
                      c->need, srv_now_s() - c->t_frame);
}

/* Count the connection's unprocessed input; 0 when the total is over the
 * limit (the connection is then freed). */
static int conn_account(srv_conn_t *c)
{
    store_server_t *srv = c->srv;
    size_t len = evbuffer_get_length(bufferevent_get_input(c->bev));
    srv->buffered = srv->buffered - c->buffered + len;
    c->buffered = len;
    if (srv->buffered <= srv->lim.max_buffered)
        return 1;
    srv_conn_fail(c,
                  "the server holds %zu bytes of unfinished requests "
                  "(limit %zu)",
                  srv->buffered, srv->lim.max_buffered);
    return 0;
}

/* Decode and handle the complete frames at the head of the input.
 * FRAME_FREED when the connection is gone. */
static int conn_frames(srv_conn_t *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    char why[160];
    if (c->proto == SRV_PROTO_UNKNOWN) {
        int r = srv_detect(c);
        if (r != FRAME_NEXT)
            return r == FRAME_FREED ? r : FRAME_NEXT;
    }
    if (c->proto == SRV_PROTO_TCPS || c->proto == SRV_PROTO_TCPS1)
        return srv_tcps_frames(c);
    while (!c->waiter && !c->closing) {
        size_t max = c->authed ? STORE_MAX_FRAME : STORE_MAX_AUTH_FRAME;
        size_t avail = evbuffer_get_length(in), need = 0, used = 0;
        uint8_t h[4];
        store_req_t q;
        ssize_t hl = evbuffer_copyout(in, h, avail < 4 ? avail : 4);
        store_frame_result_t fr =
            store_frame_decode(h, hl > 0 ? (size_t)hl : 0, max, &q, &used,
                               &need, why, sizeof(why));
        if (fr == STORE_FRAME_PARTIAL && need && avail >= need) {
            const uint8_t *p = evbuffer_pullup(in, (ssize_t)need);
            if (!p)
                return srv_conn_fail(c, "out of memory for a %zu-byte frame",
                                     need);
            fr = store_frame_decode(p, need, max, &q, &used, &need, why,
                                    sizeof(why));
        }
        if (fr == STORE_FRAME_BAD)
            return srv_conn_fail(c, "%s", why);
        if (fr == STORE_FRAME_PARTIAL) {
            if (!c->partial && avail > 0)
                c->t_frame = srv_now_s();
            c->partial = avail > 0;
            c->need = need;
            return FRAME_NEXT;
        }
        c->partial = 0;
        c->need = 0;
        if (srv_handle(c, &q) == FRAME_FREED)
            return FRAME_FREED;
        evbuffer_drain(in, used);
    }
    return FRAME_NEXT;
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    srv_conn_t *c = arg;
    (void)bev;
    if (!conn_account(c) || conn_frames(c) == FRAME_FREED || !conn_account(c))
        return;
    conn_arm(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    srv_conn_t *c = arg;
    if (c->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        srv_conn_free(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    srv_conn_t *c = arg;
    size_t pending = evbuffer_get_length(bufferevent_get_input(bev));
    if ((what & BEV_EVENT_EOF) && pending > 0 && !c->closing)
        srv_conn_fail(c, "truncated frame (%zu bytes left at end of stream)",
                      pending);
    else if ((what & BEV_EVENT_ERROR) && !c->closing)
        srv_conn_fail(c, "socket error: %s", strerror(EVUTIL_SOCKET_ERROR()));
    else
        srv_conn_free(c);
}

/* ---- listener, thread, start and stop --------------------------------- */

static void accept_cb(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    (void)lis;
    store_server_t *srv = arg;
    if (srv->nconns >= srv->lim.max_conns) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "%d connections open (the limit); refusing new ones",
                 srv->nconns);
        srv_log_limited(srv, msg);
        evutil_closesocket(fd);
        return;
    }
    srv_conn_t *c = calloc(1, sizeof(*c));
    struct bufferevent *bev =
        c ? bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
    struct event *timer = bev ? evtimer_new(srv->base, conn_timer_cb, c) : NULL;
    if (!timer) {
        srv_log_limited(srv, "out of memory accepting a client; refused");
        if (bev)
            bufferevent_free(bev);
        else
            evutil_closesocket(fd);
        free(c);
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
    c->timer = timer;
    c->t_accept = srv_now_s();
    c->authed = srv->token == NULL;
    c->next = srv->conns;
    if (c->next)
        c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    /* Stop reading a client that is ahead by more than one frame (e.g.
     * pipelining behind a parked get): its input stays bounded. Before
     * authentication, by more than one auth frame. */
    bufferevent_setwatermark(
        bev, EV_READ, 0,
        4 + (size_t)(c->authed ? STORE_MAX_FRAME : STORE_MAX_AUTH_FRAME));
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    conn_arm(c);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    store_server_t *srv = arg;
    evconnlistener_enable(srv->lis);
}

/* Out of descriptors and the like: the pending connection stays in the
 * backlog and the listener would fire again at once, so it rests for
 * accept_pause_s while the clients we have are served. */
static void accept_error_cb(struct evconnlistener *lis, void *arg)
{
    store_server_t *srv = arg;
    char msg[256];
    snprintf(msg, sizeof(msg),
             "accept failed: %s; pausing new connections for %.3g s",
             strerror(EVUTIL_SOCKET_ERROR()), srv->lim.accept_pause_s);
    srv_log_limited(srv, msg);
    evconnlistener_disable(lis);
    struct timeval tv = tv_of(srv->lim.accept_pause_s);
    evtimer_add(srv->resume_ev, &tv);
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
        srv_conn_free(srv->conns);
    if (srv->lis)
        evconnlistener_free(srv->lis);
    if (srv->resume_ev)
        event_free(srv->resume_ev);
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

static int limits_ok(const store_limits_t *l)
{
    return l->max_buffered > 0 && l->max_conns > 0 && l->auth_s > 0 &&
           l->stall_s > 0 && l->min_rate > 0 && l->accept_pause_s >= 0 &&
           l->log_every_s >= 0;
}

herd_status_t store_server_start_limits(const char *host, int port,
                                        const char *token,
                                        const store_limits_t *lim,
                                        store_server_t **out)
{
    if (port < 0 || port > 65535 || !out || (lim && !limits_ok(lim)))
        return HERD_ERR_INVALID_ARG;
    if (token && strlen(token) > STORE_MAX_TOKEN)
        return HERD_ERR_INVALID_ARG;
    store_server_t *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return HERD_ERR_NO_MEMORY;
    srv->stop_fd = -1;
    if (lim)
        srv->lim = *lim;
    else
        store_limits_default(&srv->lim);
    herd_status_t st = store_map_create(&srv->map);
    if (st != HERD_OK)
        goto fail;
    st = HERD_ERR_NO_MEMORY;
    if (token && *token && !(srv->token = strdup(token)))
        goto fail;
    if (!(srv->base = event_base_new()))
        goto fail;
    if (!(srv->resume_ev = evtimer_new(srv->base, resume_cb, srv)))
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

herd_status_t store_server_start(const char *host, int port, const char *token,
                                 store_server_t **out)
{
    return store_server_start_limits(host, port, token, NULL, out);
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
