/* real/tcp/recv.c - the receiving side of the tcp engine: reading headers,
 * matching each message to the first posted receive with its key (FIFO per
 * peer), and reading its payload straight into the destination (RECV),
 * through a small bounce buffer that is reduced into the destination as it
 * fills (RECV_REDUCE: the reduction overlaps the transfer), or into a
 * staging buffer when the step is not ready or nothing was posted yet. */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "real/tcp/tcp.h"

#define POOL_SLOTS ((int)(sizeof(((tcp_world_t *)0)->pool) / sizeof(char *)))

/* Staging buffers are reused: fresh multi-MiB mallocs are fresh mmaps,
 * and their page faults would cost more than the copy they hold. */
char *tcp_buf_get(tcp_world_t *w, size_t len)
{
    int best = -1;
    for (int i = 0; i < POOL_SLOTS; i++)
        if (w->pool[i] && w->pool_len[i] >= len &&
            (best < 0 || w->pool_len[i] < w->pool_len[best]))
            best = i;
    if (best >= 0) {
        char *b = w->pool[best];
        w->pool[best] = NULL;
        return b;
    }
    return malloc(len ? len : 1);
}

void tcp_buf_put(tcp_world_t *w, char *buf, size_t len)
{
    if (!buf)
        return;
    for (int i = 0; i < POOL_SLOTS; i++)
        if (!w->pool[i]) {
            w->pool[i] = buf;
            w->pool_len[i] = len;
            return;
        }
    int small = 0;
    for (int i = 1; i < POOL_SLOTS; i++)
        if (w->pool_len[i] < w->pool_len[small])
            small = i;
    if (w->pool_len[small] < len) {
        free(w->pool[small]);
        w->pool[small] = buf;
        w->pool_len[small] = len;
        return;
    }
    free(buf);
}

void tcp_msg_free(tcp_world_t *w, tcp_msg_t *m)
{
    if (!m)
        return;
    tcp_buf_put(w, m->data, m->len);
    free(m);
}

static int key_eq(const tcp_key_t *a, const tcp_key_t *b)
{
    return a->type == b->type && a->channel == b->channel &&
           a->group == b->group && a->tag == b->tag && a->seq == b->seq;
}

static tcp_msg_t *take_unexpected(tcp_peer_t *p, const tcp_key_t *k)
{
    tcp_msg_t *prev = NULL;
    for (tcp_msg_t *m = p->unexp_head; m; prev = m, m = m->next) {
        if (!key_eq(&m->key, k))
            continue;
        if (prev)
            prev->next = m->next;
        else
            p->unexp_head = m->next;
        if (p->unexp_tail == m)
            p->unexp_tail = prev;
        m->next = NULL;
        return m;
    }
    return NULL;
}

void tcp_rx_post(tcp_world_t *w, tcp_peer_t *p, tcp_rx_t *rx)
{
    (void)w;
    tcp_msg_t *m = take_unexpected(p, &rx->key);
    if (m) {
        m->owner = rx->op;
        m->step = rx->step;
        rx->op->staged[rx->step] = m;
        if (m->got == m->len)
            tcp_op_recv_arrived(rx->op, rx->step);
        return;
    }
    rx->next = NULL;
    rx->prev = p->posted_tail;
    if (p->posted_tail)
        p->posted_tail->next = rx;
    else
        p->posted_head = rx;
    p->posted_tail = rx;
}

void tcp_rx_unpost(tcp_peer_t *p, tcp_rx_t *rx)
{
    if (rx->prev)
        rx->prev->next = rx->next;
    else if (p->posted_head == rx)
        p->posted_head = rx->next;
    else
        return; /* not posted */
    if (rx->next)
        rx->next->prev = rx->prev;
    else
        p->posted_tail = rx->prev;
    rx->next = rx->prev = NULL;
}

static tcp_rx_t *match_posted(tcp_peer_t *p, const tcp_key_t *k)
{
    for (tcp_rx_t *rx = p->posted_head; rx; rx = rx->next)
        if (key_eq(&rx->key, k)) {
            tcp_rx_unpost(p, rx);
            return rx;
        }
    return NULL;
}

