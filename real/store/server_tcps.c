/* real/store/server_tcps.c - the store server's TCPStore side: a torch
 * process (torch.distributed.TCPStore, is_master=False, torch 1.x or
 * >= 2) can use herd's store, beside herd's own clients on the same port.
 *
 * A connection whose first five bytes are TCPStore's hello (VALIDATE and
 * its magic) speaks torch >= 2's TCPStore from then on; one that opens
 * like a torch 1.x command (looks_v1) speaks 1.x's numbering; any other
 * opening is herd's.
 * Commands are decoded by tcps_decode (tcps_proto.c) and applied to the
 * same table with the same semantics as herd's requests (store_map_*),
 * so a torch process and a herd process meet on one store. The limits
 * are herd's: a command over them closes the connection with a logged
 * reason, a stalled one is closed by the slow-loris timer. Stores with a
 * token refuse TCPStore clients, which have no way to present one. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "real/store/server_int.h"
#include "real/store/tcps_proto.h"

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void send_u(srv_conn_t *c, uint64_t v, int n)
{
    uint8_t b[8];
    put_le(b, v, n);
    bufferevent_write(c->bev, b, (size_t)n);
}

static void send_str(srv_conn_t *c, const void *p, size_t n)
{
    send_u(c, n, 8);
    if (n)
        bufferevent_write(c->bev, p, n);
}

/* A herd frame opens with its uint32 length and an op (1..9): its fifth
 * byte is never 0. A torch 1.x command opens with its op (0..8) and a
 * uint64 length or count, whose fourth byte (the stream's fifth) is 0
 * for anything within herd's limits. So five bytes tell all three
 * apart (four zero bytes are herd's empty frame, refused as such). */
static int looks_v1(const uint8_t *h, size_t n)
{
    if (h[0] > TCPS_V1_WATCH_KEY + 1)
        return 0;
    if (n >= 4 && !h[0] && !h[1] && !h[2] && !h[3])
        return 0;
    return n < TCPS_HELLO_LEN ? -1 : h[4] == 0;
}

int srv_detect(srv_conn_t *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    uint8_t h[TCPS_HELLO_LEN];
    size_t avail = evbuffer_get_length(in);
    size_t n = avail < TCPS_HELLO_LEN ? avail : TCPS_HELLO_LEN;
    if (n == 0)
        return FRAME_STOP;
    evbuffer_copyout(in, h, n);
    int hello = memcmp(h, tcps_hello, n) == 0;
    int v1 = hello ? 0 : looks_v1(h, n);
    if (!hello && v1 == 0) {
        c->proto = SRV_PROTO_HERD;
        return FRAME_NEXT;
    }
    if (n < TCPS_HELLO_LEN) { /* too few to tell: the stall timer runs */
        if (!c->partial)
            c->t_frame = srv_now_s();
        c->partial = 1;
        c->need = TCPS_HELLO_LEN;
        return FRAME_STOP;
    }
    c->partial = 0;
    if (c->srv->token)
        return srv_conn_fail(c, "a TCPStore (torch) client on a store with "
                                "a token: torch cannot present one");
    if (hello)
        evbuffer_drain(in, TCPS_HELLO_LEN);
    c->proto = hello ? SRV_PROTO_TCPS : SRV_PROTO_TCPS1;
    return FRAME_NEXT;
}

/* The n keys of a decoded list, as arrays for the waiter and the table. */
static int list_keys(const tcps_req_t *q, int pairs, const uint8_t ***keys,
                     size_t **klens)
{
    size_t n = q->n ? (size_t)q->n : 1;
    *keys = calloc(n, sizeof(**keys));
    *klens = calloc(n, sizeof(**klens));
    if (!*keys || !*klens) {
        free(*keys);
        free(*klens);
        return -1;
    }
    const uint8_t *p = q->list;
    size_t left = q->list_len, vlen = 0;
    for (uint64_t i = 0; i < q->n; i++) {
        (*keys)[i] = tcps_list_next(&p, &left, &(*klens)[i]);
        if (pairs)
            tcps_list_next(&p, &left, &vlen);
    }
    return 0;
}

