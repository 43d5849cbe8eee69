/* tests/real_store_tcps.c - herd's store speaking PyTorch's TCPStore
 * protocol, byte for byte as a torch >= 2 client writes it (the bytes
 * were captured from torch 2.15's TCPStore client): validation, ping,
 * every command and its reply, herd's clients beside TCPStore ones on
 * one server, a parked wait cancelled, the limits (an oversized key, an
 * unknown command, a stalled command, a store with a token), the
 * decoder on its own, and herd's client speaking TCPStore; torch 1.x's
 * older stream (no hello, set = 0) the same way. Loopback only, every
 * read bounded. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "real/store/store.h"
#include "real/store/tcps_proto.h"
#include "support/testutil.h"

typedef struct out {
    uint8_t b[512];
    size_t n;
} out_t;

static void o_u(out_t *o, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        o->b[o->n++] = (uint8_t)(v >> (8 * i));
}

static void o_s(out_t *o, const char *s)
{
    o_u(o, strlen(s), 8);
    memcpy(o->b + o->n, s, strlen(s));
    o->n += strlen(s);
}

static int tcps_connect(int port, int hello)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (hello)
        ck_assert_int_eq(write(fd, tcps_hello, TCPS_HELLO_LEN), TCPS_HELLO_LEN);
    return fd;
}

static void sendo(int fd, out_t *o)
{
    ck_assert_int_eq(write(fd, o->b, o->n), (ssize_t)o->n);
    o->n = 0;
}

static void readn(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, (char *)buf + got, n - got, 0);
        ck_assert_msg(k > 0, "short reply (%zu of %zu bytes)", got, n);
        got += (size_t)k;
    }
}

static uint64_t read_u(int fd, int n)
{
    uint8_t b[8];
    readn(fd, b, (size_t)n);
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static void expect_str(int fd, const char *want)
{
    uint64_t n = read_u(fd, 8);
    ck_assert_uint_eq(n, strlen(want));
    char buf[256] = "";
    readn(fd, buf, (size_t)n);
    ck_assert_str_eq(buf, want);
}

static int closed_by_server(int fd)
{
    char b[64];
    ssize_t k;
    while ((k = recv(fd, b, sizeof(b), 0)) > 0)
        ;
    return k == 0 || (k < 0 && errno == ECONNRESET);
}

START_TEST(commands)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    int fd = tcps_connect(store_server_port(srv), 1);
    out_t o = {.n = 0};
    o_u(&o, TCPS_PING, 1), o_u(&o, 0x543a, 4), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 4), 0x543a);
    o_u(&o, TCPS_SET, 1), o_s(&o, "/kk"), o_s(&o, "vv"), sendo(fd, &o);
    o_u(&o, TCPS_GET, 1), o_s(&o, "/kk"), sendo(fd, &o);
    expect_str(fd, "vv");
    o_u(&o, TCPS_GET, 1), o_s(&o, "/none"), sendo(fd, &o);
    expect_str(fd, "");
    o_u(&o, TCPS_ADD, 1), o_s(&o, "/n"), o_u(&o, 5, 8), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 5);
    o_u(&o, TCPS_ADD, 1), o_s(&o, "/n"), o_u(&o, (uint64_t)-7, 8),
        sendo(fd, &o);
    ck_assert_int_eq((int64_t)read_u(fd, 8), -2);
    /* compare_set: missing + empty expected sets; a mismatch returns the
     * current value; a match swaps */
    o_u(&o, TCPS_COMPARE_SET, 1), o_s(&o, "/c"), o_s(&o, ""), o_s(&o, "x");
    sendo(fd, &o);
    expect_str(fd, "x");
    o_u(&o, TCPS_COMPARE_SET, 1), o_s(&o, "/c"), o_s(&o, "y"), o_s(&o, "z");
    sendo(fd, &o);
    expect_str(fd, "x");
    o_u(&o, TCPS_COMPARE_SET, 1), o_s(&o, "/c"), o_s(&o, "x"), o_s(&o, "w");
    sendo(fd, &o);
    expect_str(fd, "w");
    o_u(&o, TCPS_CHECK, 1), o_u(&o, 2, 8), o_s(&o, "/kk"), o_s(&o, "/c");
    sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_READY);
    o_u(&o, TCPS_CHECK, 1), o_u(&o, 1, 8), o_s(&o, "/none"), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_NOT_READY);
    o_u(&o, TCPS_WAIT, 1), o_u(&o, 1, 8), o_s(&o, "/kk"), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_STOP_WAITING);
    o_u(&o, TCPS_GETNUMKEYS, 1), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 3);
    o_u(&o, TCPS_DELETE_KEY, 1), o_s(&o, "/kk"), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 1);
    o_u(&o, TCPS_DELETE_KEY, 1), o_s(&o, "/kk"), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 0);
    o_u(&o, TCPS_MULTI_SET, 1), o_u(&o, 2, 8), o_s(&o, "/a"), o_s(&o, "1");
    o_s(&o, "/b"), o_s(&o, "2"), sendo(fd, &o);
    o_u(&o, TCPS_APPEND, 1), o_s(&o, "/a"), o_s(&o, "+"), sendo(fd, &o);
    o_u(&o, TCPS_MULTI_GET, 1), o_u(&o, 2, 8), o_s(&o, "/a"), o_s(&o, "/b");
    sendo(fd, &o);
    expect_str(fd, "1+");
    expect_str(fd, "2");
    /* herd's client on the same port sees the same table */
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", store_server_port(srv),
                                          NULL, 5.0, &c),
                     HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(c, "/c", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "w");
    free(v);
    /* a parked TCPStore wait is answered by herd's set */
    o_u(&o, TCPS_WAIT, 1), o_u(&o, 1, 8), o_s(&o, "/late"), sendo(fd, &o);
    ck_assert_int_eq(store_set(c, "/late", "1", 1), HERD_OK);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_STOP_WAITING);
    /* ... or cancelled, as torch does when its own timeout passes */
    o_u(&o, TCPS_WAIT, 1), o_u(&o, 1, 8), o_s(&o, "/never"), sendo(fd, &o);
    o_u(&o, TCPS_CANCEL_WAIT, 1), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_WAIT_CANCELED);
    o_u(&o, TCPS_GETNUMKEYS, 1), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 5);
    /* a late set of the cancelled key answers nobody */
    ck_assert_int_eq(store_set(c, "/never", "1", 1), HERD_OK);
    o_u(&o, TCPS_PING, 1), o_u(&o, 7, 4), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 4), 7);
    store_client_close(c);
    close(fd);
    store_server_stop(srv);
}
END_TEST

