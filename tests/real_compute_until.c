/* tests/real_compute_until.c - herd_compute_until on the tcp engine,
 * which has no exact wake-up: core/ computes in slices and tests the
 * request between them. A barrier the other rank joins after 20 ms cuts
 * rank 0's 30 s compute short; a finished request returns at once with
 * nothing done; a request completing later lets the compute run in
 * full. */
#include "real_tcp_harness.h"
#include "support/testutil.h"

static int until_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    herd_req_t *req;
    if (herd_comm_rank(c) == 1) {
        herd_compute(c, 20e-3, NULL);
        if (herd_barrier(c, NULL) != HERD_OK)
            return 1;
        herd_compute(c, 200e-3, NULL);
        return herd_barrier(c, NULL) != HERD_OK;
    }
    if (herd_barrier(c, &req) != HERD_OK)
        return 10;
    double done = -1;
    if (herd_compute_until(c, 30.0, req, "until", &done) != HERD_OK)
        return 11;
    if (!(done > 0 && done < 29.0)) /* cut short, well before 30 s */
        return 12;
    if (herd_req_wait(req) != HERD_OK)
        return 13;
    if (herd_compute_until(c, 1.0, req, NULL, &done) != HERD_OK || done != 0)
        return 14;
    herd_req_free(req);
    /* rank 1 joins 200 ms later: a 1 ms compute runs in full */
    if (herd_barrier(c, &req) != HERD_OK)
        return 15;
    if (herd_compute_until(c, 1e-3, req, NULL, &done) != HERD_OK ||
        done != 1e-3)
        return 16;
    herd_req_free(req);
    return 0;
}

START_TEST(test_sliced_until)
{
    ck_assert_int_eq(rt_spawn(2, until_main, NULL), 0);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_compute_until");
    TCase *tc = tcase_create("until");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sliced_until);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
