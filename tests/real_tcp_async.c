/* tests/real_tcp_async.c - asynchronous requests (many outstanding,
 * completed out of order, polled with test), subgroups that share the
 * world's sockets with their own sequence numbers (run concurrently with
 * world collectives), timeline records, modelled compute, and one 64 MiB
 * all_reduce. */
#include "real_tcp_harness.h"
#include "support/testutil.h"

#define NASYNC 12

static int async_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    static const herd_coll_t kinds[] = {
        HERD_COLL_ALL_REDUCE,     HERD_COLL_ALL_GATHER, HERD_COLL_BROADCAST,
        HERD_COLL_REDUCE_SCATTER, HERD_COLL_ALL_TO_ALL, HERD_COLL_REDUCE};
    rt_case_t k[NASYNC];
    rt_bufs_t b[NASYNC];
    herd_req_t *req[NASYNC];
    int bad = 0;
    for (int i = 0; i < NASYNC; i++) {
        k[i] = (rt_case_t){.coll = kinds[i % 6],
                           .algo = HERD_ALGO_AUTO,
                           .dtype = i % 2 ? HERD_INT32 : HERD_FLOAT64,
                           .op = HERD_SUM,
                           .count = 500 + 977 * (uint64_t)i,
                           .root = i % herd_comm_size(c)};
        rt_bufs_make(c, &k[i], &b[i]);
        bad |= rt_call(c, &k[i], b[i].in, b[i].out, &req[i]) != HERD_OK;
    }
    /* Poll the first with test, wait for the rest newest first. */
    int done = 0;
    while (!bad && !done)
        bad |= herd_req_test(req[0], &done) != HERD_OK;
    for (int i = NASYNC - 1; i >= 0; i--) {
        bad |= herd_req_wait(req[i]) != HERD_OK;
        herd_req_free(req[i]);
        bad |= rt_check(c, &k[i], &b[i]);
        rt_bufs_free(&b[i]);
    }
    return bad;
}

START_TEST(test_async_many)
{
    ck_assert_int_eq(rt_spawn(4, async_main, NULL), 0);
}
END_TEST

/* World all_reduce in flight while two disjoint subgroups and one
 * overlapping, reordered subgroup run their own collectives. */
static int groups_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    static const int ga[] = {0, 2}, gb[] = {1, 3}, gc[] = {3, 2, 1};
    herd_comm_t *a = NULL, *bg = NULL, *cg = NULL;
    int r = herd_comm_rank(c), bad = 0;
    if (herd_new_group(c, ga, 2, &a) != HERD_OK ||
        herd_new_group(c, gb, 2, &bg) != HERD_OK ||
        herd_new_group(c, gc, 3, &cg) != HERD_OK)
        return 1;
    bad |= (a != NULL) != (r == 0 || r == 2);
    bad |= (cg != NULL) != (r != 0);
    rt_case_t wk = {.coll = HERD_COLL_ALL_REDUCE,
                    .algo = HERD_ALGO_RING,
                    .dtype = HERD_FLOAT32,
                    .op = HERD_SUM,
                    .count = 30011};
    rt_bufs_t wb;
    herd_req_t *wreq;
    rt_bufs_make(c, &wk, &wb);
    bad |= rt_call(c, &wk, wb.in, wb.out, &wreq) != HERD_OK;
    herd_comm_t *mine = a ? a : bg;
    rt_case_t gk = {.coll = HERD_COLL_ALL_REDUCE,
                    .algo = HERD_ALGO_RING,
                    .dtype = HERD_INT64,
                    .op = HERD_MAX,
                    .count = 7001};
    for (int rep = 0; rep < 3; rep++)
        bad |= rt_run_case(mine, &gk);
    if (cg) {
        rt_case_t ck = {.coll = HERD_COLL_ALL_GATHER,
                        .algo = HERD_ALGO_AUTO,
                        .dtype = HERD_INT8,
                        .count = 333};
        bad |= rt_run_case(cg, &ck);
        bad |= herd_comm_world_rank(cg, 0) != 3;
    }
    bad |= herd_req_wait(wreq) != HERD_OK;
    herd_req_free(wreq);
    bad |= rt_check(c, &wk, &wb);
    rt_bufs_free(&wb);
    herd_comm_destroy(a ? a : bg);
    if (cg)
        herd_comm_destroy(cg);
    return bad;
}

START_TEST(test_subgroups)
{
    ck_assert_int_eq(rt_spawn(4, groups_main, NULL), 0);
}
END_TEST

typedef struct tl_count {
    int coll, compute, wait, mark, bad;
} tl_count_t;

static void tl_cb(const herd_tl_rec_t *rec, void *arg)
{
    tl_count_t *t = arg;
    t->coll += rec->kind == HERD_TL_COLL;
    t->compute += rec->kind == HERD_TL_COMPUTE;
    t->wait += rec->kind == HERD_TL_WAIT;
    t->mark += rec->kind == HERD_TL_MARK;
    t->bad |= rec->end_ns < rec->start_ns;
}

/* Overlap an async all_reduce with modelled compute; every op leaves a
 * timeline record with monotonic times. */
static int timeline_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    tl_count_t t = {0};
    c->tl_cb = tl_cb; /* as herd_init_t.timeline_cb would */
    c->tl_arg = &t;
    float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)herd_comm_rank(c);
    herd_req_t *req;
    herd_mark(c, "step");
    uint64_t t0 = herd_now(c);
    herd_all_reduce(c, x, x, 1000, HERD_FLOAT32, HERD_SUM, &req);
    herd_compute(c, 0.01, "fwd");
    int bad = herd_now(c) - t0 < 10000000;
    bad |= herd_req_wait(req) != HERD_OK;
    herd_req_free(req);
    herd_barrier(c, NULL);
    int p = herd_comm_size(c);
    bad |= x[999] != (float)(p * (p - 1) / 2);
    c->tl_cb = NULL;
    return bad || t.bad || t.coll != 2 || t.compute != 1 || t.mark != 1;
}

START_TEST(test_timeline_compute)
{
    ck_assert_int_eq(rt_spawn(3, timeline_main, NULL), 0);
}
END_TEST

static int large_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    rt_case_t k = {.coll = HERD_COLL_ALL_REDUCE,
                   .algo = HERD_ALGO_RING,
                   .dtype = HERD_FLOAT32,
                   .op = HERD_SUM,
                   .count = (64u << 20) / 4,
                   .inplace = 1};
    return rt_run_case(c, &k);
}

START_TEST(test_large)
{
    ck_assert_int_eq(rt_spawn(3, large_main, NULL), 0);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_async");
    TCase *tc = tcase_create("async");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_async_many);
    tcase_add_test(tc, test_subgroups);
    tcase_add_test(tc, test_timeline_compute);
    tcase_add_test(tc, test_large);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