/* A large value arriving in pieces is reassembled whole. */
START_TEST(large_value)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    int fd = tcps_connect(store_server_port(srv), 1);
    size_t big = (size_t)4 << 20;
    uint8_t *val = malloc(big);
    ck_assert_ptr_nonnull(val);
    for (size_t i = 0; i < big; i++)
        val[i] = (uint8_t)(i * 7);
    out_t o = {.n = 0};
    o_u(&o, TCPS_SET, 1), o_s(&o, "/big"), o_u(&o, big, 8), sendo(fd, &o);
    for (size_t off = 0; off < big; off += 65536)
        ck_assert_int_eq(write(fd, val + off, 65536), 65536);
    o_u(&o, TCPS_GET, 1), o_s(&o, "/big"), sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), big);
    uint8_t *back = malloc(big);
    ck_assert_ptr_nonnull(back);
    readn(fd, back, big);
    ck_assert_int_eq(memcmp(back, val, big), 0);
    free(back);
    free(val);
    close(fd);
    store_server_stop(srv);
}
END_TEST

START_TEST(limits)
{
    store_limits_t lim;
    store_limits_default(&lim);
    lim.stall_s = 1.0;
    lim.min_rate = 1 << 20;
    store_server_t *srv = NULL;
    ck_assert_int_eq(
        store_server_start_limits("127.0.0.1", 0, NULL, &lim, &srv), HERD_OK);
    int port = store_server_port(srv);
    out_t o = {.n = 0};
    /* a key over 4 KiB: closed at once, not buffered */
    int fd = tcps_connect(port, 1);
    o_u(&o, TCPS_GET, 1), o_u(&o, 1u << 20, 8), sendo(fd, &o);
    ck_assert(closed_by_server(fd));
    close(fd);
    /* an unknown command */
    fd = tcps_connect(port, 1);
    o_u(&o, 200, 1), sendo(fd, &o);
    ck_assert(closed_by_server(fd));
    close(fd);
    /* a command begun and never finished (slow-loris) */
    fd = tcps_connect(port, 1);
    o_u(&o, TCPS_SET, 1), o_u(&o, 3, 8), sendo(fd, &o);
    ck_assert(closed_by_server(fd));
    close(fd);
    /* half a hello */
    fd = tcps_connect(port, 0);
    ck_assert_int_eq(write(fd, tcps_hello, 3), 3);
    ck_assert(closed_by_server(fd));
    close(fd);
    store_server_stop(srv);
    /* a store with a token: TCPStore clients cannot present it */
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, "sekrit", &srv),
                     HERD_OK);
    fd = tcps_connect(store_server_port(srv), 1);
    o_u(&o, TCPS_GETNUMKEYS, 1), sendo(fd, &o);
    ck_assert(closed_by_server(fd));
    close(fd);
    store_server_stop(srv);
}
END_TEST

