/* real/store/client.c - the store client: a blocking TCP client of the
 * store protocol, one request at a time, every wait bounded by poll()
 * with a deadline; the same calls reach the file store (file.c) for
 * file:// rendezvous. Keys get the client's prefix (HERD_STORE_PREFIX in
 * rendezvous) so restarted rounds never see stale keys. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "real/store/map.h"
#include "real/store/proto.h"
#include "real/store/store.h"
#include "real/store/store_int.h"

/* How long a client waits beyond the server-side timeout of get/wait
 * before it gives the server up. */
#define STORE_REPLY_MARGIN_S 5.0
#define STORE_DEFAULT_TIMEOUT_S 300.0
/* Requests that never wait (set, add, ...) give a slow server at least
 * this long, whatever the client's timeout: a loaded machine must not
 * pass for a dead store. */
#define STORE_MIN_REPLY_S 30.0

struct store_client {
    int fd;             /* TCP back end; -1 when file is set */
    store_file_t *file; /* file back end */
    store_tcps_t *tcps; /* TCPStore back end */
    double timeout_s;
    char *prefix;
    int broken; /* a reply was lost: the stream is out of step */
    store_wbuf_t w;
    uint8_t *rbuf;
    size_t rcap;
};

double store_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int ms_left(double deadline)
{
    double left = deadline - store_now_s();
    if (left <= 0)
        return 0;
    return left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}

static herd_status_t wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = ev};
        int ms = ms_left(deadline);
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return HERD_OK;
        if (rc == 0)
            return HERD_ERR_TIMEOUT;
        if (errno != EINTR)
            return HERD_ERR_IO;
    }
}

/* After a non-blocking send/recv that moved nothing: retry at once on
 * EINTR, wait for readiness on EAGAIN, otherwise the link is gone. Shared
 * by send_all and recv_all so both treat errors alike. */
static herd_status_t io_again(int fd, short ev, double deadline)
{
    if (errno == EINTR)
        return HERD_OK;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
        return HERD_ERR_CLOSED;
    return wait_fd(fd, ev, deadline);
}

herd_status_t store_io_send(int fd, const void *buf, size_t n, double deadline)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        herd_status_t st = io_again(fd, POLLOUT, deadline);
        if (st != HERD_OK)
            return st;
    }
    return HERD_OK;
}

herd_status_t store_io_recv(int fd, void *buf, size_t n, double deadline)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0)
            return HERD_ERR_CLOSED;
        herd_status_t st = io_again(fd, POLLIN, deadline);
        if (st != HERD_OK)
            return st;
    }
    return HERD_OK;
}

/* Send the frame in c->w, read the reply frame; on HERD_OK `r` holds the
 * reply body after the status, and the reply's status is returned. */
static herd_status_t rpc(store_client_t *c, double wait_s, store_rbuf_t *r)
{
    if (c->broken)
        return HERD_ERR_CLOSED;
    if (c->w.failed)
        return HERD_ERR_NO_MEMORY;
    store_wbuf_end(&c->w);
    double deadline = store_now_s() + wait_s;
    herd_status_t st = store_io_send(c->fd, c->w.data, c->w.len, deadline);
    uint8_t h[4];
    if (st == HERD_OK)
        st = store_io_recv(c->fd, h, 4, deadline);
    uint32_t n = st == HERD_OK ? store_le32(h) : 0;
    if (st == HERD_OK && (n < 4 || n > STORE_MAX_FRAME))
        st = HERD_ERR_PARSE;
    if (st == HERD_OK && n > c->rcap) {
        uint8_t *nb = realloc(c->rbuf, n);
        if (!nb)
            st = HERD_ERR_NO_MEMORY;
        else
            c->rbuf = nb, c->rcap = n;
    }
    if (st == HERD_OK)
        st = store_io_recv(c->fd, c->rbuf, n, deadline);
    if (st != HERD_OK) {
        c->broken = 1;
        return st;
    }
    store_rbuf_init(r, c->rbuf, n);
    return (herd_status_t)store_rbuf_i32(r);
}

static double reply_wait(const store_client_t *c)
{
    return c->timeout_s > STORE_MIN_REPLY_S ? c->timeout_s : STORE_MIN_REPLY_S;
}

/* Start a request frame: op byte. */
static void req_begin(store_client_t *c, store_op_t op)
{
    c->w.failed = 0;
    store_wbuf_begin(&c->w);
    store_wbuf_u8(&c->w, (uint8_t)op);
}

