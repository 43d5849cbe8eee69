/* tests/real_tcp_pairs.c - one socket per rank pair in the tcp engine:
 * whichever rank sends first, and when both connect at the same moment
 * (the higher rank's connection is dropped, its queued data waits for the
 * lower rank's), each pair ends with a single socket that carries both
 * directions in order. Sockets are counted in /proc/self/fd. Waits read
 * awaited sockets directly or through the event loop (HERD_TCP_DIRECT). */
#include <dirent.h>

#include "real_tcp_harness.h"
#include "support/testutil.h"

#define NMSG 20

static int count_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    char path[300], link[64];
    while ((e = readdir(d))) {
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, link, sizeof(link) - 1);
        if (k > 0) {
            link[k] = '\0';
            n += !strncmp(link, "socket:", 7);
        }
    }
    closedir(d);
    return n;
}

/* Counted between two barriers: after the first, connections that lost
 * a simultaneous connect have been answered and closed; before the
 * second, no peer has exited (closing its socket). -100 if a barrier
 * failed. */
static int settled_count(herd_comm_t *c)
{
    if (herd_barrier(c, NULL) != HERD_OK)
        return -100;
    int n = count_sockets();
    return herd_barrier(c, NULL) == HERD_OK ? n : -100;
}

static int64_t msg_value(int from, int to, int i)
{
    return (int64_t)from * 1000000 + to * 1000 + i;
}

/* NMSG messages to `to` on tag 1, nonblocking. */
static int post_sends(herd_comm_t *c, int to, int64_t *vals, herd_req_t **rq)
{
    for (int i = 0; i < NMSG; i++) {
        vals[i] = msg_value(herd_comm_rank(c), to, i);
        if (herd_send(c, &vals[i], 1, HERD_INT64, to, 1, &rq[i]) != HERD_OK)
            return 1;
    }
    return 0;
}

/* Receive NMSG messages from `from` and check their order and values. */
static int recv_all(herd_comm_t *c, int from)
{
    for (int i = 0; i < NMSG; i++) {
        int64_t v = -1;
        if (herd_recv(c, &v, 1, HERD_INT64, from, 1, NULL) != HERD_OK ||
            v != msg_value(from, herd_comm_rank(c), i))
            return 1;
    }
    return 0;
}

static int wait_all(herd_req_t **rq, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        bad |= herd_req_wait(rq[i]) != HERD_OK;
        herd_req_free(rq[i]);
    }
    return bad;
}

/* Every rank posts its sends to every other rank before it runs the
 * event loop once, so every pair connects from both ends at once. */
static int all_at_once_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int base = count_sockets(), p = herd_comm_size(c), me = herd_comm_rank(c);
    int64_t vals[RT_MAX_RANKS][NMSG];
    herd_req_t *rq[RT_MAX_RANKS][NMSG];
    for (int q = 0; q < p; q++)
        if (q != me && post_sends(c, q, vals[q], rq[q]))
            return 1;
    for (int q = 0; q < p; q++)
        if (q != me && recv_all(c, q))
            return 2;
    for (int q = 0; q < p; q++)
        if (q != me && wait_all(rq[q], NMSG))
            return 3;
    return settled_count(c) - base == p - 1 ? 0 : 5;
}

START_TEST(test_simultaneous_connects)
{
    ck_assert_int_eq(rt_spawn(2, all_at_once_main, NULL), 0);
    ck_assert_int_eq(rt_spawn(4, all_at_once_main, NULL), 0);
}
END_TEST

/* Rank `*first` sends first while the other only receives, then the
 * other answers on the same socket. */
static int one_first_main(herd_comm_t *c, void *arg)
{
    int first = *(int *)arg, me = herd_comm_rank(c), other = 1 - me;
    int base = count_sockets();
    int64_t vals[NMSG];
    herd_req_t *rq[NMSG];
    int bad = 0;
    if (me == first)
        bad = post_sends(c, other, vals, rq) || wait_all(rq, NMSG) ||
              recv_all(c, other);
    else
        bad = recv_all(c, other) || post_sends(c, other, vals, rq) ||
              wait_all(rq, NMSG);
    if (bad)
        return 1;
    return settled_count(c) - base == 1 ? 0 : 2;
}

START_TEST(test_lower_rank_first)
{
    int first = 0;
    ck_assert_int_eq(rt_spawn(2, one_first_main, &first), 0);
}
END_TEST

START_TEST(test_higher_rank_first)
{
    int first = 1;
    ck_assert_int_eq(rt_spawn(2, one_first_main, &first), 0);
}
END_TEST

/* A collective right away (both ranks connect at once), many times, with
 * results checked: the small all_reduce path this socket sharing is for. */
static int allreduce_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int base = count_sockets(), p = herd_comm_size(c), me = herd_comm_rank(c);
    if (herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RD) != HERD_OK)
        return 4;
    for (int it = 0; it < 200; it++) {
        float v[2] = {(float)(me + it), 1.0f};
        if (herd_all_reduce(c, v, v, 2, HERD_FLOAT32, HERD_SUM, NULL) !=
            HERD_OK)
            return 1;
        if (v[0] != (float)(p * it + p * (p - 1) / 2) || v[1] != (float)p)
            return 2;
    }
    /* Recursive doubling talks to me ^ 1, me ^ 2, ...; the counting
     * barriers may add other peers, but never a second socket to one. */
    int peers = 0, n = settled_count(c) - base;
    for (int k = 1; k < p; k <<= 1)
        peers++;
    return n >= peers && n <= p - 1 ? 0 : 3;
}

START_TEST(test_allreduce_rd)
{
    ck_assert_int_eq(rt_spawn(2, allreduce_main, NULL), 0);
    ck_assert_int_eq(rt_spawn(4, allreduce_main, NULL), 0);
}
END_TEST

static void event_loop_only(int rank, void *arg)
{
    (void)rank;
    (void)arg;
    setenv("HERD_TCP_DIRECT", "0", 1);
}

/* The same with every wait going through the event loop (waits read the
 * awaited sockets directly by default): both paths give the same. */
START_TEST(test_allreduce_event_loop_only)
{
    rt_opts_t o = {.child_cb = event_loop_only};
    int codes[RT_MAX_RANKS];
    ck_assert_int_eq(rt_spawn_opts(2, allreduce_main, NULL, &o, codes), 0);
    ck_assert_int_eq(rt_spawn_opts(4, allreduce_main, NULL, &o, codes), 0);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_pairs");
    TCase *tc = tcase_create("pairs");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_simultaneous_connects);
    tcase_add_test(tc, test_lower_rank_first);
    tcase_add_test(tc, test_higher_rank_first);
    tcase_add_test(tc, test_allreduce_rd);
    tcase_add_test(tc, test_allreduce_event_loop_only);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
