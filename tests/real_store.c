/* tests/real_store.c - the rendezvous store: every operation on the TCP
 * server and on the file store, timeouts, many concurrent clients, bad
 * and truncated frames, tokens, and `herd store`. Loopback only. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/store/store.h"
#include "support/testutil.h"

typedef struct fixture {
    store_server_t *srv;
    store_client_t *c;
    char *dir;
} fixture_t;

/* backend 0: TCP server on an ephemeral port; 1: file store. */
static void fx_open(fixture_t *fx, int backend, const char *token)
{
    memset(fx, 0, sizeof(*fx));
    if (backend == 0) {
        ck_assert_int_eq(store_server_start("127.0.0.1", 0, token, &fx->srv),
                         HERD_OK);
        ck_assert_int_gt(store_server_port(fx->srv), 0);
        ck_assert_int_eq(store_client_connect("127.0.0.1",
                                              store_server_port(fx->srv), token,
                                              5.0, &fx->c),
                         HERD_OK);
    } else {
        fx->dir = tu_tmpdir();
        char path[512];
        snprintf(path, sizeof(path), "%s/store", fx->dir);
        ck_assert_int_eq(store_client_open_file(path, &fx->c), HERD_OK);
    }
}

static void fx_close(fixture_t *fx)
{
    store_client_close(fx->c);
    store_server_stop(fx->srv);
    if (fx->dir) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
        ck_assert_int_eq(system(cmd), 0);
        free(fx->dir);
    }
}

/* A second client of the same store. */
static store_client_t *fx_client(const fixture_t *fx, const char *token)
{
    store_client_t *c = NULL;
    if (fx->srv) {
        ck_assert_int_eq(store_client_connect("127.0.0.1",
                                              store_server_port(fx->srv), token,
                                              5.0, &c),
                         HERD_OK);
    } else {
        char path[512];
        snprintf(path, sizeof(path), "%s/store", fx->dir);
        ck_assert_int_eq(store_client_open_file(path, &c), HERD_OK);
    }
    return c;
}

static void expect_value(store_client_t *c, const char *key, const char *want)
{
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(c, key, 10.0, &v, &n), HERD_OK);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_str_eq(v, want);
    free(v);
}

START_TEST(test_set_get_overwrite)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    ck_assert_int_eq(store_set(fx.c, "a", "one", 3), HERD_OK);
    expect_value(fx.c, "a", "one");
    ck_assert_int_eq(store_set(fx.c, "a", "second", 6), HERD_OK);
    expect_value(fx.c, "a", "second");
    ck_assert_int_eq(store_set(fx.c, "empty", "", 0), HERD_OK);
    expect_value(fx.c, "empty", "");
    /* binary values with NUL bytes survive */
    ck_assert_int_eq(store_set(fx.c, "bin", "x\0y", 3), HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(fx.c, "bin", 1.0, &v, &n), HERD_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(memcmp(v, "x\0y", 3), 0);
    free(v);
    fx_close(&fx);
}
END_TEST

START_TEST(test_get_timeout)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    void *v = (void *)0x1;
    size_t n = 77;
    ck_assert_int_eq(store_get(fx.c, "missing", 0.2, &v, &n), HERD_ERR_TIMEOUT);
    ck_assert_ptr_eq(v, (void *)0x1); /* outputs untouched on error */
    ck_assert_uint_eq(n, 77);
    /* the client stays usable after a timeout */
    ck_assert_int_eq(store_set(fx.c, "k", "v", 1), HERD_OK);
    expect_value(fx.c, "k", "v");
    const char *keys[] = {"k", "never"};
    ck_assert_int_eq(store_wait(fx.c, keys, 2, 0.2), HERD_ERR_TIMEOUT);
    ck_assert_int_eq(store_wait(fx.c, keys, 1, 0.2), HERD_OK);
    fx_close(&fx);
}
END_TEST

typedef struct setter {
    store_client_t *c;
    const char *key, *val;
} setter_t;

static void *setter_main(void *arg)
{
    setter_t *s = arg;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    store_set(s->c, s->key, s->val, strlen(s->val));
    return NULL;
}