static void req_key(store_client_t *c, const char *key)
{
    size_t pl = c->prefix ? strlen(c->prefix) : 0, kl = strlen(key);
    store_wbuf_i64(&c->w, (int64_t)(pl + kl));
    store_wbuf_raw(&c->w, c->prefix, pl);
    store_wbuf_raw(&c->w, key, kl);
}

static int key_ok(const store_client_t *c, const char *key)
{
    size_t pl = c->prefix ? strlen(c->prefix) : 0;
    return key && strlen(key) + pl <= STORE_MAX_KEY;
}

/* The prefixed key for the file back end (malloc'd). */
static char *full_key(const store_client_t *c, const char *key)
{
    size_t pl = c->prefix ? strlen(c->prefix) : 0, kl = strlen(key);
    char *k = malloc(pl + kl + 1);
    if (k) {
        memcpy(k, c->prefix ? c->prefix : "", pl);
        memcpy(k + pl, key, kl + 1);
    }
    return k;
}

/* ---- connecting ------------------------------------------------------- */

/* One attempt on one address: 0 and *fd_out on success, else errno. */
static int try_connect(const struct addrinfo *a, double deadline, int *fd_out)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    a->ai_protocol);
    if (fd < 0)
        return errno;
    int err = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
            double d =
                store_now_s() + 1.0 < deadline ? store_now_s() + 1.0 : deadline;
            socklen_t l = sizeof(err);
            if (wait_fd(fd, POLLOUT, d) != HERD_OK)
                err = ETIMEDOUT;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
                err = errno;
        }
    }
    if (err != 0) {
        close(fd);
        return err;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    *fd_out = fd;
    return 0;
}

static herd_status_t connect_loop(const char *host, int port, double timeout_s,
                                  int *fd_out)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    double deadline = store_now_s() + timeout_s;
    long sleep_ms = 20;
    for (;;) {
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM};
        struct addrinfo *res = NULL;
        if (getaddrinfo(host, ps, &hints, &res) == 0) {
            for (struct addrinfo *a = res; a; a = a->ai_next)
                if (try_connect(a, deadline, fd_out) == 0) {
                    freeaddrinfo(res);
                    return HERD_OK;
                }
            freeaddrinfo(res);
        }
        if (ms_left(deadline) <= sleep_ms)
            return HERD_ERR_TIMEOUT;
        struct timespec ts = {0, sleep_ms * 1000000L};
        nanosleep(&ts, NULL);
        if (sleep_ms < 200)
            sleep_ms *= 2;
    }
}

static herd_status_t client_auth(store_client_t *c, const char *token)
{
    req_begin(c, STORE_OP_AUTH);
    store_wbuf_bytes(&c->w, token, strlen(token));
    store_rbuf_t r;
    return rpc(c, reply_wait(c), &r);
}

static store_client_t *client_new(void)
{
    store_client_t *c = calloc(1, sizeof(*c));
    if (c) {
        c->fd = -1;
        c->timeout_s = STORE_DEFAULT_TIMEOUT_S;
        store_wbuf_init(&c->w);
    }
    return c;
}

herd_status_t store_client_connect(const char *host, int port,
                                   const char *token, double timeout_s,
                                   store_client_t **out)
{
    if (!host || !*host || port <= 0 || port > 65535 || !out ||
        (token && strlen(token) > STORE_MAX_TOKEN))
        return HERD_ERR_INVALID_ARG;
    store_client_t *c = client_new();
    if (!c)
        return HERD_ERR_NO_MEMORY;
    if (timeout_s > 0)
        c->timeout_s = timeout_s;
    herd_status_t st = connect_loop(host, port, c->timeout_s, &c->fd);
    /* Always authenticate (an empty token without one): a server that
     * wants a token refuses here, where the caller can say which
     * variable to set, not at some later request. */
    if (st == HERD_OK)
        st = client_auth(c, token ? token : "");
    if (st != HERD_OK) {
        store_client_close(c);
        return st;
    }
    *out = c;
    return HERD_OK;
}

/* How long the probe waits for an answer: a torch 1.x or herd server
 * answers at once; torch >= 2's libuv server says nothing to a client
 * that did not validate, so silence this long means torch >= 2. */
#define TCPS_PROBE_S 1.0

