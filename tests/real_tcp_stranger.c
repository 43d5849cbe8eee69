/* tests/real_tcp_stranger.c - strangers on the tcp engine's data ports.
 *
 * Three ranks on loopback run ring all_reduces, in which rank 2 is the
 * one that connects to rank 0. Before rank 2 may start, this process
 * (which can reach the store, as anyone on the host can reach a
 * loopback job's ports) reads rank 0's data address and:
 *   - checks that the port is not reachable on another interface of the
 *     host (a loopback job listens on loopback only);
 *   - connects as a stranger claiming rank 2, with this version's
 *     handshake but no cookie, and sends one ABORT header naming rank 77
 *     of 3;
 *   - does the same with the earlier 8-byte handshake (no cookie field).
 * Then rank 2 starts, and every rank must finish with correct results.
 *
 * Before the cookie, rank 0 took the stranger for rank 2: the ABORT
 * failed the job ("rank 77 failed"), or rank 0 waited on the stranger
 * and refused the real rank 2 until the collective timed out. The header
 * and handshake checks are also tried on their own. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <poll.h>

#include "real/tcp/wire.h"
#include "real_tcp_harness.h"
#include "support/testutil.h"

#define ST_COUNT 1000u
#define ST_P 3

static int go_fd = -1; /* rank 2 reads one byte from it before starting */

static int rank_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    if (herd_comm_rank(c) == 2) {
        struct pollfd p = {.fd = go_fd, .events = POLLIN};
        char b;
        if (poll(&p, 1, 30000) != 1 || read(go_fd, &b, 1) != 1)
            return 3;
    }
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    for (int round = 0; round < 2; round++) {
        rt_case_t k = {.coll = HERD_COLL_ALL_REDUCE,
                       .algo = HERD_ALGO_RING,
                       .dtype = HERD_FLOAT32,
                       .op = HERD_SUM,
                       .count = ST_COUNT};
        if (rt_run_case(c, &k) != 0)
            return 4;
    }
    return 0;
}

/* A non-loopback IPv4 address of this host, or 0. */
static int host_addr(struct in_addr *out)
{
    struct ifaddrs *ifa = NULL;
    int found = 0;
    if (getifaddrs(&ifa) != 0)
        return 0;
    for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
            struct sockaddr_in *sa = (struct sockaddr_in *)i->ifa_addr;
            if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127) {
                *out = sa->sin_addr;
                found = 1;
            }
        }
    freeifaddrs(ifa);
    return found;
}

