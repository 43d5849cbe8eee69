/* tests/mpi_faults.c - the mpi engine's error paths under mpirun: a rank
 * that skips a collective (MPI's own and a herd ring over point-to-point)
 * gives the others HERD_ERR_TIMEOUT naming it, and later calls
 * HERD_ERR_ABORTED; the same in a subgroup (world ranks named); a
 * receive that times out names its peer and tag; a rank that dies (mpirun
 * --enable-recovery keeps the others running) is named the same way; counts
 * beyond MPI's int range are refused with a message. */
#include <unistd.h>

#include "mpi_harness.h"

static int expect_timeout(herd_comm_t *c, herd_algo_t algo, int silent,
                          const char *job)
{
    int r = herd_comm_rank(c), bad = 0;
    float v[1024];
    for (int i = 0; i < 1024; i++)
        v[i] = (float)i;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, algo);
    bad |= herd_barrier(c, NULL) != HERD_OK;
    if (r == silent) {
        sleep(5); /* past the others' timeout and grace period */
        return mh_verdict(c, job, bad);
    }
    herd_status_t st =
        herd_all_reduce(c, v, v, 1024, HERD_FLOAT32, HERD_SUM, NULL);
    char want[64];
    snprintf(want, sizeof(want), "rank(s) %d did not join", silent);
    const char *msg = herd_last_error(c);
    printf("rank %d: %s: %s\n", r, herd_status_string(st), msg);
    bad |= st != HERD_ERR_TIMEOUT || !strstr(msg, want) ||
           !strstr(msg, "all_reduce (group 0, seq 2) timed out");
    if (algo != HERD_ALGO_AUTO && r == (silent + 1) % herd_comm_size(c)) {
        snprintf(want, sizeof(want), "waiting for data from rank(s) %d",
                 silent);
        bad |= !strstr(msg, want);
    }
    st = herd_barrier(c, NULL);
    bad |= st != HERD_ERR_ABORTED || !strstr(herd_last_error(c), "timed out");
    return mh_verdict(c, job, bad);
}

static int job_timeout_native(herd_comm_t *c, void *arg)
{
    return expect_timeout(c, HERD_ALGO_AUTO, 3, arg);
}

static int job_timeout_ring(herd_comm_t *c, void *arg)
{
    return expect_timeout(c, HERD_ALGO_RING, 2, arg);
}

/* In a subgroup {1, 2, 3} world rank 3 stays silent: ranks 1 and 2
 * name it (world ranks) in group 1; rank 0, outside, is not involved. */
static int job_timeout_group(herd_comm_t *c, void *arg)
{
    static const int members[] = {1, 2, 3};
    herd_comm_t *g = NULL;
    int r = herd_comm_rank(c);
    int bad = herd_new_group(c, members, 3, &g) != HERD_OK;
    if (!g || r == 3) {
        sleep(5);
        if (g)
            herd_comm_destroy(g);
        return mh_verdict(c, arg, bad);
    }
    int32_t v = r;
    herd_status_t st =
        herd_all_reduce(g, &v, &v, 1, HERD_INT32, HERD_MAX, NULL);
    printf("rank %d: %s: %s\n", r, herd_status_string(st), herd_last_error(g));
    bad |= st != HERD_ERR_TIMEOUT ||
           !strstr(herd_last_error(g), "all_reduce (group 1, seq 1) timed "
                                       "out") ||
           !strstr(herd_last_error(g), ": rank(s) 3 did not join");
    herd_comm_destroy(g);
    return mh_verdict(c, arg, bad);
}

/* A receive from a rank that never sends names the peer and the tag. */
static int job_timeout_p2p(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), bad = 0;
    if (r == 1) {
        sleep(3);
        return mh_verdict(c, arg, bad);
    }
    double x[4];
    herd_status_t st = herd_recv(c, x, 4, HERD_FLOAT64, 1, 5, NULL);
    printf("rank %d: %s: %s\n", r, herd_status_string(st), herd_last_error(c));
    bad |= st != HERD_ERR_TIMEOUT ||
           !strstr(herd_last_error(c),
                   "recv (group 0, tag 5) with rank 1 timed out after 2 s");
    return mh_verdict(c, arg, bad);
}

/* Rank 2 dies after the first barrier. */
static int job_dead(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), bad = herd_barrier(c, NULL) != HERD_OK;
    if (r == 2) {
        fflush(NULL);
        _exit(3);
    }
    int32_t v = r;
    herd_status_t st =
        herd_all_reduce(c, &v, &v, 1, HERD_INT32, HERD_SUM, NULL);
    printf("rank %d: %s: %s\n", r, herd_status_string(st), herd_last_error(c));
    bad |= st != HERD_ERR_TIMEOUT ||
           !strstr(herd_last_error(c), "rank(s) 2 did not join");
    return mh_verdict(c, arg, bad);
}

static int job_limits(herd_comm_t *c, void *arg)
{
    char buf[16] = {0};
    int bad = herd_all_reduce(c, buf, buf, (size_t)1 << 31, HERD_INT8, HERD_SUM,
                              NULL) != HERD_ERR_OVERFLOW;
    bad |= !strstr(herd_last_error(c), "exceeds MPI's int counts");
    /* nothing was posted: the comm still works */
    bad |= herd_barrier(c, NULL) != HERD_OK;
    return mh_verdict(c, arg, bad);
}

/* 2 s timeouts: the grace period for positions is as long, so ranks
 * that a loaded machine lets time out apart still hear each other. */
static const mh_job_t jobs[] = {{"timeout_native", job_timeout_native, 2.0},
                                {"timeout_ring", job_timeout_ring, 2.0},
                                {"timeout_group", job_timeout_group, 2.0},
                                {"timeout_p2p", job_timeout_p2p, 2.0},
                                {"dead", job_dead, 2.0},
                                {"limits", job_limits, 0}};

START_TEST(test_timeout_native)
{
    MH_JOB_OK(4, NULL, "timeout_native");
}
END_TEST

START_TEST(test_timeout_ring)
{
    MH_JOB_OK(4, NULL, "timeout_ring");
}
END_TEST

START_TEST(test_timeout_group)
{
    MH_JOB_OK(4, NULL, "timeout_group");
}
END_TEST

START_TEST(test_timeout_p2p)
{
    MH_JOB_OK(2, NULL, "timeout_p2p");
}
END_TEST

START_TEST(test_dead)
{
    char *out = NULL;
    /* Open MPI 4.1's MPI_Finalize may wait for the dead rank forever
     * (its fence), after the survivors have reported: mpirun's --timeout
     * ends the job then. The survivors' lines say whether herd named it;
     * mpirun's status only reflects the death. */
    mh_job(4, "--enable-recovery --timeout 40", "dead", &out);
    for (int r = 0; r < 4; r++) {
        char ok[64];
        snprintf(ok, sizeof(ok), "job dead rank %d ok", r);
        ck_assert_msg(r == 2 ? !strstr(out, ok) : !!strstr(out, ok), "%s", out);
    }
    free(out);
}
END_TEST

START_TEST(test_limits)
{
    MH_JOB_OK(2, NULL, "limits");
}
END_TEST

static Suite *make(void)
{
    Suite *s = suite_create("mpi_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_timeout_native);
    tcase_add_test(tc, test_timeout_ring);
    tcase_add_test(tc, test_timeout_group);
    tcase_add_test(tc, test_timeout_p2p);
    tcase_add_test(tc, test_dead);
    tcase_add_test(tc, test_limits);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mh_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), make);
}