herd_status_t store_client_connect_tcpstore_version(const char *host, int port,
                                                    int version,
                                                    double timeout_s,
                                                    store_client_t **out)
{
    if (!host || !*host || port <= 0 || port > 65535 || !out || version < 0 ||
        version > 2)
        return HERD_ERR_INVALID_ARG;
    store_client_t *c = client_new();
    if (!c)
        return HERD_ERR_NO_MEMORY;
    if (timeout_s > 0)
        c->timeout_s = timeout_s;
    double deadline = store_now_s() + c->timeout_s;
    int fd = -1;
    herd_status_t st = connect_loop(host, port, c->timeout_s, &fd);
    if (st == HERD_OK && version == 0) {
        double probe =
            c->timeout_s < TCPS_PROBE_S ? c->timeout_s : TCPS_PROBE_S;
        int kind = store_tcps_probe(fd, probe);
        if (kind == TCPS_PROBE_NONE) {
            close(fd);
            st = HERD_ERR_PARSE;
        } else if (kind != TCPS_PROBE_HERD) {
            /* the probe spent this connection: a fresh one */
            close(fd);
            fd = -1;
            version = kind == TCPS_PROBE_V1 ? 1 : 2;
            double left = deadline - store_now_s();
            st = connect_loop(host, port, left > 0.1 ? left : 0.1, &fd);
        }
    }
    if (st == HERD_OK)
        st = store_tcps_open(fd, c->timeout_s, version, &c->tcps);
    if (st != HERD_OK) {
        store_client_close(c);
        return st;
    }
    *out = c;
    return HERD_OK;
}

herd_status_t store_client_connect_tcpstore(const char *host, int port,
                                            double timeout_s,
                                            store_client_t **out)
{
    return store_client_connect_tcpstore_version(host, port, 0, timeout_s, out);
}

herd_status_t store_client_open_file(const char *path, store_client_t **out)
{
    if (!path || !*path || !out)
        return HERD_ERR_INVALID_ARG;
    store_client_t *c = client_new();
    if (!c)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = store_file_open(path, &c->file);
    if (st != HERD_OK) {
        store_client_close(c);
        return st;
    }
    *out = c;
    return HERD_OK;
}

void store_client_close(store_client_t *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    store_file_close(c->file);
    store_tcps_close(c->tcps);
    store_wbuf_free(&c->w);
    free(c->rbuf);
    free(c->prefix);
    free(c);
}

void store_client_set_timeout(store_client_t *c, double timeout_s)
{
    if (timeout_s > 0)
        c->timeout_s = timeout_s;
}

double store_client_timeout(const store_client_t *c)
{
    return c->timeout_s;
}

herd_status_t store_client_set_prefix(store_client_t *c, const char *prefix)
{
    char *p = NULL;
    if (prefix && *prefix && !(p = strdup(prefix)))
        return HERD_ERR_NO_MEMORY;
    if (p && strlen(p) > STORE_MAX_KEY / 2) {
        free(p);
        return HERD_ERR_INVALID_ARG;
    }
    free(c->prefix);
    c->prefix = p;
    return HERD_OK;
}

/* ---- operations ------------------------------------------------------- */

static double op_timeout(const store_client_t *c, double t)
{
    return t > 0 ? t : c->timeout_s;
}

static int64_t to_ms(double t)
{
    double ms = t * 1000.0 + 0.999;
    return ms > 9e15 ? (int64_t)9e15 : (int64_t)ms;
}

herd_status_t store_set(store_client_t *c, const char *key, const void *val,
                        size_t len)
{
    if (!c || !key_ok(c, key) || (!val && len) || len > STORE_MAX_VALUE)
        return HERD_ERR_INVALID_ARG;
    if (c->tcps) {
        char *k = full_key(c, key);
        herd_status_t st =
            k ? store_tcps_set(c->tcps, k, val, len) : HERD_ERR_NO_MEMORY;
        free(k);
        return st;
    }
    if (c->file) {
        char *k = full_key(c, key);
        herd_status_t st =
            k ? store_file_set(c->file, k, val, len) : HERD_ERR_NO_MEMORY;
        free(k);
        return st;
    }
    req_begin(c, STORE_OP_SET);
    req_key(c, key);
    store_wbuf_bytes(&c->w, val, len);
    store_rbuf_t r;
    return rpc(c, reply_wait(c), &r);
}

/* A byte string from a reply, as a malloc'd NUL-terminated copy. */
static herd_status_t reply_bytes(store_rbuf_t *r, void **out, size_t *len)
{
    size_t n = 0;
    const uint8_t *p = store_rbuf_bytes(r, STORE_MAX_VALUE, &n);
    if (!p)
        return HERD_ERR_PARSE;
    void *d = store_dup_bytes(p, n);
    if (!d)
        return HERD_ERR_NO_MEMORY;
    *out = d;
    *len = n;
    return HERD_OK;
}