START_TEST(decoder)
{
    tcps_req_t q;
    size_t used = 0, need = 0;
    char why[160];
    out_t o = {.n = 0};
    o_u(&o, TCPS_COMPARE_SET, 1), o_s(&o, "/k"), o_s(&o, "ab"), o_s(&o, "c");
    ck_assert_int_eq(tcps_decode(o.b, o.n, &q, &used, &need, why, sizeof(why)),
                     STORE_FRAME_OK);
    ck_assert_uint_eq(used, o.n);
    ck_assert_uint_eq(q.klen, 2);
    ck_assert_uint_eq(q.vlen, 2);
    ck_assert_uint_eq(q.vlen2, 1);
    /* every proper prefix is partial */
    for (size_t k = 0; k < o.n; k++)
        ck_assert_int_eq(
            tcps_decode(o.b, k, &q, &used, &need, why, sizeof(why)),
            STORE_FRAME_PARTIAL);
    o.n = 0;
    o_u(&o, TCPS_WAIT, 1), o_u(&o, STORE_MAX_WAIT_KEYS + 1, 8);
    ck_assert_int_eq(tcps_decode(o.b, o.n, &q, &used, &need, why, sizeof(why)),
                     STORE_FRAME_BAD);
    ck_assert_ptr_nonnull(strstr(why, "keys (limit"));
    o.n = 0;
    o_u(&o, TCPS_SET, 1), o_s(&o, "/k"), o_u(&o, (uint64_t)1 << 40, 8);
    ck_assert_int_eq(tcps_decode(o.b, o.n, &q, &used, &need, why, sizeof(why)),
                     STORE_FRAME_BAD);
    o.n = 0;
    o_u(&o, TCPS_MULTI_SET, 1), o_u(&o, 1, 8), o_s(&o, "/k"), o_u(&o, 9, 8);
    ck_assert_int_eq(tcps_decode(o.b, o.n, &q, &used, &need, why, sizeof(why)),
                     STORE_FRAME_PARTIAL);
    ck_assert_uint_eq(need, o.n + 9);
    ck_assert_str_eq(tcps_op_name(TCPS_GETNUMKEYS), "num_keys");
}
END_TEST

/* herd's client in TCPStore mode, against herd's server: the same calls,
 * keys with torch's "/", a wait that times out is cancelled and the
 * connection stays usable. */