static int op_list(srv_conn_t *c, const tcps_req_t *q)
{
    store_server_t *srv = c->srv;
    const uint8_t **keys = NULL;
    size_t *klens = NULL;
    if (list_keys(q, 0, &keys, &klens) != 0)
        return srv_conn_fail(c, "out of memory");
    int n = (int)q->n, rc = FRAME_NEXT;
    int all = srv_keys_exist(srv, n, (const void *const *)keys, klens);
    if (q->op == TCPS_CHECK) {
        send_u(c, all ? TCPS_READY : TCPS_NOT_READY, 1);
    } else if (q->op == TCPS_MULTI_GET) {
        /* torch waits for the keys first; missing ones read as empty */
        for (int i = 0; i < n; i++) {
            store_entry_t *e = store_map_get(srv->map, keys[i], klens[i]);
            send_str(c, e ? e->val : "", e ? e->vlen : 0);
        }
    } else if (all) {
        send_u(c, TCPS_STOP_WAITING, 1);
    } else if (srv_waiter_park(c, STORE_OP_WAIT, n, keys, klens, 0) !=
               HERD_OK) {
        rc = srv_conn_fail(c, "out of memory for a wait");
    }
    free(keys);
    free(klens);
    return rc;
}

static int op_multi_set(srv_conn_t *c, const tcps_req_t *q)
{
    const uint8_t *p = q->list;
    size_t left = q->list_len;
    for (uint64_t i = 0; i < q->n; i++) {
        size_t klen = 0, vlen = 0;
        const uint8_t *k = tcps_list_next(&p, &left, &klen);
        const uint8_t *v = tcps_list_next(&p, &left, &vlen);
        if (store_map_put(c->srv->map, k, klen, v, vlen) != HERD_OK)
            return srv_conn_fail(c, "out of memory for multi_set");
    }
    srv_wake(c->srv);
    return FRAME_NEXT;
}

/* append: the value's bytes added at the end of the key's. */
static herd_status_t map_append(store_map_t *m, const tcps_req_t *q)
{
    store_entry_t *e = store_map_get(m, q->key, q->klen);
    if (!e)
        return store_map_put(m, q->key, q->klen, q->val, q->vlen);
    if (e->vlen + q->vlen > STORE_MAX_VALUE)
        return HERD_ERR_INVALID_ARG;
    uint8_t *joined = malloc(e->vlen + q->vlen + 1);
    if (!joined)
        return HERD_ERR_NO_MEMORY;
    memcpy(joined, e->val, e->vlen);
    memcpy(joined + e->vlen, q->val, q->vlen);
    herd_status_t st =
        store_map_put(m, q->key, q->klen, joined, e->vlen + q->vlen);
    free(joined);
    return st;
}

