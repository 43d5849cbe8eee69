/* real/tcp/link.c - sockets of the tcp engine: the listening socket and
 * its handshake, lazy outgoing connections, and the send queues that write
 * headers and payloads straight from the users' buffers with one
 * sendmsg() per batch of queued messages. */
#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <time.h>
#include <unistd.h>

#include "real/tcp/tcp.h"

#define TCP_IOV_MAX 64
/* Accepted connections waiting for their handshake, at most. */
#define TCP_MAX_PENDING(w) (64 + 2 * (w)->size)
/* A peer sends its 24-byte handshake right after connecting; a connection
 * that has not sent all of it within this long is a stranger or a stuck
 * peer, and is closed (HERD_TCP_HANDSHAKE_MS overrides; tests shorten it). */
#define TCP_HANDSHAKE_MS 10000

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_sockopts(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int bufsz = core_env_int("HERD_TCP_SOCKBUF", 0);
    if (bufsz > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
    }
}

static void pending_free(tcp_world_t *w, tcp_pending_t *pd)
{
    for (tcp_pending_t **pp = &w->pending; *pp; pp = &(*pp)->next)
        if (*pp == pd) {
            *pp = pd->next;
            w->npending--;
            break;
        }
    if (pd->ev)
        event_free(pd->ev);
    free(pd);
}

static void handshake_done(tcp_world_t *w, tcp_pending_t *pd);

static void pending_cb(evutil_socket_t fd, short what, void *arg)
{
    tcp_pending_t *pd = arg;
    tcp_world_t *w = pd->w;
    ssize_t n = (what & EV_READ) ? recv(fd, (char *)pd->buf + pd->got,
                                        sizeof(pd->buf) - pd->got, MSG_DONTWAIT)
                                 : -1;
    if (n < 0 && !(what & EV_READ))
        errno = EAGAIN; /* a timer tick: only the deadline is checked */
    /* A handshake trickling in byte by byte must not hold the slot. */
    if (n <= 0 && (errno == EAGAIN || errno == EINTR) &&
        mono_ns() >= pd->deadline_ns)
        n = 0;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(pd->fd);
        pending_free(w, pd);
        return;
    }
    if (n > 0)
        pd->got += (size_t)n;
    if (pd->got == sizeof(pd->buf))
        handshake_done(w, pd);
}

static void peer_in_cb(evutil_socket_t fd, short what, void *arg)
{
    tcp_peer_t *p = arg;
    (void)fd;
    (void)what;
    tcp_peer_readable(p->w, p);
}

static void out_read_cb(evutil_socket_t fd, short what, void *arg);
static void out_write_cb(evutil_socket_t fd, short what, void *arg);

static void peer_write(tcp_world_t *w, tcp_peer_t *p);

static int peer_watch_in(tcp_world_t *w, tcp_peer_t *p, int fd)
{
    p->in_fd = fd;
    p->in_ev = event_new(w->base, fd, EV_READ | EV_PERSIST, peer_in_cb, p);
    if (p->in_ev && event_add(p->in_ev, NULL) == 0)
        return 0;
    if (p->in_ev)
        event_free(p->in_ev);
    p->in_ev = NULL;
    p->in_fd = -1;
    return -1;
}

static int may_adopt(const tcp_world_t *w, const tcp_peer_t *p)
{
    return p->state == TCP_PEER_ALIVE && !w->closing && p->in_fd == -1 &&
           (p->out_fd == -1 || p->out_fd == TCP_FD_AWAIT || p->out_wait);
}

/* Send on the socket we read from, and flush what waited for it. */
static void adopt_out(tcp_world_t *w, tcp_peer_t *p, int fd)
{
    p->out_fd = fd;
    p->out_wev = event_new(w->base, fd, EV_WRITE | EV_PERSIST, out_write_cb, p);
    if (!p->out_wev)
        p->out_fd = -1;
    peer_write(w, p);
}

/* A higher rank writes an abort notice on its connection before our
 * answer (tcp_send_control): read it from one we refuse, since its sender
 * may have exited before our own connection reaches it. */
static void refused_notice(tcp_world_t *w, const tcp_peer_t *p, int fd)
{
    tcp_hdr_t h;
    char why[96];
    /* Checked like any header: it may name only a rank of this job. */
    if (recv(fd, &h, sizeof(h), MSG_DONTWAIT) == (ssize_t)sizeof(h) &&
        tcp_hdr_decode(&h, sizeof(h), w->size, &h, why, sizeof(why)) > 0 &&
        h.type == TCP_MSG_ABORT)
        tcp_abort_notice(w, h.tag, p->world_rank);
}

