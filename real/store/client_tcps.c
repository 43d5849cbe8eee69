/* real/store/client_tcps.c - the store client's TCPStore back end: the
 * same calls spoken in PyTorch's TCPStore protocol (tcps_proto.h), so a
 * herd program rendezvouses through a store that torchrun's agent (or
 * any torch TCPStore server, 1.x or >= 2, or herd's own) hosts. Which
 * one answers is found by store_tcps_probe, or told by the caller.
 *
 * Keys get "/" in front, as torch's own client does, so herd and torch
 * processes name the same keys alike. TCPStore replies carry no status:
 * a wait that outlives its timeout is cancelled (cancel_wait, whose
 * answer may follow a late stop-waiting byte), and a connection whose
 * reply did not come is marked broken, as herd's client does. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/store/map.h"
#include "real/store/store_int.h"
#include "real/store/tcps_proto.h"

/* Requests that never wait get at least this long (as herd's client). */
#define TCPS_MIN_REPLY_S 30.0

struct store_tcps {
    int fd;
    double timeout_s;
    int broken;
    int v1; /* torch 1.x's numbering, no cancel */
    store_wbuf_t w;
};

static double reply_s(const store_tcps_t *t)
{
    return t->timeout_s > TCPS_MIN_REPLY_S ? t->timeout_s : TCPS_MIN_REPLY_S;
}

static void begin(store_tcps_t *t, tcps_op_t op)
{
    t->w.len = 0;
    t->w.failed = 0;
    /* every command this client sends has a 1.x byte but cancel_wait,
     * which a 1.x client never sends */
    store_wbuf_u8(&t->w, (uint8_t)(t->v1 ? tcps_v1_code(op) : (int)op));
}

static void put_key(store_tcps_t *t, const char *key)
{
    store_wbuf_i64(&t->w, (int64_t)strlen(key) + 1);
    store_wbuf_raw(&t->w, "/", 1);
    store_wbuf_raw(&t->w, key, strlen(key));
}

static herd_status_t flush(store_tcps_t *t, double deadline)
{
    if (t->broken)
        return HERD_ERR_CLOSED;
    if (t->w.failed)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = store_io_send(t->fd, t->w.data, t->w.len, deadline);
    if (st != HERD_OK)
        t->broken = 1;
    return st;
}

static herd_status_t recv_u(store_tcps_t *t, int n, uint64_t *v,
                            double deadline)
{
    uint8_t b[8];
    herd_status_t st = store_io_recv(t->fd, b, (size_t)n, deadline);
    if (st != HERD_OK) {
        t->broken = 1;
        return st;
    }
    *v = 0;
    for (int i = 0; i < n; i++)
        *v |= (uint64_t)b[i] << (8 * i);
    return HERD_OK;
}

static herd_status_t recv_str(store_tcps_t *t, void **out, size_t *len,
                              double deadline)
{
    uint64_t n = 0;
    herd_status_t st = recv_u(t, 8, &n, deadline);
    if (st == HERD_OK && n > STORE_MAX_VALUE)
        st = HERD_ERR_PARSE;
    uint8_t *d = st == HERD_OK ? malloc((size_t)n + 1) : NULL;
    if (st == HERD_OK && !d)
        st = HERD_ERR_NO_MEMORY;
    if (st == HERD_OK)
        st = store_io_recv(t->fd, d, (size_t)n, deadline);
    if (st != HERD_OK) {
        free(d);
        t->broken = 1;
        return st;
    }
    d[n] = '\0';
    *out = d;
    *len = (size_t)n;
    return HERD_OK;
}

/* Send what is built and read one uint of n bytes back. */
static herd_status_t call_u(store_tcps_t *t, int n, uint64_t *v)
{
    double deadline = store_now_s() + reply_s(t);
    herd_status_t st = flush(t, deadline);
    return st == HERD_OK ? recv_u(t, n, v, deadline) : st;
}

