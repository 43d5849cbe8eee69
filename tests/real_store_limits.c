/* tests/real_store_limits.c - the store server against hostile or broken
 * clients: before authentication only one small auth frame, within
 * auth_s; slow-loris frames are closed; the input held for all clients
 * and the number of connections are capped; accept failing for lack of
 * descriptors neither spins nor floods the log; tokens compare whole;
 * the frame decoder on its own; an authentication failure names the
 * store and the variable; the launcher gives a store off loopback a
 * random token. Loopback only, every wait bounded.
 *
 * Before these limits, a pre-auth connection announcing a 65 MiB frame
 * was buffered in full, a silent or one-byte-a-second client was never
 * closed, and EMFILE made the listener fire (and log) in a loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/store/proto.h"
#include "real/store/store.h"
#include "support/testutil.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static store_limits_t quick_limits(void)
{
    store_limits_t l;
    store_limits_default(&l);
    l.auth_s = 1.0;
    l.stall_s = 1.0;
    l.min_rate = 1 << 20;
    return l;
}

/* A raw connection whose reads give up after `tmo_s`. */
static int raw_connect(int port, double tmo_s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {(time_t)tmo_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* 1 when the server closed fd (EOF or reset) before the read timeout. */
static int closed_by_server(int fd)
{
    char b[256];
    ssize_t k;
    while ((k = recv(fd, b, sizeof(b), 0)) > 0)
        ;
    return k == 0 || (k < 0 && errno == ECONNRESET);
}

static void expect_works(int port, const char *token)
{
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, token, 5.0, &c),
                     HERD_OK);
    ck_assert_int_eq(store_set(c, "still", "here", 4), HERD_OK);
    int64_t n = 0;
    ck_assert_int_eq(store_num_keys(c, &n), HERD_OK);
    ck_assert_int_ge(n, 1);
    store_client_close(c);
}

START_TEST(preauth_frame_is_small)
{
    store_limits_t l = quick_limits();
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start_limits("127.0.0.1", 0, "tok", &l, &srv),
                     HERD_OK);
    int port = store_server_port(srv);
    /* A frame of 65 MiB announced before authentication: closed at once,
     * nothing buffered. */
    int fd = raw_connect(port, 10);
    const unsigned char big[] = {0, 0, 0x10, 4, STORE_OP_AUTH};
    ck_assert_int_eq(send(fd, big, sizeof(big), MSG_NOSIGNAL), sizeof(big));
    ck_assert(closed_by_server(fd));
    close(fd);
    /* Silent after connecting: closed after auth_s (1 s), not kept. */
    double t0 = now_s();
    fd = raw_connect(port, 10);
    ck_assert(closed_by_server(fd));
    ck_assert(now_s() - t0 < 9.0);
    close(fd);
    /* Half an auth frame, then nothing: the same. */
    fd = raw_connect(port, 10);
    const unsigned char half[] = {20, 0, 0, 0, STORE_OP_AUTH, 3};
    ck_assert_int_eq(send(fd, half, sizeof(half), MSG_NOSIGNAL), sizeof(half));
    ck_assert(closed_by_server(fd));
    close(fd);
    expect_works(port, "tok");
    store_server_stop(srv);
}
END_TEST

START_TEST(slow_loris_is_closed)
{
    store_limits_t l = quick_limits();
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start_limits("127.0.0.1", 0, NULL, &l, &srv),
                     HERD_OK);
    int port = store_server_port(srv);
    enum { N = 4 };
    int fds[N], closed[N] = {0}, nclosed = 0;
    const unsigned char head[] = {100, 0, 0, 0, STORE_OP_SET};
    for (int i = 0; i < N; i++) {
        fds[i] = raw_connect(port, 1);
        ck_assert_int_eq(send(fds[i], head, sizeof(head), MSG_NOSIGNAL),
                         sizeof(head));
    }
    /* One byte every 0.2 s each: a frame that keeps growing, too slowly.
     * The deadline is stall_s + 100 B / 1 MiB/s, about 1 s. */
    double end = now_s() + 20.0;
    while (nclosed < N && now_s() < end) {
        usleep(200000);
        for (int i = 0; i < N; i++) {
            if (closed[i])
                continue;
            char b;
            ssize_t k = recv(fds[i], &b, 1, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN) ||
                send(fds[i], "x", 1, MSG_NOSIGNAL) != 1) {
                closed[i] = 1;
                nclosed++;
            }
        }
    }
    ck_assert_int_eq(nclosed, N);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    expect_works(port, NULL);
    store_server_stop(srv);
}
END_TEST