/* One socket per pair carries both directions, so each side's
 * acknowledgements ride on its data instead of costing a packet per
 * message. The lower rank's connection is the pair's: it sends at once,
 * and the higher rank drops its own pending one (see watch_out). A higher
 * rank's connection is adopted unless ours exists, and the answer byte
 * tells it which. */
static void pair_accept(tcp_world_t *w, tcp_peer_t *p, int fd)
{
    int adopt = may_adopt(w, p);
    if (p->world_rank > w->rank) {
        char v = (char)adopt;
        if (!adopt)
            refused_notice(w, p, fd);
        if (send(fd, &v, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 || !adopt ||
            peer_watch_in(w, p, fd) != 0) {
            close(fd);
            return;
        }
        adopt_out(w, p, fd);
    } else {
        if (p->in_fd >= 0 || peer_watch_in(w, p, fd) != 0) {
            close(fd);
            return;
        }
        if (adopt) {
            if (p->out_wait) { /* ours has sent nothing yet */
                tcp_peer_close_out(p);
                p->out_wait = 0;
            }
            adopt_out(w, p, fd);
        }
    }
    tcp_peer_readable(w, p);
}

/* A connection that does not prove it belongs to this job (the cookie
 * every rank read from the store) is dropped before it can speak for a
 * rank: a stranger cannot take a rank's place or forge its notices. The
 * first is reported; later ones only counted. */
static void handshake_done(tcp_world_t *w, tcp_pending_t *pd)
{
    int r = -1, fd = pd->fd;
    char why[96] = "";
    int ok = tcp_handshake_check(pd->buf, pd->got, w->size, w->rank, w->cookie,
                                 &r, why, sizeof(why)) > 0;
    pd->fd = -1;
    pending_free(w, pd);
    if (ok) {
        pair_accept(w, &w->peers[r], fd);
        return;
    }
    if (w->strangers++ == 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char host[64] = "?", port[16] = "?";
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
            getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port,
                        sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
        fprintf(stderr,
                "herd tcp: rank %d: dropped a connection from %s:%s (%s): "
                "not a rank of this job\n",
                w->rank, host, port, why);
    }
    close(fd);
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    tcp_world_t *w = arg;
    (void)what;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        set_sockopts(fd);
        tcp_pending_t *pd = calloc(1, sizeof(*pd));
        if (!pd) {
            close(fd);
            continue;
        }
        /* Connections that never finish their handshake are bounded:
         * the oldest gives way (a peer's is settled at once). */
        if (w->npending >= TCP_MAX_PENDING(w)) {
            tcp_pending_t *old = w->pending;
            while (old->next)
                old = old->next;
            close(old->fd);
            pending_free(w, old);
        }
        pd->fd = fd;
        pd->w = w;
        int ms = core_env_int("HERD_TCP_HANDSHAKE_MS", TCP_HANDSHAKE_MS);
        pd->deadline_ns = mono_ns() + (uint64_t)(ms > 0 ? ms : 1) * 1000000ull;
        pd->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, pending_cb, pd);
        pd->next = w->pending;
        w->pending = pd;
        w->npending++;
        /* the timer wakes the check even when nothing more arrives */
        struct timeval tick = {.tv_sec = 0, .tv_usec = 250000};
        if (ms < 250)
            tick.tv_usec = (suseconds_t)ms * 1000;
        if (pd->ev)
            event_add(pd->ev, &tick);
        /* The handshake is usually there already: settle the pair now. */
        pending_cb(fd, EV_READ, pd);
    }
}

/* Listen on `host` (the address published to the others) only, not on
 * every interface: a loopback job is not reachable from the network. */
herd_status_t tcp_listen(tcp_world_t *w, const char *host, int *port_out,
                         char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(err, errlen, "cannot resolve the data address '%s': %s", host,
                 gai_strerror(gai));
        return HERD_ERR_INVALID_ARG;
    }
    struct sockaddr_in sa = *(struct sockaddr_in *)ai->ai_addr;
    freeaddrinfo(ai);
    sa.sin_port = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return HERD_ERR_IO;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    socklen_t sl = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(fd, 256) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        snprintf(err, errlen,
                 "cannot listen on %s: %s (HERD_TCP_ADDR must be an address "
                 "of this host)",
                 host, strerror(errno));
        close(fd);
        return HERD_ERR_IO;
    }
    w->listen_fd = fd;
    w->listen_ev = event_new(w->base, fd, EV_READ | EV_PERSIST, accept_cb, w);
    if (!w->listen_ev || event_add(w->listen_ev, NULL) != 0)
        return HERD_ERR_NO_MEMORY;
    *port_out = ntohs(sa.sin_port);
    return HERD_OK;
}