static void put_ping(store_wbuf_t *w, uint32_t nonce)
{
    store_wbuf_u8(w, TCPS_PING);
    for (int i = 0; i < 4; i++)
        store_wbuf_u8(w, (uint8_t)(nonce >> (8 * i)));
}

/* What answers on a fresh connection, asked without harm to any:
 * torch 1.x's check of no keys (04 and a zero count), which a 1.x
 * server answers with READY and a torch >= 2 server refuses unvalidated
 * (closes, or ignores: the libuv server); a >= 2 hello instead would
 * make a 1.x server read a key of gigabytes. After READY, a ping: herd's
 * server echoes it and speaks >= 2's numbering from then on, torch
 * 1.x's closes the connection. */
int store_tcps_probe(int fd, double timeout_s)
{
    store_wbuf_t w;
    store_wbuf_init(&w);
    store_wbuf_u8(&w, 4);
    store_wbuf_i64(&w, 0);
    uint8_t b = 0xff;
    double deadline = store_now_s() + timeout_s;
    herd_status_t st = store_io_send(fd, w.data, w.len, deadline);
    if (st == HERD_OK)
        st = store_io_recv(fd, &b, 1, deadline);
    int kind = TCPS_PROBE_V2;
    if (st == HERD_OK && b == TCPS_READY) {
        uint32_t nonce = (uint32_t)store_now_s() ^ 0x1eedu;
        uint8_t e[4];
        w.len = 0;
        put_ping(&w, nonce);
        deadline = store_now_s() + timeout_s;
        st = store_io_send(fd, w.data, w.len, deadline);
        if (st == HERD_OK)
            st = store_io_recv(fd, e, 4, deadline);
        uint32_t echo = (uint32_t)e[0] | (uint32_t)e[1] << 8 |
                        (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
        kind = st == HERD_OK && echo == nonce ? TCPS_PROBE_HERD : TCPS_PROBE_V1;
    } else if (st == HERD_OK) {
        kind = TCPS_PROBE_NONE; /* an answer, but not TCPStore's */
    }
    store_wbuf_free(&w);
    return kind;
}

herd_status_t store_tcps_open(int fd, double timeout_s, int version,
                              store_tcps_t **out)
{
    store_tcps_t *t = calloc(1, sizeof(*t));
    if (!t) {
        close(fd);
        return HERD_ERR_NO_MEMORY;
    }
    t->fd = fd;
    t->timeout_s = timeout_s;
    t->v1 = version == 1;
    store_wbuf_init(&t->w);
    if (version != 2) { /* 1.x has no hello; herd's server was probed */
        *out = t;
        return HERD_OK;
    }
    /* the hello, then a ping: its echo proves a TCPStore server */
    store_wbuf_raw(&t->w, tcps_hello, TCPS_HELLO_LEN);
    uint32_t nonce = (uint32_t)store_now_s() ^ 0x5eedu;
    put_ping(&t->w, nonce);
    uint64_t echo = 0;
    herd_status_t st = call_u(t, 4, &echo);
    if (st == HERD_OK && echo != nonce)
        st = HERD_ERR_PARSE;
    if (st != HERD_OK) {
        store_tcps_close(t);
        return st;
    }
    *out = t;
    return HERD_OK;
}

void store_tcps_close(store_tcps_t *t)
{
    if (!t)
        return;
    close(t->fd);
    store_wbuf_free(&t->w);
    free(t);
}

herd_status_t store_tcps_set(store_tcps_t *t, const char *key, const void *val,
                             size_t len)
{
    begin(t, TCPS_SET);
    put_key(t, key);
    store_wbuf_bytes(&t->w, val, len);
    return flush(t, store_now_s() + reply_s(t));
}

/* Wait for keys until timeout_s; on timeout cancel the wait as torch does
 * (a stop-waiting byte that crossed the cancel is read first). */
herd_status_t store_tcps_wait(store_tcps_t *t, const char *const *keys, int n,
                              double timeout_s)
{
    begin(t, TCPS_WAIT);
    store_wbuf_i64(&t->w, n);
    for (int i = 0; i < n; i++)
        put_key(t, keys[i]);
    double deadline = store_now_s() + timeout_s;
    herd_status_t st = flush(t, deadline);
    uint8_t b = 0;
    uint64_t r = 0;
    if (st == HERD_OK) {
        st = store_io_recv(t->fd, &b, 1, deadline);
        if (st == HERD_OK)
            return b == TCPS_STOP_WAITING ? HERD_OK : HERD_ERR_PARSE;
    }
    if (st != HERD_ERR_TIMEOUT || t->broken || t->v1) {
        /* torch 1.x cannot cancel: the stream is out of step now, as
         * for torch 1.x's own client */
        t->broken = 1;
        return st;
    }
    begin(t, TCPS_CANCEL_WAIT);
    st = call_u(t, 1, &r);
    if (st == HERD_OK && r == TCPS_STOP_WAITING)
        st = recv_u(t, 1, &r, store_now_s() + reply_s(t));
    if (st == HERD_OK && r != TCPS_WAIT_CANCELED)
        st = HERD_ERR_PARSE;
    if (st != HERD_OK)
        t->broken = 1;
    return st == HERD_OK ? HERD_ERR_TIMEOUT : st;
}

herd_status_t store_tcps_get(store_tcps_t *t, const char *key, double timeout_s,
                             void **val_out, size_t *len_out)
{
    herd_status_t st = store_tcps_wait(t, &key, 1, timeout_s);
    if (st != HERD_OK)
        return st;
    begin(t, TCPS_GET);
    put_key(t, key);
    double deadline = store_now_s() + reply_s(t);
    st = flush(t, deadline);
    return st == HERD_OK ? recv_str(t, val_out, len_out, deadline) : st;
}

herd_status_t store_tcps_add(store_tcps_t *t, const char *key, int64_t delta,
                             int64_t *value_out)
{
    begin(t, TCPS_ADD);
    put_key(t, key);
    store_wbuf_i64(&t->w, delta);
    uint64_t v = 0;
    herd_status_t st = call_u(t, 8, &v);
    if (st == HERD_OK)
        *value_out = (int64_t)v;
    return st;
}

herd_status_t store_tcps_cas(store_tcps_t *t, const char *key, const void *exp,
                             size_t elen, const void *des, size_t dlen,
                             void **cur_out, size_t *curlen_out)
{
    begin(t, TCPS_COMPARE_SET);
    put_key(t, key);
    store_wbuf_bytes(&t->w, exp, elen);
    store_wbuf_bytes(&t->w, des, dlen);
    double deadline = store_now_s() + reply_s(t);
    herd_status_t st = flush(t, deadline);
    return st == HERD_OK ? recv_str(t, cur_out, curlen_out, deadline) : st;
}

herd_status_t store_tcps_check(store_tcps_t *t, const char *const *keys, int n,
                               int *all_out)
{
    begin(t, TCPS_CHECK);
    store_wbuf_i64(&t->w, n);
    for (int i = 0; i < n; i++)
        put_key(t, keys[i]);
    uint64_t v = 0;
    herd_status_t st = call_u(t, 1, &v);
    if (st == HERD_OK)
        *all_out = v == TCPS_READY;
    return st;
}

herd_status_t store_tcps_delete(store_tcps_t *t, const char *key,
                                int *deleted_out)
{
    begin(t, TCPS_DELETE_KEY);
    put_key(t, key);
    uint64_t v = 0;
    herd_status_t st = call_u(t, 8, &v);
    if (st == HERD_OK)
        *deleted_out = v != 0;
    return st;
}

herd_status_t store_tcps_num_keys(store_tcps_t *t, int64_t *n_out)
{
    begin(t, TCPS_GETNUMKEYS);
    uint64_t v = 0;
    herd_status_t st = call_u(t, 8, &v);
    if (st == HERD_OK)
        *n_out = (int64_t)v;
    return st;
}