static void peer_lost(tcp_world_t *w, tcp_peer_t *p, const char *how)
{
    char why[192];
    int busy = p->posted_head != NULL || p->rx.mode != TCP_RX_HEADER ||
               p->rx.hdr_got > 0;
    if (p->state == TCP_PEER_BYE && !busy) {
        snprintf(why, sizeof(why), "rank %d has exited", p->world_rank);
    } else {
        p->state = TCP_PEER_DEAD;
        snprintf(why, sizeof(why), "rank %d failed: %s", p->world_rank, how);
        tcp_world_fail(w, p->world_rank, HERD_ERR_PEER_FAILED, why);
    }
    if (p->out_fd >= 0 && p->out_fd == p->in_fd)
        tcp_peer_out_closed(w, p); /* the socket we send on, too */
    if (p->in_ev)
        event_free(p->in_ev);
    p->in_ev = NULL;
    close(p->in_fd);
    p->in_fd = -2;
}

/* Goodbye or abort notice: header only. */
static void control_message(tcp_world_t *w, tcp_peer_t *p)
{
    tcp_hdr_t *h = &p->rx.hdr;
    p->rx.hdr_got = 0;
    if (h->type == TCP_MSG_BYE) {
        p->state = TCP_PEER_BYE;
        return;
    }
    tcp_abort_notice(w, h->tag, p->world_rank);
}

void tcp_abort_notice(tcp_world_t *w, int failed, int reporter)
{
    char why[160];
    snprintf(why, sizeof(why), "rank %d failed (reported by rank %d)", failed,
             reporter);
    tcp_world_fail(w, failed, HERD_ERR_PEER_FAILED, why);
}

/* A header is complete: decide where its payload goes. */
static int start_message(tcp_world_t *w, tcp_peer_t *p)
{
    tcp_rxstate_t *s = &p->rx;
    tcp_hdr_t *h = &s->hdr;
    char why[96];
    if (tcp_hdr_decode(h, sizeof(*h), w->size, h, why, sizeof(why)) < 0) {
        peer_lost(w, p, why);
        return -1;
    }
    if (h->type == TCP_MSG_BYE || h->type == TCP_MSG_ABORT) {
        control_message(w, p);
        return 0;
    }
    tcp_key_t k = {.type = h->type,
                   .channel = h->channel,
                   .group = h->group,
                   .tag = h->tag,
                   .seq = h->seq};
    s->len = h->len;
    s->got = 0;
    tcp_rx_t *rx = match_posted(p, &k);
    if (rx && tcp_op_rx_start(rx->op, rx->step, s)) {
        s->op = rx->op;
        s->step = rx->step;
        return 0;
    }
    tcp_msg_t *m = calloc(1, sizeof(*m));
    char *data = m ? tcp_buf_get(w, h->len) : NULL;
    if (!data) {
        free(m);
        peer_lost(w, p, "out of memory for a message");
        return -1;
    }
    m->key = k;
    m->data = data;
    m->len = h->len;
    s->mode = TCP_RX_STAGED;
    s->msg = m;
    if (rx) {
        m->owner = rx->op;
        m->step = rx->step;
        rx->op->staged[rx->step] = m;
        tcp_op_step_started(rx->op);
    } else {
        if (p->unexp_tail)
            p->unexp_tail->next = m;
        else
            p->unexp_head = m;
        p->unexp_tail = m;
    }
    return 0;
}

static void finish_message(tcp_world_t *w, tcp_peer_t *p)
{
    tcp_rxstate_t *s = &p->rx;
    tcp_rx_mode_t mode = s->mode;
    s->mode = TCP_RX_HEADER;
    s->hdr_got = 0;
    if (mode == TCP_RX_DIRECT || mode == TCP_RX_REDUCE) {
        tcp_op_t *op = s->op;
        s->op = NULL;
        tcp_op_step_done(op, s->step);
    } else if (mode == TCP_RX_STAGED) {
        tcp_msg_t *m = s->msg;
        s->msg = NULL;
        m->got = m->len;
        if (m->owner)
            tcp_op_recv_arrived(m->owner, m->step);
        else if (m->step == UINT32_MAX) /* orphaned by a cancelled op */
            tcp_msg_free(w, m);
    }
}

/* How much the read-ahead asks for: just the awaited message when a
 * receive is posted, so that a second one stays in the kernel until this
 * rank has sent its own next message, which then carries the
 * acknowledgement (reading two small segments at once makes the kernel
 * send an ACK packet of its own). Else as much as fits. */
static size_t pre_ask(const tcp_peer_t *p)
{
    const tcp_rxstate_t *s = &p->rx;
    const tcp_rx_t *rx = p->posted_head;
    if (s->mode != TCP_RX_HEADER || s->hdr_got || !rx)
        return TCP_PRE_BYTES;
    size_t n =
        sizeof(tcp_hdr_t) + rx->op->sched.steps[rx->step].count * rx->op->esize;
    return n < TCP_PRE_BYTES ? n : TCP_PRE_BYTES;
}

