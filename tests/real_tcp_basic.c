/* tests/real_tcp_basic.c - the tcp engine's first steps with real
 * processes on loopback: point-to-point (in order per tag, out of order
 * across tags), ring all_reduce on 1-4 ranks, herd_run's result. */
#include "real_tcp_harness.h"
#include "support/testutil.h"

static int p2p_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int r = herd_comm_rank(c);
    int32_t buf[1000];
    if (r == 0) {
        for (int i = 0; i < 1000; i++)
            buf[i] = i * 3;
        if (herd_send(c, buf, 1000, HERD_INT32, 1, 5, NULL) != HERD_OK)
            return 1;
        memset(buf, 0, sizeof(buf));
        if (herd_recv(c, buf, 1000, HERD_INT32, 1, 6, NULL) != HERD_OK)
            return 2;
        for (int i = 0; i < 1000; i++)
            if (buf[i] != i * 3 + 1)
                return 3;
    } else {
        if (herd_recv(c, buf, 1000, HERD_INT32, 0, 5, NULL) != HERD_OK)
            return 4;
        for (int i = 0; i < 1000; i++)
            buf[i] += 1;
        if (herd_send(c, buf, 1000, HERD_INT32, 0, 6, NULL) != HERD_OK)
            return 5;
    }
    return 0;
}

START_TEST(test_p2p_pingpong)
{
    ck_assert_int_eq(rt_spawn(2, p2p_main, NULL), 0);
}
END_TEST

/* Rank 0 sends tags 1, 2, 1; rank 1 receives tag 2 first (the two tag-1
 * messages wait unexpected), then both tag-1 in order. */
static int tag_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int64_t a = 11, b = 22, d = 33, x = 0, y = 0, z = 0;
    if (herd_comm_rank(c) == 0) {
        herd_req_t *r[3];
        herd_send(c, &a, 1, HERD_INT64, 1, 1, &r[0]);
        herd_send(c, &b, 1, HERD_INT64, 1, 2, &r[1]);
        herd_send(c, &d, 1, HERD_INT64, 1, 1, &r[2]);
        int bad = 0;
        for (int i = 0; i < 3; i++) {
            bad |= herd_req_wait(r[i]) != HERD_OK;
            herd_req_free(r[i]);
        }
        return bad;
    }
    usleep(50000); /* let the messages arrive before anything is posted */
    if (herd_recv(c, &y, 1, HERD_INT64, 0, 2, NULL) != HERD_OK ||
        herd_recv(c, &x, 1, HERD_INT64, 0, 1, NULL) != HERD_OK ||
        herd_recv(c, &z, 1, HERD_INT64, 0, 1, NULL) != HERD_OK)
        return 1;
    return x == 11 && y == 22 && z == 33 ? 0 : 2;
}

START_TEST(test_p2p_tags)
{
    ck_assert_int_eq(rt_spawn(2, tag_main, NULL), 0);
}
END_TEST

static int ring_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    static const uint64_t counts[] = {0, 1, 1009, 100003};
    int bad = 0;
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        rt_case_t k = {.coll = HERD_COLL_ALL_REDUCE,
                       .algo = HERD_ALGO_RING,
                       .dtype = HERD_FLOAT32,
                       .op = HERD_SUM,
                       .count = counts[i]};
        bad |= rt_run_case(c, &k);
        k.inplace = 1;
        bad |= rt_run_case(c, &k);
    }
    return bad;
}

START_TEST(test_ring_all_reduce)
{
    for (int p = 1; p <= 4; p++)
        ck_assert_msg(rt_spawn(p, ring_main, NULL) == 0, "p=%d", p);
}
END_TEST

static int fail_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    return herd_comm_rank(c) == 1 ? 7 : 0;
}

START_TEST(test_run_exit_code)
{
    int codes[2];
    ck_assert_int_ne(rt_spawn_opts(2, fail_main, NULL, NULL, codes), 0);
    ck_assert_int_eq(codes[0], 0);
    ck_assert_int_eq(codes[1], 7);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_basic");
    TCase *tc = tcase_create("basic");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_p2p_pingpong);
    tcase_add_test(tc, test_p2p_tags);
    tcase_add_test(tc, test_ring_all_reduce);
    tcase_add_test(tc, test_run_exit_code);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
