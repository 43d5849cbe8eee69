/* tests/real_tcp_faults.c - failures are errors, never hangs: a rank
 * killed mid-collective makes every other rank fail with an error naming
 * it; a rank that never joins makes the others time out naming it; a size
 * mismatch is reported; flight records are dumped (on timeout and on
 * SIGUSR1) and `herd diagnose` names the missing rank. */
#include <sys/stat.h>

#include "real_tcp_harness.h"
#include "support/testutil.h"

static int named(const herd_comm_t *c, const char *what)
{
    const char *e = herd_last_error(c);
    if (strstr(e, what))
        return 1;
    fprintf(stderr, "rank %d: error '%s' does not name '%s'\n",
            herd_comm_rank(c), e, what);
    return 0;
}

/* Rank 2 starts a large all_reduce, moves some bytes, and dies. */
static int kill_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    size_t n = 8u << 20;
    float *x = calloc(n, sizeof(float));
    herd_all_reduce(c, x, x, 1000, HERD_FLOAT32, HERD_SUM, NULL);
    if (herd_comm_rank(c) == 2) {
        herd_req_t *req; /* posting sends the first chunk, then death */
        herd_all_reduce(c, x, x, n, HERD_FLOAT32, HERD_SUM, &req);
        raise(SIGKILL);
    }
    herd_status_t st =
        herd_all_reduce(c, x, x, n, HERD_FLOAT32, HERD_SUM, NULL);
    free(x);
    if (st != HERD_ERR_PEER_FAILED) {
        fprintf(stderr, "rank %d: got %s (%s)\n", herd_comm_rank(c),
                herd_status_name(st), herd_last_error(c));
        return 1;
    }
    return named(c, "rank 2") ? 0 : 2;
}

START_TEST(test_killed_rank)
{
    int codes[4];
    rt_opts_t o = {.op_timeout_s = 20, .wall_s = 60};
    rt_spawn_opts(4, kill_main, NULL, &o, codes);
    ck_assert_int_eq(codes[0], 0);
    ck_assert_int_eq(codes[1], 0);
    ck_assert_int_eq(codes[2], -1);
    ck_assert_int_eq(codes[3], 0);
}
END_TEST

static void set_flight_dir(int rank, void *arg)
{
    (void)rank;
    setenv("HERD_FLIGHT_DIR", arg, 1);
}

/* Rank 1 does two collectives, then skips the third (it sleeps, dumps its
 * flight record on request, and leaves). */
static int missing_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int32_t v[64] = {0};
    herd_all_reduce(c, v, v, 64, HERD_INT32, HERD_SUM, NULL);
    herd_barrier(c, NULL);
    if (herd_comm_rank(c) == 1) {
        /* Stay away until the others have timed out (their dumps exist),
         * so they see a silent rank, not one that left. */
        char p0[600], p2[600];
        struct stat sb;
        snprintf(p0, sizeof(p0), "%s/rank0.json", (char *)arg);
        snprintf(p2, sizeof(p2), "%s/rank2.json", (char *)arg);
        for (int i = 0; i < 600; i++) {
            if (stat(p0, &sb) == 0 && stat(p2, &sb) == 0)
                break;
            usleep(50000);
        }
        usleep(100000);
        return herd_flight_dump(c, NULL) == HERD_OK ? 0 : 3;
    }
    herd_status_t st = herd_all_reduce(c, v, v, 64, HERD_INT32, HERD_SUM, NULL);
    if (st != HERD_ERR_TIMEOUT)
        return 1;
    return named(c, "rank(s) 1 did not join") ? 0 : 2;
}

START_TEST(test_missing_rank)
{
    char *dir = tu_tmpdir();
    int codes[3];
    rt_opts_t o = {
        .op_timeout_s = 1.0, .wall_s = 60, .child_cb = set_flight_dir};
    ck_assert_int_eq(rt_spawn_opts(3, missing_main, dir, &o, codes), 0);
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s diagnose %s 2>&1", tu_herd_binary(), dir);
    int rc = tu_run(cmd, &out);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "class: missing rank") &&
                      strstr(out, "rank 1 did not join all_reduce (seq 3"),
                  "%s", out);
    free(out);
    /* Without rank 1's dump, the missing dump is named. */
    snprintf(cmd, sizeof(cmd), "rm %s/rank1.json && %s diagnose %s 2>&1", dir,
             tu_herd_binary(), dir);
    rc = tu_run(cmd, &out);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "no dump from rank(s) 1"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

static int mismatch_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    float x[200] = {0};
    size_t n = herd_comm_rank(c) == 0 ? 100 : 200;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    herd_status_t st =
        herd_all_reduce(c, x, x, n, HERD_FLOAT32, HERD_SUM, NULL);
    return st == HERD_ERR_MISMATCH && named(c, "size mismatch") ? 0 : 1;
}

START_TEST(test_size_mismatch)
{
    int codes[2];
    rt_opts_t o = {.op_timeout_s = 5, .wall_s = 30};
    ck_assert_int_eq(rt_spawn_opts(2, mismatch_main, NULL, &o, codes), 0);
}
END_TEST

/* SIGUSR1 dumps the record; dumps taken by herd_flight_dump() after a
 * barrier diagnose clean. */
static int sigusr_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    float x = 1;
    herd_all_reduce(c, &x, &x, 1, HERD_FLOAT32, HERD_SUM, NULL);
    raise(SIGUSR1);
    char path[600];
    snprintf(path, sizeof(path), "%s/rank%d.json", (char *)arg,
             herd_comm_rank(c));
    struct stat sb;
    /* The engine's loop handles the signal when it next runs. */
    int32_t found = 0;
    for (int i = 0; i < 200 && !found; i++) {
        found = stat(path, &sb) == 0;
        herd_all_reduce(c, &found, &found, 1, HERD_INT32, HERD_MIN, NULL);
    }
    /* Dumps taken at one point of the program agree. */
    herd_barrier(c, NULL);
    return found && herd_flight_dump(c, NULL) == HERD_OK ? 0 : 1;
}

START_TEST(test_sigusr1_dump)
{
    char *dir = tu_tmpdir();
    int codes[2];
    rt_opts_t o = {.wall_s = 30, .child_cb = set_flight_dir};
    ck_assert_int_eq(rt_spawn_opts(2, sigusr_main, dir, &o, codes), 0);
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s diagnose %s 2>&1", tu_herd_binary(), dir);
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0 && strstr(out, "no problem found"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s diagnose /nonexistent-dir 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, NULL), 2);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_killed_rank);
    tcase_add_test(tc, test_missing_rank);
    tcase_add_test(tc, test_size_mismatch);
    tcase_add_test(tc, test_sigusr1_dump);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