START_TEST(buffered_bytes_are_capped)
{
    store_limits_t l = quick_limits();
    l.max_buffered = 1 << 20;
    l.stall_s = 60; /* only the cap may close them */
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start_limits("127.0.0.1", 0, NULL, &l, &srv),
                     HERD_OK);
    int port = store_server_port(srv);
    /* Three clients each begin a 1 MiB set and send 600 KiB of it: the
     * server may hold 1 MiB for all of them together. */
    enum { N = 3, PART = 600 << 10 };
    char *body = calloc(PART, 1);
    int fds[N], nclosed = 0;
    for (int i = 0; i < N; i++) {
        fds[i] = raw_connect(port, 5);
        const unsigned char head[] = {0, 0, 0x10, 0, STORE_OP_SET};
        ck_assert_int_eq(send(fds[i], head, sizeof(head), MSG_NOSIGNAL),
                         sizeof(head));
        /* The server may close this one while it is sent. */
        size_t off = 0;
        while (off < PART) {
            ssize_t k = send(fds[i], body + off, PART - off, MSG_NOSIGNAL);
            if (k <= 0)
                break;
            off += (size_t)k;
        }
    }
    for (int i = 0; i < N; i++) {
        nclosed += closed_by_server(fds[i]);
        close(fds[i]);
    }
    free(body);
    ck_assert_int_ge(nclosed, 2);
    expect_works(port, NULL);
    store_server_stop(srv);
}
END_TEST

START_TEST(connections_are_capped)
{
    store_limits_t l = quick_limits();
    l.max_conns = 4;
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start_limits("127.0.0.1", 0, NULL, &l, &srv),
                     HERD_OK);
    int port = store_server_port(srv);
    store_client_t *c[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(
            store_client_connect("127.0.0.1", port, NULL, 5.0, &c[i]), HERD_OK);
    int fd = raw_connect(port, 10);
    ck_assert(closed_by_server(fd));
    close(fd);
    store_client_close(c[0]);
    /* A place is free once the server has seen that close. */
    store_client_t *d = NULL;
    for (int i = 0; i < 100 && !d; i++)
        if (store_client_connect("127.0.0.1", port, NULL, 5.0, &d) != HERD_OK)
            usleep(50000);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(store_set(d, "k", "v", 1), HERD_OK);
    store_client_close(d);
    for (int i = 1; i < 4; i++)
        store_client_close(c[i]);
    store_server_stop(srv);
}
END_TEST

static int count_lines(const char *path, const char *needle)
{
    char *s = tu_read_file(path);
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, needle)); p++)
        n++;
    free(s);
    return n;
}

/* The server in a child limited to 32 descriptors; its stderr goes to a
 * file. 64 connections exhaust them; the log must not repeat. */