START_TEST(client)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    int port = store_server_port(srv);
    store_client_t *t = NULL, *h = NULL;
    ck_assert_int_eq(store_client_connect_tcpstore("127.0.0.1", port, 5.0, &t),
                     HERD_OK);
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, NULL, 5.0, &h),
                     HERD_OK);
    ck_assert_int_eq(store_client_set_prefix(t, "p/"), HERD_OK);
    ck_assert_int_eq(store_set(t, "k", "v1", 2), HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(h, "/p/k", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "v1");
    free(v);
    ck_assert_int_eq(store_get(t, "k", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "v1");
    free(v);
    int64_t x = 0;
    ck_assert_int_eq(store_add(t, "n", 2, &x), HERD_OK);
    ck_assert_int_eq(store_add(t, "n", 3, &x), HERD_OK);
    ck_assert_int_eq(x, 5);
    ck_assert_int_eq(store_compare_set(t, "c", "", 0, "a", 1, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "a");
    free(v);
    ck_assert_int_eq(store_compare_set(t, "c", "z", 1, "b", 1, &v, &n),
                     HERD_OK);
    ck_assert_str_eq(v, "a");
    free(v);
    const char *keys[] = {"k", "n", "missing"};
    int all = -1;
    ck_assert_int_eq(store_check(t, keys, 2, &all), HERD_OK);
    ck_assert_int_eq(all, 1);
    ck_assert_int_eq(store_check(t, keys, 3, &all), HERD_OK);
    ck_assert_int_eq(all, 0);
    ck_assert_int_eq(store_wait(t, keys, 2, 1.0), HERD_OK);
    ck_assert_int_eq(store_wait(t, keys, 3, 0.3), HERD_ERR_TIMEOUT);
    ck_assert_int_eq(store_get(t, "missing", 0.3, &v, &n), HERD_ERR_TIMEOUT);
    int del = 0;
    ck_assert_int_eq(store_delete(t, "k", &del), HERD_OK);
    ck_assert_int_eq(del, 1);
    ck_assert_int_eq(store_num_keys(t, &x), HERD_OK);
    ck_assert_int_eq(x, 2);
    /* herd's set ends the TCPStore client's get */
    ck_assert_int_eq(store_set(h, "/p/missing", "late", 4), HERD_OK);
    ck_assert_int_eq(store_get(t, "missing", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "late");
    free(v);
    store_client_close(t);
    store_client_close(h);
    /* nothing listening that speaks TCPStore: a bounded failure */
    store_server_stop(srv);
    ck_assert_int_ne(store_client_connect_tcpstore("127.0.0.1", port, 0.3, &t),
                     HERD_OK);
}
END_TEST

/* torch 1.x's stream (no hello; set = 0, as Debian's torch 1.13 writes
 * it: captured, set "/a" = "1" is 00, 02 00.. "/a", 01 00.. "1"): every
 * command, a wait given up by a client that sends more, watch_key
 * refused; herd's client forced to 1.x. */
START_TEST(commands_v1)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    int port = store_server_port(srv);
    int fd = tcps_connect(port, 0);
    out_t o = {.n = 0};
    o_u(&o, 0, 1); /* set */
    o_s(&o, "/a");
    o_s(&o, "1");
    o_u(&o, 2, 1); /* get */
    o_s(&o, "/a");
    sendo(fd, &o);
    expect_str(fd, "1");
    o_u(&o, 3, 1); /* add */
    o_s(&o, "/n");
    o_u(&o, 5, 8);
    sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 5);
    o_u(&o, 1, 1); /* compare_set */
    o_s(&o, "/a");
    o_s(&o, "1");
    o_s(&o, "2");
    sendo(fd, &o);
    expect_str(fd, "2");
    o_u(&o, 4, 1); /* check */
    o_u(&o, 2, 8);
    o_s(&o, "/a");
    o_s(&o, "/zz");
    sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_NOT_READY);
    o_u(&o, 5, 1); /* wait: parked, then given up by the next command */
    o_u(&o, 1, 8);
    o_s(&o, "/zz");
    sendo(fd, &o);
    o_u(&o, 6, 1); /* num_keys */
    sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 2);
    o_u(&o, 8, 1); /* delete_key */
    o_s(&o, "/n");
    sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 8), 1);
    o_u(&o, 5, 1); /* a wait that is answered */
    o_u(&o, 1, 8);
    o_s(&o, "/a");
    sendo(fd, &o);
    ck_assert_uint_eq(read_u(fd, 1), TCPS_STOP_WAITING);
    o_u(&o, TCPS_V1_WATCH_KEY, 1);
    o_s(&o, "/a");
    sendo(fd, &o);
    ck_assert(closed_by_server(fd));
    close(fd);
    /* herd's client told to speak 1.x: a timed-out wait spends the
     * connection, as torch 1.x's own client's does */
    store_client_t *t = NULL;
    ck_assert_int_eq(
        store_client_connect_tcpstore_version("127.0.0.1", port, 1, 5.0, &t),
        HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(t, "a", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "2");
    free(v);
    int64_t x = 0;
    ck_assert_int_eq(store_add(t, "m", 4, &x), HERD_OK);
    ck_assert_int_eq(x, 4);
    const char *k = "never";
    ck_assert_int_eq(store_wait(t, &k, 1, 0.2), HERD_ERR_TIMEOUT);
    ck_assert_int_eq(store_num_keys(t, &x), HERD_ERR_CLOSED);
    store_client_close(t);
    /* the decoder: 1.x's bytes */
    o_u(&o, 3, 1);
    o_s(&o, "/n");
    o_u(&o, 7, 8);
    tcps_req_t q;
    size_t used = 0, need = 0;
    char why[128];
    ck_assert_int_eq(
        tcps_decode_v1(o.b, o.n, &q, &used, &need, why, sizeof(why)),
        STORE_FRAME_OK);
    ck_assert_int_eq(q.op, TCPS_ADD);
    ck_assert_int_eq(q.num, 7);
    ck_assert_uint_eq(used, o.n);
    ck_assert_int_eq(
        tcps_decode_v1(o.b, o.n - 1, &q, &used, &need, why, sizeof(why)),
        STORE_FRAME_PARTIAL);
    o.n = 0;
    store_server_stop(srv);
}
END_TEST