START_TEST(test_get_and_wait_block_until_set)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    store_client_t *other = fx_client(&fx, NULL);
    setter_t s = {other, "late", "arrived"};
    pthread_t t;
    pthread_create(&t, NULL, setter_main, &s);
    expect_value(fx.c, "late", "arrived");
    pthread_join(t, NULL);

    ck_assert_int_eq(store_set(fx.c, "w1", "1", 1), HERD_OK);
    setter_t s2 = {other, "w2", "2"};
    pthread_create(&t, NULL, setter_main, &s2);
    const char *keys[] = {"w1", "w2"};
    ck_assert_int_eq(store_wait(fx.c, keys, 2, 5.0), HERD_OK);
    pthread_join(t, NULL);
    int all = 0;
    ck_assert_int_eq(store_check(fx.c, keys, 2, &all), HERD_OK);
    ck_assert_int_eq(all, 1);
    store_client_close(other);
    fx_close(&fx);
}
END_TEST

START_TEST(test_add)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    int64_t v = 0;
    ck_assert_int_eq(store_add(fx.c, "n", 5, &v), HERD_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(store_add(fx.c, "n", -7, &v), HERD_OK);
    ck_assert_int_eq(v, -2);
    expect_value(fx.c, "n", "-2"); /* kept as decimal text */
    ck_assert_int_eq(store_set(fx.c, "s", "12", 2), HERD_OK);
    ck_assert_int_eq(store_add(fx.c, "s", 30, &v), HERD_OK);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(store_set(fx.c, "txt", "abc", 3), HERD_OK);
    v = 99;
    ck_assert_int_eq(store_add(fx.c, "txt", 1, &v), HERD_ERR_PARSE);
    ck_assert_int_eq(v, 99);
    ck_assert_int_eq(store_set(fx.c, "big", "9223372036854775807", 19),
                     HERD_OK);
    ck_assert_int_eq(store_add(fx.c, "big", 1, &v), HERD_ERR_OVERFLOW);
    fx_close(&fx);
}
END_TEST

static void expect_cas(store_client_t *c, const char *key, const char *exp,
                       const char *des, const char *want)
{
    void *cur = NULL;
    size_t n = 0;
    ck_assert_int_eq(
        store_compare_set(c, key, exp, strlen(exp), des, strlen(des), &cur, &n),
        HERD_OK);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_str_eq(cur, want);
    free(cur);
}

START_TEST(test_compare_set)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    /* missing + non-empty expected: returns expected, sets nothing */
    expect_cas(fx.c, "k", "old", "new", "old");
    int all = 1;
    const char *keys[] = {"k"};
    ck_assert_int_eq(store_check(fx.c, keys, 1, &all), HERD_OK);
    ck_assert_int_eq(all, 0);
    /* missing + empty expected: sets */
    expect_cas(fx.c, "k", "", "first", "first");
    expect_value(fx.c, "k", "first");
    /* equal: sets */
    expect_cas(fx.c, "k", "first", "second", "second");
    /* different: returns current, unchanged */
    expect_cas(fx.c, "k", "bogus", "third", "second");
    expect_value(fx.c, "k", "second");
    fx_close(&fx);
}
END_TEST

START_TEST(test_check_delete_num_keys_prefix)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    int64_t n = -1;
    ck_assert_int_eq(store_num_keys(fx.c, &n), HERD_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(store_set(fx.c, "a", "1", 1), HERD_OK);
    ck_assert_int_eq(store_set(fx.c, "b", "2", 1), HERD_OK);
    ck_assert_int_eq(store_num_keys(fx.c, &n), HERD_OK);
    ck_assert_int_eq(n, 2);
    int d = -1;
    ck_assert_int_eq(store_delete(fx.c, "a", &d), HERD_OK);
    ck_assert_int_eq(d, 1);
    ck_assert_int_eq(store_delete(fx.c, "a", &d), HERD_OK);
    ck_assert_int_eq(d, 0);
    ck_assert_int_eq(store_num_keys(fx.c, &n), HERD_OK);
    ck_assert_int_eq(n, 1);
    const char *keys[] = {"a", "b"};
    int all = -1;
    ck_assert_int_eq(store_check(fx.c, keys, 2, &all), HERD_OK);
    ck_assert_int_eq(all, 0);
    ck_assert_int_eq(store_check(fx.c, keys + 1, 1, &all), HERD_OK);
    ck_assert_int_eq(all, 1);
    /* a prefixed client sees its own namespace */
    store_client_t *p = fx_client(&fx, NULL);
    ck_assert_int_eq(store_client_set_prefix(p, "run/1/"), HERD_OK);
    ck_assert_int_eq(store_check(p, keys + 1, 1, &all), HERD_OK);
    ck_assert_int_eq(all, 0);
    ck_assert_int_eq(store_set(p, "b", "p", 1), HERD_OK);
    expect_value(fx.c, "run/1/b", "p");
    expect_value(fx.c, "b", "2");
    store_client_close(p);
    ck_assert_int_eq(store_set(fx.c, NULL, "x", 1), HERD_ERR_INVALID_ARG);
    fx_close(&fx);
}
END_TEST