START_TEST(accept_emfile_backs_off)
{
    char *dir = tu_tmpdir(), log[600];
    snprintf(log, sizeof(log), "%s/store.log", dir);
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        FILE *f = freopen(log, "w", stderr);
        setvbuf(stderr, NULL, _IONBF, 0);
        struct rlimit rl = {32, 32};
        setrlimit(RLIMIT_NOFILE, &rl);
        store_limits_t l = quick_limits();
        store_server_t *srv = NULL;
        int port = -1;
        if (f && store_server_start_limits("127.0.0.1", 0, NULL, &l, &srv) ==
                     HERD_OK)
            port = store_server_port(srv);
        if (write(up[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
            _exit(1);
        char c;
        while (read(down[0], &c, 1) > 0)
            ;
        store_server_stop(srv);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    int port = -1;
    ck_assert_int_eq(read(up[0], &port, sizeof(port)), sizeof(port));
    ck_assert_int_gt(port, 0);
    enum { N = 64 };
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = raw_connect(port, 1);
    usleep(1500000);
    int lines = count_lines(log, "accept failed");
    ck_assert_int_ge(lines, 1);
    ck_assert_int_le(lines, 2);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    /* Descriptors come back: the listener resumes and serves again. */
    store_client_t *c = NULL;
    for (int i = 0; i < 100 && !c; i++)
        if (store_client_connect("127.0.0.1", port, NULL, 2.0, &c) != HERD_OK)
            usleep(50000);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(store_set(c, "k", "v", 1), HERD_OK);
    store_client_close(c);
    close(down[1]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_le(count_lines(log, "accept failed"), 2);
    free(dir);
}
END_TEST

START_TEST(token_compare)
{
    const uint8_t *t = (const uint8_t *)"s3cret";
    ck_assert(store_token_equal(t, 6, "s3cret"));
    ck_assert(!store_token_equal(t, 5, "s3cret"));
    ck_assert(!store_token_equal(t, 6, "s3creT"));
    ck_assert(!store_token_equal(t, 6, "s3cret!"));
    ck_assert(!store_token_equal(t, 0, "s3cret"));
    ck_assert(store_token_equal(t, 0, ""));
    ck_assert(!store_token_equal((const uint8_t *)"s3cret\0", 7, "s3cret"));
}
END_TEST

START_TEST(frame_decoder)
{
    store_req_t q;
    size_t used = 0, need = 0;
    char why[160];
    /* set "ab" = "xyz" */
    const uint8_t set[] = {22,  0,   0, 0, 2, 2, 0, 0, 0, 0, 0,   0,   0,
                           'a', 'b', 3, 0, 0, 0, 0, 0, 0, 0, 'x', 'y', 'z'};
    for (size_t n = 0; n < sizeof(set); n++)
        ck_assert_int_eq(store_frame_decode(set, n, STORE_MAX_FRAME, &q, &used,
                                            &need, why, sizeof(why)),
                         STORE_FRAME_PARTIAL);
    ck_assert_int_eq(need, sizeof(set));
    ck_assert_int_eq(store_frame_decode(set, sizeof(set), STORE_MAX_FRAME, &q,
                                        &used, &need, why, sizeof(why)),
                     STORE_FRAME_OK);
    ck_assert_int_eq(used, sizeof(set));
    ck_assert_int_eq(q.op, STORE_OP_SET);
    ck_assert_int_eq(q.klen, 2);
    ck_assert_int_eq(memcmp(q.key, "ab", 2), 0);
    ck_assert_int_eq(q.vlen, 3);
    /* Too large for a client that has not authenticated. */
    ck_assert_int_eq(
        store_frame_decode(set, 4, 8, &q, &used, &need, why, sizeof(why)),
        STORE_FRAME_BAD);
    ck_assert_ptr_nonnull(strstr(why, "limit 8"));
    /* wait with 2 keys and a timeout */
    const uint8_t wait[] = {35, 0, 0, 0, 6,   2,   0, 0, 0,   0, 0, 0, 0,
                            1,  0, 0, 0, 0,   0,   0, 0, 'k', 1, 0, 0, 0,
                            0,  0, 0, 0, 'l', 100, 0, 0, 0,   0, 0, 0, 0};
    ck_assert_int_eq(store_frame_decode(wait, sizeof(wait), STORE_MAX_FRAME, &q,
                                        &used, &need, why, sizeof(why)),
                     STORE_FRAME_OK);
    ck_assert_int_eq(q.nkeys, 2);
    ck_assert_int_eq(q.num, 100);
    const uint8_t *keys[2];
    size_t klens[2];
    store_req_keys(&q, keys, klens);
    ck_assert_int_eq(klens[1], 1);
    ck_assert_int_eq(keys[1][0], 'l');
    /* zero keys, an unknown op, trailing bytes */
    const uint8_t w0[] = {9, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0};
    ck_assert_int_eq(store_frame_decode(w0, sizeof(w0), STORE_MAX_FRAME, &q,
                                        &used, &need, why, sizeof(why)),
                     STORE_FRAME_BAD);
    const uint8_t unk[] = {1, 0, 0, 0, 42};
    ck_assert_int_eq(store_frame_decode(unk, sizeof(unk), STORE_MAX_FRAME, &q,
                                        &used, &need, why, sizeof(why)),
                     STORE_FRAME_BAD);
    ck_assert_ptr_nonnull(strstr(why, "unknown request type 42"));
    const uint8_t trail[] = {2, 0, 0, 0, 9, 9};
    ck_assert_int_eq(store_frame_decode(trail, sizeof(trail), STORE_MAX_FRAME,
                                        &q, &used, &need, why, sizeof(why)),
                     STORE_FRAME_BAD);
}
END_TEST

START_TEST(auth_failure_names_store_and_variable)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, "tok", &srv), HERD_OK);
    char port[32], method[64];
    snprintf(port, sizeof(port), "%d", store_server_port(srv));
    snprintf(method, sizeof(method), "tcp://127.0.0.1:%s", port);
    setenv("HERD_STORE_EXTERNAL", "1", 1);
    unsetenv("HERD_STORE_TOKEN");
    herd_init_t init = {.backend = "tcp",
                        .init_method = method,
                        .rank = 1,
                        .world_size = 2,
                        .timeout_s = 2};
    store_rdzv_t r;
    char err[512] = "";
    ck_assert_int_eq(store_rdzv_open(&init, &r, err, sizeof(err)),
                     HERD_ERR_AUTH);
    char where[64];
    snprintf(where, sizeof(where), "127.0.0.1:%s", port);
    ck_assert_msg(strstr(err, where) && strstr(err, "HERD_STORE_TOKEN"), "%s",
                  err);
    setenv("HERD_STORE_TOKEN", "nope", 1);
    ck_assert_int_eq(store_rdzv_open(&init, &r, err, sizeof(err)),
                     HERD_ERR_AUTH);
    ck_assert_msg(strstr(err, "does not match"), "%s", err);
    unsetenv("HERD_STORE_TOKEN");
    store_server_stop(srv);
}
END_TEST

/* A non-loopback IPv4 address of this host, or 0. */
static int host_addr(char *buf, size_t len)
{
    struct ifaddrs *ifa = NULL, *i;
    int found = 0;
    if (getifaddrs(&ifa) != 0)
        return 0;
    for (i = ifa; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
            struct sockaddr_in *sa = (struct sockaddr_in *)i->ifa_addr;
            if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127)
                found = inet_ntop(AF_INET, &sa->sin_addr, buf,
                                  (socklen_t)len) != NULL;
        }
    freeifaddrs(ifa);
    return found;
}