herd_status_t store_get(store_client_t *c, const char *key, double timeout_s,
                        void **val_out, size_t *len_out)
{
    if (!c || !key_ok(c, key) || !val_out || !len_out)
        return HERD_ERR_INVALID_ARG;
    double t = op_timeout(c, timeout_s);
    if (c->tcps) {
        char *k = full_key(c, key);
        herd_status_t st = k ? store_tcps_get(c->tcps, k, t, val_out, len_out)
                             : HERD_ERR_NO_MEMORY;
        free(k);
        return st;
    }
    if (c->file) {
        char *k = full_key(c, key);
        herd_status_t st = k ? store_file_get(c->file, k, t, val_out, len_out)
                             : HERD_ERR_NO_MEMORY;
        free(k);
        return st;
    }
    req_begin(c, STORE_OP_GET);
    req_key(c, key);
    store_wbuf_i64(&c->w, to_ms(t));
    store_rbuf_t r;
    herd_status_t st = rpc(c, t + STORE_REPLY_MARGIN_S, &r);
    return st == HERD_OK ? reply_bytes(&r, val_out, len_out) : st;
}

/* An int64 from a reply. */
static herd_status_t reply_i64(store_rbuf_t *r, int64_t *out)
{
    int64_t v = store_rbuf_i64(r);
    if (r->bad)
        return HERD_ERR_PARSE;
    *out = v;
    return HERD_OK;
}

herd_status_t store_add(store_client_t *c, const char *key, int64_t delta,
                        int64_t *value_out)
{
    if (!c || !key_ok(c, key))
        return HERD_ERR_INVALID_ARG;
    int64_t v = 0;
    herd_status_t st;
    if (c->file || c->tcps) {
        char *k = full_key(c, key);
        st = !k        ? HERD_ERR_NO_MEMORY
             : c->tcps ? store_tcps_add(c->tcps, k, delta, &v)
                       : store_file_add(c->file, k, delta, &v);
        free(k);
    } else {
        req_begin(c, STORE_OP_ADD);
        req_key(c, key);
        store_wbuf_i64(&c->w, delta);
        store_rbuf_t r;
        st = rpc(c, reply_wait(c), &r);
        if (st == HERD_OK)
            st = reply_i64(&r, &v);
    }
    if (st == HERD_OK && value_out)
        *value_out = v;
    return st;
}

herd_status_t store_compare_set(store_client_t *c, const char *key,
                                const void *expected, size_t elen,
                                const void *desired, size_t dlen,
                                void **cur_out, size_t *curlen_out)
{
    if (!c || !key_ok(c, key) || (!expected && elen) || (!desired && dlen) ||
        elen > STORE_MAX_VALUE || dlen > STORE_MAX_VALUE || !cur_out ||
        !curlen_out)
        return HERD_ERR_INVALID_ARG;
    if (c->tcps) {
        char *k = full_key(c, key);
        herd_status_t st =
            k ? store_tcps_cas(c->tcps, k, expected, elen, desired, dlen,
                               cur_out, curlen_out)
              : HERD_ERR_NO_MEMORY;
        free(k);
        return st;
    }
    if (c->file) {
        char *k = full_key(c, key);
        herd_status_t st =
            k ? store_file_cas(c->file, k, expected, elen, desired, dlen,
                               cur_out, curlen_out)
              : HERD_ERR_NO_MEMORY;
        free(k);
        return st;
    }
    req_begin(c, STORE_OP_CAS);
    req_key(c, key);
    store_wbuf_bytes(&c->w, expected, elen);
    store_wbuf_bytes(&c->w, desired, dlen);
    store_rbuf_t r;
    herd_status_t st = rpc(c, reply_wait(c), &r);
    return st == HERD_OK ? reply_bytes(&r, cur_out, curlen_out) : st;
}

static int keys_ok(const store_client_t *c, const char *const *keys, int n)
{
    if (!keys || n < 1 || n > (int)STORE_MAX_WAIT_KEYS)
        return 0;
    for (int i = 0; i < n; i++)
        if (!key_ok(c, keys[i]))
            return 0;
    return 1;
}