void tcp_peer_close_out(tcp_peer_t *p);

/* A broken outgoing socket is not yet a verdict: the peer may have
 * failed because another rank did, and its notice naming that rank may
 * still be on its way (on another socket). tcp_check_suspects() decides
 * after HERD_TCP_FAIL_GRACE_MS (default 100). */
void tcp_peer_suspect(tcp_world_t *w, tcp_peer_t *p, const char *why)
{
    (void)w;
    if (!p->suspect_ns) {
        p->suspect_ns = tcp_now_ns();
        snprintf(p->suspect_why, sizeof(p->suspect_why), "%s", why);
    }
    tcp_peer_close_out(p);
    p->out_fd = -2;
}

void tcp_check_suspects(tcp_world_t *w)
{
    int due = -1;
    for (int r = 0; r < w->size && due < 0; r++)
        if (w->peers[r].suspect_ns &&
            tcp_now_ns() - w->peers[r].suspect_ns > w->fail_grace_ns)
            due = r;
    if (due < 0 || w->fail_status != HERD_OK)
        return;
    /* This rank may have slept through the grace: read what arrived (a
     * notice may need an accept, a handshake and a read) first. */
    for (int i = 0; i < 4 && w->fail_status == HERD_OK; i++)
        tcp_progress(w, 0);
    if (w->fail_status == HERD_OK)
        tcp_world_fail(w, due, HERD_ERR_PEER_FAILED, w->peers[due].suspect_why);
}

/* The peer closed the socket we send on. Only queued sends fail here:
 * receives are decided by the incoming side, whose data and goodbye may
 * still be on their way. */
void tcp_peer_out_closed(tcp_world_t *w, tcp_peer_t *p)
{
    if (p->tx_head) {
        char why[128];
        snprintf(why, sizeof(why), "rank %d closed its connection",
                 p->world_rank);
        tcp_peer_suspect(w, p, why);
        return;
    }
    tcp_peer_close_out(p);
    p->out_fd = -2;
}

/* The answer to our connection (pair_accept): adopted, then the peer's
 * data follows on it; else the peer's own connection is on its way. */
static void verdict(tcp_world_t *w, tcp_peer_t *p, int fd, ssize_t n, char v)
{
    p->out_wait = 0;
    if (n == 1 && v == 1 && p->in_fd == -1) {
        event_free(p->out_rev);
        p->out_rev = NULL;
        if (peer_watch_in(w, p, fd) == 0) {
            peer_write(w, p);
            tcp_peer_readable(w, p);
            return;
        }
    }
    if (n == 1) {
        tcp_peer_close_out(p);
        p->out_fd = TCP_FD_AWAIT;
        return;
    }
    tcp_peer_out_closed(w, p);
}

/* Nothing else arrives on a send-only socket: readable means it closed. */
static void out_read_cb(evutil_socket_t fd, short what, void *arg)
{
    tcp_peer_t *p = arg;
    char c = 0;
    (void)what;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (p->out_wait)
        verdict(p->w, p, fd, n, c);
    else if (n <= 0)
        tcp_peer_out_closed(p->w, p);
}

static void out_write_cb(evutil_socket_t fd, short what, void *arg)
{
    tcp_peer_t *p = arg;
    (void)fd;
    (void)what;
    peer_write(p->w, p);
}

void tcp_peer_close_out(tcp_peer_t *p)
{
    if (p->out_rev)
        event_free(p->out_rev);
    if (p->out_wev)
        event_free(p->out_wev);
    p->out_rev = p->out_wev = NULL;
    if (p->out_fd >= 0 && p->out_fd != p->in_fd) /* else reading closes it */
        close(p->out_fd);
    p->out_fd = -1;
}

static int connect_once(const tcp_peer_t *p)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof(port), "%d", p->port);
    if (getaddrinfo(p->host, port, &hints, &ai) != 0 || !ai)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* A socket we connected. A lower rank's is the pair's (pair_accept) and
 * carries the peer's data too; a higher rank's waits for the answer byte
 * before it carries anything. */