/* A port nothing listens on right now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t l = sizeof(a);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

START_TEST(launcher_token_off_loopback)
{
    char addr[64], args[512], *out = NULL;
    if (!host_addr(addr, sizeof(addr))) {
        fprintf(stderr, "no non-loopback address: launcher case skipped\n");
        return;
    }
    unsetenv("HERD_STORE_TOKEN");
    /* One node: the workers get a fresh random token. */
    snprintf(args, sizeof(args),
             "launch --quiet --master-addr %s --master-port %d -- sh -c "
             "'echo T=$HERD_STORE_TOKEN.'",
             addr, free_port());
    ck_assert_int_eq(tu_herd(args, &out), 0);
    char *t = strstr(out, "T=");
    ck_assert_msg(t != NULL, "%s", out);
    ck_assert_int_eq(strspn(t + 2, "0123456789abcdef"), 32);
    ck_assert_int_eq(t[34], '.');
    free(out);
    /* ... and use it: two tcp ranks through that store. */
    snprintf(args, sizeof(args),
             "launch --quiet --nproc-per-node 2 --master-addr %s "
             "--master-port %d -- %s perf --engine tcp -b 1K -e 1K -n 1",
             addr, free_port(), tu_herd_binary());
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "Out of bounds values : 0 OK"), "%s", out);
    free(out);
    /* Several nodes must share one: said, before anything starts. */
    snprintf(args, sizeof(args),
             "launch --quiet --nnodes 2 --master-addr %s --master-port 29999 "
             "-- true",
             addr);
    ck_assert_int_ne(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "HERD_STORE_TOKEN"), "%s", out);
    free(out);
    /* Loopback: no token is made. */
    snprintf(args, sizeof(args),
             "launch --quiet --master-port %d -- sh -c "
             "'echo T=$HERD_STORE_TOKEN.'",
             free_port());
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "T=."), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("real_store_limits");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, preauth_frame_is_small);
    tcase_add_test(tc, slow_loris_is_closed);
    tcase_add_test(tc, buffered_bytes_are_capped);
    tcase_add_test(tc, connections_are_capped);
    tcase_add_test(tc, accept_emfile_backs_off);
    tcase_add_test(tc, token_compare);
    tcase_add_test(tc, frame_decoder);
    tcase_add_test(tc, auth_failure_names_store_and_variable);
    tcase_add_test(tc, launcher_token_off_loopback);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