/* Rendezvous with HERD_STORE_PROTOCOL: tcpstore joins a store someone
 * else hosts (here herd's, as torchrun's agent would), with one prefix
 * per round; an unknown value is an error that names it. */
START_TEST(rdzv_protocol)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    char port[16];
    snprintf(port, sizeof(port), "%d", store_server_port(srv));
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", port, 1);
    unsetenv("HERD_STORE_EXTERNAL");
    unsetenv("HERD_STORE_PREFIX");
    setenv("TORCHELASTIC_RUN_ID", "job5", 1);
    setenv("TORCHELASTIC_RESTART_COUNT", "2", 1);
    herd_init_t init;
    memset(&init, 0, sizeof(init));
    store_rdzv_t r;
    char err[256] = "";
    setenv("HERD_STORE_PROTOCOL", "bogus", 1);
    ck_assert_int_eq(store_rdzv_open(&init, &r, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_msg(strstr(err, "HERD_STORE_PROTOCOL='bogus'"), "%s", err);
    setenv("HERD_STORE_PROTOCOL", "tcpstore", 1);
    ck_assert_int_eq(store_rdzv_open(&init, &r, err, sizeof(err)), HERD_OK);
    ck_assert_ptr_null(r.server); /* the store is someone else's */
    ck_assert_int_eq(store_set(r.client, "x", "1", 1), HERD_OK);
    store_rdzv_close(&r);
    store_client_t *h = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", store_server_port(srv),
                                          NULL, 5.0, &h),
                     HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(h, "/herd/job5/2/x", 1.0, &v, &n), HERD_OK);
    free(v);
    store_client_close(h);
    unsetenv("HERD_STORE_PROTOCOL");
    store_server_stop(srv);
}
END_TEST

static Suite *tcps_suite(void)
{
    Suite *s = suite_create("real_store_tcps");
    TCase *tc = tcase_create("tcps");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, commands);
    tcase_add_test(tc, large_value);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, decoder);
    tcase_add_test(tc, client);
    tcase_add_test(tc, commands_v1);
    tcase_add_test(tc, rdzv_protocol);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(tcps_suite());
}