static herd_status_t watch_out(tcp_world_t *w, tcp_peer_t *p, int fd)
{
    p->out_fd = fd;
    p->out_wev = event_new(w->base, fd, EV_WRITE | EV_PERSIST, out_write_cb, p);
    int ok = p->out_wev != NULL;
    if (ok && w->rank < p->world_rank && p->in_fd == -1) {
        ok = peer_watch_in(w, p, fd) == 0;
    } else if (ok) {
        p->out_wait = w->rank > p->world_rank;
        p->out_rev =
            event_new(w->base, fd, EV_READ | EV_PERSIST, out_read_cb, p);
        ok = p->out_rev && event_add(p->out_rev, NULL) == 0;
    }
    if (ok)
        return HERD_OK;
    p->out_wait = 0;
    tcp_peer_close_out(p);
    return HERD_ERR_NO_MEMORY;
}

/* Connect to the peer's listening socket and say who we are. Blocking:
 * the peer listens before it publishes its address, so this is quick. */
herd_status_t tcp_peer_connect(tcp_world_t *w, tcp_peer_t *p, int tries)
{
    if (p->out_fd == -2)
        return HERD_ERR_RANK_EXITED;
    int fd = -1;
    for (int t = 0; t < tries && fd < 0; t++) {
        fd = connect_once(p);
        if (fd < 0 && t + 1 < tries) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (fd < 0)
        return HERD_ERR_PEER_FAILED;
    tcp_handshake_t hs = {.magic = TCP_HANDSHAKE_MAGIC,
                          .rank = (uint32_t)w->rank};
    memcpy(hs.cookie, w->cookie, sizeof(hs.cookie));
    if (send(fd, &hs, sizeof(hs), MSG_NOSIGNAL) != (ssize_t)sizeof(hs)) {
        close(fd);
        return HERD_ERR_PEER_FAILED;
    }
    set_sockopts(fd);
    evutil_make_socket_nonblocking(fd);
    return watch_out(w, p, fd);
}

/* Mark the first `n` bytes written; returns the finished messages, in
 * order, unlinked from the queue. */
static tcp_tx_t *advance(tcp_peer_t *p, size_t n)
{
    tcp_tx_t *done_head = NULL, **done_tail = &done_head;
    while (p->tx_head) {
        tcp_tx_t *t = p->tx_head;
        size_t total = sizeof(tcp_hdr_t) + t->hdr.len;
        size_t left = total - t->sent;
        if (n < left) {
            t->sent += n;
            break;
        }
        n -= left;
        t->sent = total;
        p->tx_head = t->next;
        if (!p->tx_head)
            p->tx_tail = NULL;
        t->next = NULL;
        *done_tail = t;
        done_tail = &t->next;
        if (n == 0 && !p->tx_head)
            break;
    }
    return done_head;
}

static int build_iov(tcp_peer_t *p, struct iovec *iov)
{
    int k = 0;
    for (tcp_tx_t *t = p->tx_head; t && k + 2 <= TCP_IOV_MAX; t = t->next) {
        size_t off = t->sent;
        if (off < sizeof(tcp_hdr_t)) {
            iov[k].iov_base = (char *)&t->hdr + off;
            iov[k++].iov_len = sizeof(tcp_hdr_t) - off;
            off = 0;
        } else {
            off -= sizeof(tcp_hdr_t);
        }
        if (t->hdr.len > off) {
            iov[k].iov_base = (char *)t->data + off;
            iov[k++].iov_len = t->hdr.len - off;
        }
    }
    return k;
}

static void finish_txs(tcp_world_t *w, tcp_tx_t *t)
{
    while (t) {
        tcp_tx_t *next = t->next;
        if (t->op)
            tcp_op_step_done(t->op, t->step);
        else
            free(t);
        t = next;
    }
}

static void peer_write(tcp_world_t *w, tcp_peer_t *p)
{
    struct iovec iov[TCP_IOV_MAX];
    if (p->writing)
        return; /* a completion inside the loop below queued more */
    p->writing = 1;
    while (p->tx_head && p->out_fd >= 0 && !p->out_wait) {
        int k = build_iov(p, iov);
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t n = sendmsg(p->out_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            event_add(p->out_wev, NULL);
            p->writing = 0;
            return;
        }
        if (n < 0) {
            char why[160];
            snprintf(why, sizeof(why), "connection to rank %d lost (%s)",
                     p->world_rank, strerror(errno));
            p->writing = 0;
            tcp_peer_suspect(w, p, why);
            return;
        }
        finish_txs(w, advance(p, (size_t)n));
    }
    if (p->out_wev)
        event_del(p->out_wev);
    p->writing = 0;
}

void tcp_tx_enqueue(tcp_world_t *w, tcp_peer_t *p, tcp_tx_t *tx)
{
    tx->next = NULL;
    tx->sent = 0;
    if (p->tx_tail)
        p->tx_tail->next = tx;
    else
        p->tx_head = tx;
    p->tx_tail = tx;
    peer_write(w, p);
}

/* An abort notice on a connection still waiting for the peer's answer
 * goes out at once, ahead of what is queued there: the peer may be away
 * from herd until after this rank has exited, and then only what is in
 * its kernel buffers reaches it. It reads the notice whichever socket the
 * pair keeps (refused_notice); the queued copy arrives as a repeat. */
static void notice_now(tcp_world_t *w, tcp_peer_t *p, const tcp_hdr_t *h)
{
    ssize_t n = send(p->out_fd, h, sizeof(*h), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0 && n < (ssize_t)sizeof(*h)) { /* the stream is cut: drop it */
        p->out_wait = 0;
        tcp_peer_suspect(w, p, "abort notice written in part");
    }
}

/* A header-only message (goodbye, abort notice); best effort. One to a
 * peer whose connection is on its way (TCP_FD_AWAIT) waits for it. */
void tcp_send_control(tcp_world_t *w, tcp_peer_t *p, int type, int tag)
{
    if (p->out_fd == -1 && type == TCP_MSG_ABORT &&
        p->state == TCP_PEER_ALIVE && !p->suspect_ns)
        tcp_peer_connect(w, p, 1); /* the notice must reach everyone */
    if (p->out_fd < 0 && p->out_fd != TCP_FD_AWAIT)
        return;
    tcp_tx_t *tx = calloc(1, sizeof(*tx));
    if (!tx)
        return;
    tx->hdr.magic = TCP_MAGIC;
    tx->hdr.type = (uint16_t)type;
    tx->hdr.tag = tag;
    tcp_tx_enqueue(w, p, tx);
    if (type == TCP_MSG_ABORT && p->out_wait && p->out_fd >= 0)
        notice_now(w, p, &tx->hdr);
}

/* Drop an op's queued messages. One already partly written keeps going
 * (the stream must stay framed) from a private copy of its rest. */
void tcp_link_cancel_op(tcp_world_t *w, tcp_op_t *op)
{
    for (int r = 0; r < w->size; r++) {
        tcp_peer_t *p = &w->peers[r];
        tcp_tx_t **pp = &p->tx_head, *last = NULL;
        while (*pp) {
            tcp_tx_t *t = *pp;
            if (t->op != op) {
                last = t;
                pp = &t->next;
                continue;
            }
            if (t->sent == 0) {
                *pp = t->next;
                continue;
            }
            tcp_tx_t *c = malloc(sizeof(*c) + t->hdr.len);
            if (!c) { /* cannot keep framing: give the link up */
                p->tx_head = p->tx_tail = NULL;
                tcp_peer_close_out(p);
                return;
            }
            *c = *t;
            c->op = NULL;
            if (t->hdr.len)
                memcpy(c + 1, t->data, t->hdr.len);
            c->data = (const char *)(c + 1);
            *pp = c;
            last = c;
            pp = &c->next;
        }
        p->tx_tail = last;
    }
}

/* Wait (driving the loop) until every queue is written, or timeout. */
herd_status_t tcp_flush_all(tcp_world_t *w, double timeout_s)
{
    uint64_t end = tcp_now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        int busy = 0;
        for (int r = 0; r < w->size; r++)
            busy |= w->peers[r].tx_head != NULL && w->peers[r].out_fd >= 0;
        if (!busy)
            return HERD_OK;
        if (tcp_now_ns() > end)
            return HERD_ERR_TIMEOUT;
        tcp_progress(w, 1000);
    }
}

void tcp_link_close_all(tcp_world_t *w, int send_bye)
{
    if (send_bye) {
        for (int r = 0; r < w->size; r++)
            tcp_send_control(w, &w->peers[r], TCP_MSG_BYE, 0);
        tcp_flush_all(w, 2.0);
    }
    for (int r = 0; r < w->size; r++) {
        tcp_peer_t *p = &w->peers[r];
        tcp_peer_close_out(p);
        while (p->tx_head) {
            tcp_tx_t *t = p->tx_head;
            p->tx_head = t->next;
            if (!t->op)
                free(t);
        }
        p->tx_tail = NULL;
        if (p->in_ev)
            event_free(p->in_ev);
        p->in_ev = NULL;
        if (p->in_fd >= 0)
            close(p->in_fd);
        p->in_fd = -1;
    }
    while (w->pending) {
        close(w->pending->fd);
        pending_free(w, w->pending);
    }
}
