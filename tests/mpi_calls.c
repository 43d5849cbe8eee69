/* tests/mpi_calls.c - issue 15's "calls users miss" on the mpi engine
 * under mpirun --oversubscribe (tests/mpi_harness.h): every new call with
 * checked results (tests/support/calls_prog.c) and its argument checks on
 * 4 and 3 ranks, with MPI's own collectives (auto) and with herd's
 * schedules (ring) around them; and a monitored_barrier that rank 2
 * reaches too late: rank 0 fails with HERD_ERR_TIMEOUT naming rank 2. */
#include "mpi_harness.h"
#include "support/calls_prog.h"

static int job_calls(herd_comm_t *c, void *arg)
{
    char why[512];
    int rc = calls_prog_check(c, why, sizeof(why));
    if (!rc && (rc = calls_prog_bad_args(c, why, sizeof(why))) != 0)
        rc += 50;
    if (rc)
        fprintf(stderr, "rank %d: check %d: %s\n", herd_comm_rank(c), rc, why);
    return mh_verdict(c, arg, rc);
}

static int job_calls_ring(herd_comm_t *c, void *arg)
{
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    herd_comm_set_algo(c, HERD_COLL_ALL_GATHER, HERD_ALGO_RING);
    herd_comm_set_algo(c, HERD_COLL_BROADCAST, HERD_ALGO_BINOMIAL);
    return job_calls(c, arg);
}

static int job_monitored(herd_comm_t *c, void *arg)
{
    int me = herd_comm_rank(c), bad = 0;
    if (me == 2) {
        usleep(2500000); /* past rank 0's 1 s */
        return mh_verdict(c, arg, 0);
    }
    herd_status_t st = herd_monitored_barrier(c, 1.0, 0);
    const char *e = herd_last_error(c);
    if (me == 0 &&
        (st != HERD_ERR_TIMEOUT ||
         !strstr(e, "rank 2 failed to pass monitoredBarrier in 1000 ms"))) {
        fprintf(stderr, "rank 0: %s: %s\n", herd_status_name(st), e);
        bad = 1;
    }
    if (me != 0 && st == HERD_OK)
        bad = 1;
    mh_verdict(c, arg, bad);
    return 0; /* the others' failure is the expected one */
}

static const mh_job_t jobs[] = {{"calls", job_calls, 0},
                                {"calls_ring", job_calls_ring, 0},
                                {"monitored", job_monitored, 20}};

START_TEST(calls_4)
{
    MH_JOB_OK(4, NULL, "calls");
}
END_TEST

START_TEST(calls_3_ring)
{
    MH_JOB_OK(3, NULL, "calls_ring");
}
END_TEST

START_TEST(monitored_names_absent)
{
    char *out = NULL;
    mh_job(4, NULL, "monitored", &out);
    ck_assert_msg(mh_count(out, "job monitored rank 0 ok") == 1, "%s",
                  out ? out : "");
    free(out);
}
END_TEST

static Suite *make(void)
{
    Suite *s = suite_create("mpi_calls");
    TCase *tc = tcase_create("calls");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, calls_4);
    tcase_add_test(tc, calls_3_ring);
    tcase_add_test(tc, monitored_names_absent);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mh_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), make);
}