static int connect_to(struct in_addr a, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr = a;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Connect to rank 0 as "rank 2" with `hs` (n bytes), then ABORT(77). */
static int stranger(struct in_addr a, int port, const void *hs, size_t n)
{
    int fd = connect_to(a, port);
    ck_assert_int_ge(fd, 0);
    tcp_hdr_t h = {.magic = TCP_MAGIC, .type = TCP_MSG_ABORT, .tag = 77};
    ck_assert_int_eq(send(fd, hs, n, MSG_NOSIGNAL), (ssize_t)n);
    ck_assert_int_eq(send(fd, &h, sizeof(h), MSG_NOSIGNAL), sizeof(h));
    return fd;
}

START_TEST(stranger_cannot_claim_a_rank)
{
    int port, stop_fd, go[2];
    pid_t store_pid = rt_store_start(&port, &stop_fd);
    ck_assert_int_gt(store_pid, 0);
    ck_assert_int_eq(pipe(go), 0);
    char method[64];
    snprintf(method, sizeof(method), "tcp://127.0.0.1:%d", port);
    pid_t pids[ST_P];
    fflush(NULL);
    for (int r = 0; r < ST_P; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            close(stop_fd);
            close(go[1]);
            go_fd = go[0];
            setenv("HERD_STORE_EXTERNAL", "1", 1);
            setenv("HERD_TCP_HANDSHAKE_MS", "300", 1);
            herd_init_t init = {.backend = "tcp",
                                .init_method = method,
                                .rank = r,
                                .world_size = ST_P,
                                .timeout_s = 10};
            herd_run_info_t info;
            herd_status_t st = herd_run(&init, rank_main, NULL, &info);
            fflush(NULL);
            _exit(st == HERD_OK ? 0 : info.exit_code ? info.exit_code : 100);
        }
    }
    close(go[0]);
    /* Rank 0's data address, as published in the store. */
    store_client_t *cl = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, NULL, 10, &cl),
                     HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(cl, "herd/tcp/addr/0", 20, &v, &n), HERD_OK);
    char host[64];
    int dport = 0;
    ck_assert_int_eq(sscanf(v, "%63s %d", host, &dport), 2);
    ck_assert_str_eq(host, "127.0.0.1");
    free(v);
    store_client_close(cl);
    /* Not on every interface. */
    struct in_addr other, lo = {htonl(INADDR_LOOPBACK)};
    if (host_addr(&other)) {
        int fd = connect_to(other, dport);
        ck_assert_msg(fd < 0, "rank 0's data port answers on another "
                              "interface");
    }
    /* This version's handshake, claiming rank 2, without the cookie. */
    tcp_handshake_t hs = {.magic = TCP_HANDSHAKE_MAGIC, .rank = 2};
    int s1 = stranger(lo, dport, &hs, sizeof(hs));
    /* The 8-byte handshake of before the cookie. */
    uint32_t old[2] = {0x48534448u, 2};
    int s2 = stranger(lo, dport, old, sizeof(old));
    /* A handshake that never completes: closed at its deadline (300 ms
     * here), while the job waits for rank 2. */
    int s3 = connect_to(lo, dport);
    ck_assert_int_ge(s3, 0);
    ck_assert_int_eq(send(s3, &hs, 3, MSG_NOSIGNAL), 3);
    struct pollfd pf = {.fd = s3, .events = POLLIN};
    ck_assert_msg(poll(&pf, 1, 5000) == 1, "a stalled handshake was kept");
    char b;
    ck_assert_int_eq(recv(s3, &b, 1, 0), 0); /* EOF: rank 0 closed it */
    close(s3);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    int codes[ST_P];
    for (int r = 0; r < ST_P; r++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    close(s1);
    close(s2);
    close(go[1]);
    close(stop_fd);
    waitpid(store_pid, NULL, 0);
    for (int r = 0; r < ST_P; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited with %d", r, codes[r]);
}
END_TEST

START_TEST(header_checks)
{
    tcp_hdr_t h = {.magic = TCP_MAGIC, .type = TCP_MSG_ABORT, .tag = 77}, out;
    char why[128] = "";
    ck_assert_int_eq(tcp_hdr_decode(&h, sizeof(h), 3, &out, why, sizeof(why)),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "rank 77 of 3"));
    h.tag = 2;
    ck_assert_int_eq(tcp_hdr_decode(&h, sizeof(h), 3, &out, why, sizeof(why)),
                     1);
    h.tag = -1;
    ck_assert_int_eq(tcp_hdr_decode(&h, sizeof(h), 3, &out, why, sizeof(why)),
                     -1);
    /* A control message has no payload (it would be read as a header). */
    h.type = TCP_MSG_BYE;
    h.tag = 0;
    h.len = 40;
    ck_assert_int_eq(tcp_hdr_decode(&h, sizeof(h), 3, &out, why, sizeof(why)),
                     -1);
    h.type = 9;
    h.len = 0;
    ck_assert_int_eq(tcp_hdr_decode(&h, sizeof(h), 3, &out, why, sizeof(why)),
                     -1);
    h.type = TCP_MSG_COLL;
    h.group = -4;
    ck_assert_int_eq(tcp_hdr_decode(&h, sizeof(h), 3, &out, why, sizeof(why)),
                     -1);
    h.group = 0;
    ck_assert_int_eq(tcp_hdr_decode(&h, 39, 3, &out, why, sizeof(why)), 0);
}
END_TEST

START_TEST(handshake_checks)
{
    uint8_t cookie[TCP_COOKIE_BYTES];
    for (int i = 0; i < TCP_COOKIE_BYTES; i++)
        cookie[i] = (uint8_t)(i * 7 + 1);
    tcp_handshake_t hs = {.magic = TCP_HANDSHAKE_MAGIC, .rank = 2};
    memcpy(hs.cookie, cookie, sizeof(cookie));
    int r = -1;
    char why[128] = "";
    ck_assert_int_eq(tcp_handshake_check(&hs, sizeof(hs), 3, 0, cookie, &r, why,
                                         sizeof(why)),
                     1);
    ck_assert_int_eq(r, 2);
    ck_assert_int_eq(
        tcp_handshake_check(&hs, 8, 3, 0, cookie, &r, why, sizeof(why)), 0);
    hs.cookie[15] ^= 1;
    ck_assert_int_eq(tcp_handshake_check(&hs, sizeof(hs), 3, 0, cookie, &r, why,
                                         sizeof(why)),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "cookie"));
    hs.cookie[15] ^= 1;
    hs.rank = 3; /* out of range */
    ck_assert_int_eq(tcp_handshake_check(&hs, sizeof(hs), 3, 0, cookie, &r, why,
                                         sizeof(why)),
                     -1);
    hs.rank = 0; /* itself */
    ck_assert_int_eq(tcp_handshake_check(&hs, sizeof(hs), 3, 0, cookie, &r, why,
                                         sizeof(why)),
                     -1);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok()) {
        fprintf(stderr, "skip: no loopback sockets\n");
        return 77;
    }
    Suite *s = suite_create("real_tcp_stranger");
    TCase *tc = tcase_create("stranger");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, stranger_cannot_claim_a_rank);
    tcase_add_test(tc, header_checks);
    tcase_add_test(tc, handshake_checks);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
