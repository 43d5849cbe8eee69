/* tests/real_tcp_calls.c - issue 15's "calls users miss" on the tcp
 * engine over loopback: every new call with checked results
 * (tests/support/calls_prog.c: uneven collectives, batch_isend_irecv with
 * sends listed first, coalesced collectives, monitored_barrier, object
 * collectives) and their argument checks, on 4 and 3 ranks; and a
 * monitored_barrier that rank 2 does not reach in time: rank 0 fails
 * with HERD_ERR_TIMEOUT naming rank 2 (wait_all_ranks 0) or ranks 1 and 2
 * (wait_all_ranks 1), the others fail too (rank 0 never releases them);
 * an all_to_all_v whose splits disagree between two ranks fails with
 * HERD_ERR_MISMATCH naming the sender. */
#include "real_tcp_harness.h"
#include "support/calls_prog.h"
#include "support/testutil.h"

static int check_prog(herd_comm_t *c, void *arg)
{
    char why[512];
    int rc = calls_prog_check(c, why, sizeof(why));
    if (!rc && (rc = calls_prog_bad_args(c, why, sizeof(why))) != 0)
        rc += 50;
    if (rc)
        fprintf(stderr, "rank %d: check %d: %s\n", herd_comm_rank(c), rc, why);
    return rc;
}

START_TEST(results_4)
{
    ck_assert_int_eq(rt_spawn(4, check_prog, NULL), 0);
}
END_TEST

START_TEST(results_3)
{
    ck_assert_int_eq(rt_spawn(3, check_prog, NULL), 0);
}
END_TEST

/* wait_all (arg): 0 names rank 2 only; 1: ranks 1 and 2 are late. */
static int mb_prog(herd_comm_t *c, void *arg)
{
    int wait_all = *(int *)arg, me = herd_comm_rank(c);
    int late = me == 2 || (wait_all && me == 1);
    if (late) {
        usleep(2500000); /* past rank 0's 1 s */
        return 0;
    }
    herd_status_t st = herd_monitored_barrier(c, 1.0, wait_all);
    const char *e = herd_last_error(c);
    if (st == HERD_OK)
        return 10;
    if (me != 0)
        return 0; /* not released: a timeout, or rank 0 gone first */
    if (st != HERD_ERR_TIMEOUT) {
        fprintf(stderr, "rank 0: %s: %s\n", herd_status_name(st), e);
        return 11;
    }
    const char *want = wait_all ? "ranks 1, 2 failed to pass monitoredBarrier"
                                : "rank 2 failed to pass monitoredBarrier in "
                                  "1000 ms";
    if (!strstr(e, want)) {
        fprintf(stderr, "rank 0: '%s' lacks '%s'\n", e, want);
        return 12;
    }
    return 0;
}

START_TEST(monitored_barrier_names_absent)
{
    int wait_all = _i, codes[RT_MAX_RANKS];
    rt_opts_t o = {.op_timeout_s = 20, .wall_s = 40};
    rt_spawn_opts(4, mb_prog, &wait_all, &o, codes);
    for (int r = 0; r < 4; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited with %d", r, codes[r]);
}
END_TEST

/* Rank 0 sends rank 1 two elements, rank 1 expects three. */
static int mismatch_prog(herd_comm_t *c, void *arg)
{
    int me = herd_comm_rank(c);
    size_t ss[2] = {1, me == 0 ? 2 : 1}, rs[2] = {me == 1 ? 3 : 1, 1};
    int32_t in[4] = {0}, out[4] = {0};
    herd_status_t st = herd_all_to_all_v(c, in, ss[0] + ss[1], ss, out,
                                         rs[0] + rs[1], rs, HERD_INT32, NULL);
    if (me == 1 && (st != HERD_ERR_MISMATCH ||
                    !strstr(herd_last_error(c), "rank 0 sent 8 bytes"))) {
        fprintf(stderr, "rank 1: %s: %s\n", herd_status_name(st),
                herd_last_error(c));
        return 1;
    }
    return 0;
}

START_TEST(split_mismatch)
{
    int codes[RT_MAX_RANKS];
    rt_opts_t o = {.op_timeout_s = 5, .wall_s = 30};
    rt_spawn_opts(2, mismatch_prog, NULL, &o, codes);
    ck_assert_msg(codes[1] == 0, "rank 1 exited with %d", codes[1]);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_calls");
    TCase *tc = tcase_create("calls");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, results_4);
    tcase_add_test(tc, results_3);
    tcase_add_loop_test(tc, monitored_barrier_names_absent, 0, 2);
    tcase_add_test(tc, split_mismatch);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