static int tcps_handle(srv_conn_t *c, const tcps_req_t *q)
{
    store_server_t *srv = c->srv;
    store_entry_t *e;
    int64_t v = 0;
    herd_status_t st = HERD_OK;
    const void *cur = NULL;
    size_t curl = 0;
    switch (q->op) {
    case TCPS_VALIDATE: /* a second hello is harmless if it is right */
        if ((uint32_t)q->num != 0x3C85F7CEu)
            return srv_conn_fail(c, "TCPStore validation with a wrong magic");
        break;
    case TCPS_PING: /* from a 1.x stream: herd's client upgrading it */
        send_u(c, (uint32_t)q->num, 4);
        c->proto = SRV_PROTO_TCPS;
        break;
    case TCPS_SET:
        st = store_map_put(srv->map, q->key, q->klen, q->val, q->vlen);
        break;
    case TCPS_APPEND:
        st = map_append(srv->map, q);
        break;
    case TCPS_COMPARE_SET:
        st = store_map_cas(srv->map, q->key, q->klen, q->val, q->vlen, q->val2,
                           q->vlen2, &cur, &curl);
        if (st == HERD_OK)
            send_str(c, cur, curl);
        break;
    case TCPS_GET:
        e = store_map_get(srv->map, q->key, q->klen);
        send_str(c, e ? e->val : "", e ? e->vlen : 0);
        break;
    case TCPS_ADD:
        st = store_map_add(srv->map, q->key, q->klen, q->num, &v);
        if (st == HERD_OK)
            send_u(c, (uint64_t)v, 8);
        break;
    case TCPS_GETNUMKEYS:
        send_u(c, store_map_count(srv->map), 8);
        break;
    case TCPS_DELETE_KEY:
        send_u(c, (uint64_t)store_map_del(srv->map, q->key, q->klen), 8);
        break;
    case TCPS_CHECK:
    case TCPS_WAIT:
    case TCPS_MULTI_GET:
        return op_list(c, q);
    case TCPS_MULTI_SET:
        return op_multi_set(c, q);
    default: /* CANCEL_WAIT with nothing parked */
        send_u(c, TCPS_WAIT_CANCELED, 1);
        break;
    }
    if (st != HERD_OK) /* TCPStore has no error replies */
        return srv_conn_fail(c, "TCPStore %s of key '%.*s': %s",
                             tcps_op_name(q->op),
                             (int)(q->klen > 64 ? 64 : q->klen),
                             (const char *)q->key, herd_status_string(st));
    if (q->op == TCPS_SET || q->op == TCPS_APPEND || q->op == TCPS_ADD ||
        q->op == TCPS_COMPARE_SET)
        srv_wake(srv);
    return FRAME_NEXT;
}

int srv_tcps_frames(srv_conn_t *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    char why[160];
    while (!c->closing) {
        size_t avail = evbuffer_get_length(in), used = 0, need = 0;
        if (avail == 0) {
            c->partial = 0;
            return FRAME_NEXT;
        }
        if (c->waiter && c->proto == SRV_PROTO_TCPS1) {
            /* torch 1.x has no cancel: a client that sends more has
             * given its wait up (its timeout passed) */
            srv_waiter_free(c->waiter);
        } else if (c->waiter) {
            /* parked: only a cancel is read, as torch sends on timeout */
            uint8_t op = 0;
            evbuffer_copyout(in, &op, 1);
            if (op != TCPS_CANCEL_WAIT)
                return FRAME_NEXT;
            srv_waiter_free(c->waiter);
            send_u(c, TCPS_WAIT_CANCELED, 1);
            evbuffer_drain(in, 1);
            continue;
        }
        /* A command's size is known once its length fields are in: no
         * pullup (a copy of everything buffered) until it can all be
         * there, so a large value arriving in pieces is copied once. */
        if (c->partial && avail < c->need)
            return FRAME_NEXT;
        const uint8_t *p = evbuffer_pullup(in, -1);
        tcps_req_t q;
        if (!p)
            return srv_conn_fail(c, "out of memory for a %zu-byte command",
                                 avail);
        store_frame_result_t fr =
            c->proto == SRV_PROTO_TCPS1
                ? tcps_decode_v1(p, avail, &q, &used, &need, why, sizeof(why))
                : tcps_decode(p, avail, &q, &used, &need, why, sizeof(why));
        if (fr == STORE_FRAME_BAD)
            return srv_conn_fail(c, "%s", why);
        if (fr == STORE_FRAME_PARTIAL) {
            if (!c->partial)
                c->t_frame = srv_now_s();
            c->partial = 1;
            c->need = need;
            return FRAME_NEXT;
        }
        c->partial = 0;
        c->need = 0;
        if (tcps_handle(c, &q) == FRAME_FREED)
            return FRAME_FREED;
        evbuffer_drain(in, used);
    }
    return FRAME_NEXT;
}