START_TEST(test_large_value)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    size_t n = 8u << 20;
    unsigned char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 131 + 7);
    ck_assert_int_eq(store_set(fx.c, "big", big, n), HERD_OK);
    void *v = NULL;
    size_t got = 0;
    ck_assert_int_eq(store_get(fx.c, "big", 5.0, &v, &got), HERD_OK);
    ck_assert_uint_eq(got, n);
    ck_assert_int_eq(memcmp(v, big, n), 0);
    free(v);
    free(big);
    char key[5000];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    ck_assert_int_eq(store_set(fx.c, key, "x", 1), HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(store_set(fx.c, "huge", "", (64u << 20) + 1),
                     HERD_ERR_INVALID_ARG);
    fx_close(&fx);
}
END_TEST

#define NTHREADS 16
#define NADDS 100

typedef struct adder {
    const fixture_t *fx;
    int64_t seen[NADDS];
    herd_status_t st;
} adder_t;

static void *adder_main(void *arg)
{
    adder_t *a = arg;
    store_client_t *c = fx_client(a->fx, NULL);
    for (int i = 0; i < NADDS && a->st == HERD_OK; i++)
        a->st = store_add(c, "counter", 1, &a->seen[i]);
    store_client_close(c);
    return NULL;
}

START_TEST(test_concurrent_adds)
{
    fixture_t fx;
    fx_open(&fx, _i, NULL);
    adder_t *ad = calloc(NTHREADS, sizeof(*ad));
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        ad[i].fx = &fx;
        pthread_create(&t[i], NULL, adder_main, &ad[i]);
    }
    char *hit = calloc(NTHREADS * NADDS + 1, 1);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(ad[i].st, HERD_OK);
        for (int j = 0; j < NADDS; j++) {
            int64_t v = ad[i].seen[j];
            ck_assert(v >= 1 && v <= NTHREADS * NADDS);
            ck_assert_int_eq(hit[v], 0); /* every value returned once */
            hit[v] = 1;
            if (j > 0)
                ck_assert_int_gt(v, ad[i].seen[j - 1]);
        }
    }
    free(hit);
    free(ad);
    int64_t v = 0;
    ck_assert_int_eq(store_add(fx.c, "counter", 0, &v), HERD_OK);
    ck_assert_int_eq(v, NTHREADS * NADDS);
    fx_close(&fx);
}
END_TEST

/* A raw TCP connection to the server, for bytes no client would send. */
static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void raw_send_close(int port, const void *buf, size_t n, int wait_eof)
{
    int fd = raw_connect(port);
    ck_assert_int_eq(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    if (wait_eof) {
        /* the server must close this connection */
        char b[64];
        ssize_t k;
        while ((k = recv(fd, b, sizeof(b), 0)) > 0)
            ;
        ck_assert_int_eq(k, 0);
    }
    close(fd);
}

START_TEST(test_survives_bad_frames)
{
    fixture_t fx;
    fx_open(&fx, 0, NULL);
    int port = store_server_port(fx.srv);
    ck_assert_int_eq(store_set(fx.c, "keep", "me", 2), HERD_OK);
    /* random garbage: a huge length prefix */
    const char garbage[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_send_close(port, garbage, sizeof(garbage) - 1, 1);
    /* a frame with an unknown op */
    const unsigned char unk[] = {1, 0, 0, 0, 99};
    raw_send_close(port, unk, sizeof(unk), 1);
    /* a set whose key length runs past the frame */
    const unsigned char bad[] = {13, 0, 0, 0, 2,   255, 255, 0,  0,
                                 0,  0, 0, 0, 'a', 'b', 'c', 'd'};
    raw_send_close(port, bad, sizeof(bad), 1);
    /* an empty frame */
    const unsigned char empty[] = {0, 0, 0, 0};
    raw_send_close(port, empty, sizeof(empty), 1);
    /* truncated: the header promises 100 bytes, 3 arrive, then EOF */
    const unsigned char trunc[] = {100, 0, 0, 0, 2, 1, 0};
    raw_send_close(port, trunc, sizeof(trunc), 0);
    /* trailing bytes after a valid num_keys request */
    const unsigned char trail[] = {2, 0, 0, 0, 9, 9};
    raw_send_close(port, trail, sizeof(trail), 1);
    /* a client parked in get that vanishes */
    store_client_t *gone = fx_client(&fx, NULL);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(gone, "nothing", 0.05, &v, &n),
                     HERD_ERR_TIMEOUT);
    store_client_close(gone);
    /* the server still serves good clients, old and new */
    expect_value(fx.c, "keep", "me");
    store_client_t *c2 = fx_client(&fx, NULL);
    expect_value(c2, "keep", "me");
    store_client_close(c2);
    fx_close(&fx);
}
END_TEST

START_TEST(test_token)
{
    fixture_t fx;
    fx_open(&fx, 0, "s3cret");
    int port = store_server_port(fx.srv);
    ck_assert_int_eq(store_set(fx.c, "k", "v", 1), HERD_OK);
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, "wrong", 2.0, &c),
                     HERD_ERR_AUTH);
    ck_assert_ptr_null(c);
    /* no token at all: refused at connect (the client always presents
     * one, empty here) */
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, NULL, 2.0, &c),
                     HERD_ERR_AUTH);
    ck_assert_ptr_null(c);
    /* a raw request before authentication is refused too */
    const unsigned char nk[] = {1, 0, 0, 0, 9};
    raw_send_close(port, nk, sizeof(nk), 1);
    expect_value(fx.c, "k", "v");
    fx_close(&fx);
}
END_TEST