/* recv() through the read-ahead buffer: what it holds first; a large
 * read goes straight to `to`; a small one fills the read-ahead. Returns
 * bytes, 0 on EOF, -1 on error (errno), -2 when it would block. */
static ssize_t peer_recv(tcp_peer_t *p, char *to, size_t want)
{
    tcp_rxstate_t *s = &p->rx;
    if (s->pre_off == s->pre_len && want < TCP_PRE_BYTES) {
        if (s->drained) /* read just now: the rest waits for a poll */
            return -2;
        ssize_t n = recv(p->in_fd, s->pre, pre_ask(p), MSG_DONTWAIT);
        if (n <= 0)
            return n < 0 && (errno == EAGAIN || errno == EINTR) ? -2 : n;
        s->pre_off = 0;
        s->pre_len = (size_t)n;
        s->drained = n < (ssize_t)TCP_PRE_BYTES;
    }
    if (s->pre_off < s->pre_len) {
        size_t k = s->pre_len - s->pre_off;
        if (k > want)
            k = want;
        memcpy(to, s->pre + s->pre_off, k);
        s->pre_off += k;
        return (ssize_t)k;
    }
    ssize_t n = recv(p->in_fd, to, want, MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EINTR) ? -2 : n;
}

/* Read what the payload mode wants; returns bytes read, 0 on EOF, -1 on
 * error (errno), -2 when it would block. */
static ssize_t read_payload(tcp_peer_t *p)
{
    tcp_rxstate_t *s = &p->rx;
    size_t want = s->len - s->got;
    char *to;
    switch (s->mode) {
    case TCP_RX_DIRECT:
        to = s->dst + s->got;
        break;
    case TCP_RX_STAGED:
        to = s->msg->data + s->got;
        break;
    case TCP_RX_REDUCE:
        if (want > TCP_BOUNCE_BYTES - s->have)
            want = TCP_BOUNCE_BYTES - s->have;
        to = s->bounce + s->have;
        break;
    default:
        if (want > TCP_BOUNCE_BYTES)
            want = TCP_BOUNCE_BYTES;
        to = s->bounce;
        break;
    }
    ssize_t n = peer_recv(p, to, want);
    if (n > 0) {
        s->got += (size_t)n;
        if (s->mode == TCP_RX_REDUCE)
            tcp_op_rx_reduce(s, (size_t)n);
    }
    return n;
}

void tcp_peer_readable(tcp_world_t *w, tcp_peer_t *p)
{
    tcp_rxstate_t *s = &p->rx;
    /* Bounded, so one pass of the loop serves every socket in turn; but
     * the read-ahead is always emptied (epoll cannot see it). */
    /* The socket is level-triggered: after one read-ahead that did not
     * fill the buffer, what is left or arrives later is seen by the next
     * poll, so no recv() just to hear EAGAIN. */
    s->drained = 0;
    for (int rounds = 0; p->in_fd >= 0; rounds++) {
        if (rounds >= 64 && s->pre_off == s->pre_len)
            return;
        ssize_t n;
        if (s->mode == TCP_RX_HEADER) {
            n = peer_recv(p, (char *)&s->hdr + s->hdr_got,
                          sizeof(tcp_hdr_t) - s->hdr_got);
            if (n == -2)
                return;
            if (n > 0) {
                s->hdr_got += (size_t)n;
                if (s->hdr_got < sizeof(tcp_hdr_t))
                    continue;
                if (start_message(w, p) != 0)
                    return;
                if (s->mode != TCP_RX_HEADER && s->len == 0)
                    finish_message(w, p);
                continue;
            }
        } else {
            n = read_payload(p);
            if (n == -2)
                return;
            if (n > 0) {
                if (s->got == s->len)
                    finish_message(w, p);
                continue;
            }
        }
        peer_lost(w, p,
                  n == 0 ? "connection closed without goodbye"
                         : strerror(errno));
        return;
    }
}

/* A cancelled op leaves the link: the message being read for it is
 * finished into nowhere, or kept until complete and then dropped. */
void tcp_rx_cancel_op(tcp_world_t *w, tcp_op_t *op)
{
    for (int r = 0; r < w->size; r++) {
        tcp_rxstate_t *s = &w->peers[r].rx;
        if ((s->mode == TCP_RX_DIRECT || s->mode == TCP_RX_REDUCE) &&
            s->op == op) {
            s->mode = TCP_RX_DISCARD;
            s->op = NULL;
        }
        if (s->mode == TCP_RX_STAGED && s->msg && s->msg->owner == op) {
            s->msg->owner = NULL;
            s->msg->step = UINT32_MAX;
        }
    }
}
