/* real/store/server_req.c - the store server's requests: each decoded
 * frame (proto.c: store_frame_decode) applied to the table and answered.
 *
 * get and wait on missing keys park a waiter on the server; it is
 * answered when a set, add or compare_set makes its keys exist, or with
 * HERD_ERR_TIMEOUT by its own timer, so nothing polls. Requests are
 * answered in arrival order per connection: a parked connection reads no
 * further frame until its waiter is answered. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "real/store/server_int.h"
#include "real/store/tcps_proto.h"

struct srv_waiter {
    srv_conn_t *conn;
    uint8_t op; /* STORE_OP_GET or STORE_OP_WAIT */
    int nkeys;
    char **keys;
    size_t *klens;
    struct event *timer;
    srv_waiter_t *prev, *next;
};

void srv_waiter_free(srv_waiter_t *w)
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

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Frame header and status; `extra` payload bytes follow from the caller. */
static void reply_head(srv_conn_t *c, herd_status_t st, size_t extra)
{
    uint8_t h[8];
    put_le(h, 4 + extra, 4);
    put_le(h + 4, (uint32_t)(int32_t)st, 4);
    bufferevent_write(c->bev, h, sizeof(h));
}

static void reply_status(srv_conn_t *c, herd_status_t st)
{
    reply_head(c, st, 0);
}

static void reply_i64(srv_conn_t *c, herd_status_t st, int64_t v)
{
    uint8_t b[8];
    put_le(b, (uint64_t)v, 8);
    reply_head(c, st, 8);
    bufferevent_write(c->bev, b, 8);
}

static void reply_bytes(srv_conn_t *c, herd_status_t st, const void *p,
                        size_t n)
{
    uint8_t b[8];
    put_le(b, n, 8);
    reply_head(c, st, 8 + n);
    bufferevent_write(c->bev, b, 8);
    if (n)
        bufferevent_write(c->bev, p, n);
}

int srv_keys_exist(const store_server_t *srv, int n, const void *const *keys,
                   const size_t *klens)
{
    for (int i = 0; i < n; i++)
        if (!store_map_get(srv->map, keys[i], klens[i]))
            return 0;
    return 1;
}

static void waiter_answer(srv_waiter_t *w, herd_status_t st)
{
    srv_conn_t *c = w->conn;
    if (c->proto == SRV_PROTO_TCPS || c->proto == SRV_PROTO_TCPS1) {
        uint8_t b = TCPS_STOP_WAITING; /* TCPStore waits have no timer */
        bufferevent_write(c->bev, &b, 1);
    } else if (st == HERD_OK && w->op == STORE_OP_GET) {
        store_entry_t *e = store_map_get(c->srv->map, w->keys[0], w->klens[0]);
        reply_bytes(c, st, e->val, e->vlen);
    } else {
        reply_status(c, st);
    }
    srv_waiter_free(w);
    srv_conn_resume(c);
}

void srv_wake(store_server_t *srv)
{
    srv_waiter_t *w = srv->waiters;
    while (w) {
        srv_waiter_t *next = w->next;
        if (srv_keys_exist(srv, w->nkeys, (const void *const *)w->keys,
                           w->klens))
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

herd_status_t srv_waiter_park(srv_conn_t *c, uint8_t op, int n,
                              const uint8_t *const *keys, const size_t *klens,
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
    srv_waiter_free(w);
    return HERD_ERR_NO_MEMORY;
}

static int op_get(srv_conn_t *c, const store_req_t *q)
{
    store_entry_t *e = store_map_get(c->srv->map, q->key, q->klen);
    if (e) {
        reply_bytes(c, HERD_OK, e->val, e->vlen);
        return FRAME_NEXT;
    }
    if (srv_waiter_park(c, STORE_OP_GET, 1, &q->key, &q->klen, q->num) !=
        HERD_OK)
        reply_status(c, HERD_ERR_NO_MEMORY);
    return FRAME_NEXT;
}

static int op_keys(srv_conn_t *c, const store_req_t *q)
{
    int n = (int)q->nkeys;
    const uint8_t **keys = calloc((size_t)n, sizeof(*keys));
    size_t *klens = calloc((size_t)n, sizeof(*klens));
    if (!keys || !klens) {
        free(keys);
        free(klens);
        return srv_conn_fail(c, "out of memory");
    }
    store_req_keys(q, keys, klens);
    int all = srv_keys_exist(c->srv, n, (const void *const *)keys, klens);
    if (q->op == STORE_OP_CHECK)
        reply_i64(c, HERD_OK, all);
    else if (all)
        reply_status(c, HERD_OK);
    else if (srv_waiter_park(c, q->op, n, keys, klens, q->num) != HERD_OK)
        reply_status(c, HERD_ERR_NO_MEMORY);
    free(keys);
    free(klens);
    return FRAME_NEXT;
}

static int op_cas(srv_conn_t *c, const store_req_t *q)
{
    const void *cur = NULL;
    size_t curl = 0;
    herd_status_t st = store_map_cas(c->srv->map, q->key, q->klen, q->val,
                                     q->vlen, q->val2, q->vlen2, &cur, &curl);
    reply_bytes(c, st, st == HERD_OK ? cur : "", st == HERD_OK ? curl : 0);
    srv_wake(c->srv);
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

static int op_auth(srv_conn_t *c, const store_req_t *q)
{
    const char *want = c->srv->token;
    if (want && !store_token_equal(q->val, q->vlen, want))
        return conn_refuse(c, HERD_ERR_AUTH, "wrong token");
    c->authed = 1;
    /* From now on a whole frame may be buffered. */
    bufferevent_setwatermark(c->bev, EV_READ, 0, 4 + (size_t)STORE_MAX_FRAME);
    reply_status(c, HERD_OK);
    return FRAME_NEXT;
}

int srv_handle(srv_conn_t *c, const store_req_t *q)
{
    store_server_t *srv = c->srv;
    int64_t v = 0;
    herd_status_t st;
    if (!c->authed && q->op != STORE_OP_AUTH)
        return conn_refuse(c, HERD_ERR_AUTH, "request before authentication");
    switch (q->op) {
    case STORE_OP_AUTH:
        return op_auth(c, q);
    case STORE_OP_SET:
        reply_status(c,
                     store_map_put(srv->map, q->key, q->klen, q->val, q->vlen));
        srv_wake(srv);
        return FRAME_NEXT;
    case STORE_OP_GET:
        return op_get(c, q);
    case STORE_OP_ADD:
        st = store_map_add(srv->map, q->key, q->klen, q->num, &v);
        reply_i64(c, st, v);
        srv_wake(srv);
        return FRAME_NEXT;
    case STORE_OP_CAS:
        return op_cas(c, q);
    case STORE_OP_WAIT:
    case STORE_OP_CHECK:
        return op_keys(c, q);
    case STORE_OP_DELETE:
        reply_i64(c, HERD_OK, store_map_del(srv->map, q->key, q->klen));
        return FRAME_NEXT;
    default:
        reply_i64(c, HERD_OK, (int64_t)store_map_count(srv->map));
        return FRAME_NEXT;
    }
}