/* The file back end gets prefixed copies of a key list. */
static char **full_keys(const store_client_t *c, const char *const *keys, int n)
{
    char **k = calloc((size_t)n, sizeof(*k));
    for (int i = 0; k && i < n; i++)
        if (!(k[i] = full_key(c, keys[i]))) {
            while (i-- > 0)
                free(k[i]);
            free(k);
            return NULL;
        }
    return k;
}

static void free_keys(char **k, int n)
{
    for (int i = 0; k && i < n; i++)
        free(k[i]);
    free(k);
}

static void req_keys(store_client_t *c, store_op_t op, const char *const *keys,
                     int n)
{
    req_begin(c, op);
    store_wbuf_i64(&c->w, n);
    for (int i = 0; i < n; i++)
        req_key(c, keys[i]);
}

herd_status_t store_wait(store_client_t *c, const char *const *keys, int n,
                         double timeout_s)
{
    if (!c || !keys_ok(c, keys, n))
        return HERD_ERR_INVALID_ARG;
    double t = op_timeout(c, timeout_s);
    if (c->tcps) {
        char **k = full_keys(c, keys, n);
        herd_status_t st =
            k ? store_tcps_wait(c->tcps, (const char *const *)k, n, t)
              : HERD_ERR_NO_MEMORY;
        free_keys(k, n);
        return st;
    }
    if (c->file) {
        char **k = full_keys(c, keys, n);
        herd_status_t st =
            k ? store_file_wait(c->file, (const char *const *)k, n, t)
              : HERD_ERR_NO_MEMORY;
        free_keys(k, n);
        return st;
    }
    req_keys(c, STORE_OP_WAIT, keys, n);
    store_wbuf_i64(&c->w, to_ms(t));
    store_rbuf_t r;
    return rpc(c, t + STORE_REPLY_MARGIN_S, &r);
}

herd_status_t store_check(store_client_t *c, const char *const *keys, int n,
                          int *all_exist_out)
{
    if (!c || !keys_ok(c, keys, n) || !all_exist_out)
        return HERD_ERR_INVALID_ARG;
    if (c->tcps) {
        char **k = full_keys(c, keys, n);
        herd_status_t st = k ? store_tcps_check(c->tcps, (const char *const *)k,
                                                n, all_exist_out)
                             : HERD_ERR_NO_MEMORY;
        free_keys(k, n);
        return st;
    }
    if (c->file) {
        char **k = full_keys(c, keys, n);
        herd_status_t st = k ? store_file_check(c->file, (const char *const *)k,
                                                n, all_exist_out)
                             : HERD_ERR_NO_MEMORY;
        free_keys(k, n);
        return st;
    }
    req_keys(c, STORE_OP_CHECK, keys, n);
    store_rbuf_t r;
    int64_t v = 0;
    herd_status_t st = rpc(c, reply_wait(c), &r);
    if (st == HERD_OK && (st = reply_i64(&r, &v)) == HERD_OK)
        *all_exist_out = v != 0;
    return st;
}

herd_status_t store_delete(store_client_t *c, const char *key, int *deleted_out)
{
    if (!c || !key_ok(c, key))
        return HERD_ERR_INVALID_ARG;
    int64_t v = 0;
    herd_status_t st;
    if (c->file || c->tcps) {
        char *k = full_key(c, key);
        int d = 0;
        st = !k        ? HERD_ERR_NO_MEMORY
             : c->tcps ? store_tcps_delete(c->tcps, k, &d)
                       : store_file_delete(c->file, k, &d);
        v = d;
        free(k);
    } else {
        req_begin(c, STORE_OP_DELETE);
        req_key(c, key);
        store_rbuf_t r;
        st = rpc(c, reply_wait(c), &r);
        if (st == HERD_OK)
            st = reply_i64(&r, &v);
    }
    if (st == HERD_OK && deleted_out)
        *deleted_out = v != 0;
    return st;
}

herd_status_t store_num_keys(store_client_t *c, int64_t *n_out)
{
    if (!c || !n_out)
        return HERD_ERR_INVALID_ARG;
    if (c->tcps)
        return store_tcps_num_keys(c->tcps, n_out);
    if (c->file)
        return store_file_num_keys(c->file, n_out);
    req_begin(c, STORE_OP_NUM_KEYS);
    store_rbuf_t r;
    int64_t v = 0;
    herd_status_t st = rpc(c, reply_wait(c), &r);
    if (st == HERD_OK && (st = reply_i64(&r, &v)) == HERD_OK)
        *n_out = v;
    return st;
}