START_TEST(test_stop_while_waiting)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", store_server_port(srv),
                                          NULL, 2.0, &c),
                     HERD_OK);
    store_server_stop(srv);
    void *v = NULL;
    size_t n = 0;
    herd_status_t st = store_get(c, "k", 30.0, &v, &n);
    ck_assert_int_eq(st, HERD_ERR_CLOSED);
    ck_assert_int_eq(store_set(c, "k", "v", 1), HERD_ERR_CLOSED);
    store_client_close(c);
    /* nobody listening: connect gives up at its timeout */
    ck_assert_int_eq(store_client_connect("127.0.0.1", 1, NULL, 0.2, &c),
                     HERD_ERR_TIMEOUT);
}
END_TEST

START_TEST(test_herd_store_command)
{
    char *dir = tu_tmpdir();
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "'%s' store --port 0 --host 127.0.0.1 > %s/out 2>&1 & echo $!",
             tu_herd_binary(), dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    pid_t pid = (pid_t)atoi(out);
    free(out);
    int port = 0;
    for (int i = 0; i < 500 && port == 0; i++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/out", dir);
        FILE *f = fopen(path, "r");
        char line[256] = "";
        if (f && fgets(line, sizeof(line), f))
            sscanf(line, "herd store: listening on 127.0.0.1:%d", &port);
        if (f)
            fclose(f);
        if (!port)
            usleep(10000);
    }
    ck_assert_int_gt(port, 0);
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, NULL, 5.0, &c),
                     HERD_OK);
    int64_t v = 0;
    ck_assert_int_eq(store_add(c, "x", 3, &v), HERD_OK);
    ck_assert_int_eq(v, 3);
    store_client_close(c);
    kill(pid, SIGTERM);
    snprintf(cmd, sizeof(cmd),
             "for i in $(seq 100); do kill -0 %d 2>/dev/null || exit 0; "
             "sleep 0.05; done; exit 1",
             (int)pid);
    ck_assert_int_eq(tu_run(cmd, NULL), 0);
    /* bad usage is refused with exit 2 */
    snprintf(cmd, sizeof(cmd), "'%s' store --port 70000 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--port"));
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("real_store");
    TCase *both = tcase_create("ops");
    tcase_set_timeout(both, 60);
    /* loop index _i: 0 = TCP server, 1 = file store */
    tcase_add_loop_test(both, test_set_get_overwrite, 0, 2);
    tcase_add_loop_test(both, test_get_timeout, 0, 2);
    tcase_add_loop_test(both, test_get_and_wait_block_until_set, 0, 2);
    tcase_add_loop_test(both, test_add, 0, 2);
    tcase_add_loop_test(both, test_compare_set, 0, 2);
    tcase_add_loop_test(both, test_check_delete_num_keys_prefix, 0, 2);
    tcase_add_loop_test(both, test_large_value, 0, 2);
    tcase_add_loop_test(both, test_concurrent_adds, 0, 2);
    suite_add_tcase(s, both);
    TCase *tcp = tcase_create("server");
    tcase_set_timeout(tcp, 60);
    tcase_add_test(tcp, test_survives_bad_frames);
    tcase_add_test(tcp, test_token);
    tcase_add_test(tcp, test_stop_while_waiting);
    tcase_add_test(tcp, test_herd_store_command);
    suite_add_tcase(s, tcp);
    return s;
}

int main(void)
{
    return tu_run_suite(store_suite());
}
