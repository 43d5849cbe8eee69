/* tests/mpi_flight.c - the mpi engine's flight record under mpirun
 * (core/flight.c through real/mpi/mpi_flight.c): herd_flight_dump writes
 * each rank's record (MPI's own collectives, a subgroup, states and
 * groups) and `herd diagnose` finds the dumps clean; a rank that skips a
 * collective makes the others time out, which writes their records by
 * itself (HERD_FLIGHT_DIR), and `herd diagnose` names the missing rank. */
#include <jansson.h>
#include <unistd.h>

#include "mpi_harness.h"

static int job_dump(herd_comm_t *c, void *arg)
{
    static const int members[] = {0, 2};
    int bad = 0;
    float v[256] = {0};
    herd_comm_t *g = NULL;
    bad |=
        herd_all_reduce(c, v, v, 256, HERD_FLOAT32, HERD_SUM, NULL) != HERD_OK;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    bad |=
        herd_all_reduce(c, v, v, 256, HERD_FLOAT32, HERD_SUM, NULL) != HERD_OK;
    bad |= herd_broadcast(c, v, 16, HERD_FLOAT32, 1, NULL) != HERD_OK;
    bad |= herd_new_group(c, members, 2, &g) != HERD_OK;
    if (g) {
        bad |= herd_all_reduce(g, v, v, 8, HERD_FLOAT32, HERD_MAX, NULL) !=
               HERD_OK;
        herd_comm_destroy(g);
    }
    bad |= herd_flight_dump(c, NULL) != HERD_OK;
    return mh_verdict(c, arg, bad);
}

/* Rank 2 skips the all_reduce: the others time out (2 s) and dump. */
static int job_skip(herd_comm_t *c, void *arg)
{
    int bad = herd_barrier(c, NULL) != HERD_OK;
    float v[64] = {0};
    if (herd_comm_rank(c) == 2) {
        sleep(5); /* past the others' timeout and grace period */
        bad |= herd_flight_dump(c, NULL) != HERD_OK;
        return mh_verdict(c, arg, bad);
    }
    bad |= herd_all_reduce(c, v, v, 64, HERD_FLOAT32, HERD_SUM, NULL) !=
           HERD_ERR_TIMEOUT;
    return mh_verdict(c, arg, bad);
}

static const mh_job_t jobs[] = {{"dump", job_dump, 0}, {"skip", job_skip, 2.0}};

static json_t *load_dump(const char *dir, int rank)
{
    char path[600];
    json_error_t e;
    snprintf(path, sizeof(path), "%.500s/rank%d.json", dir, rank);
    json_t *j = json_load_file(path, 0, &e);
    ck_assert_msg(j != NULL, "%s: %s", path, e.text);
    return j;
}

static const char *s_of(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int diagnose(const char *dir, char **out)
{
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "diagnose %s", dir);
    return tu_herd(cmd, out);
}

static void rm_dir(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

START_TEST(test_dump)
{
    char *dir = tu_tmpdir(), extra[700], *out = NULL;
    snprintf(extra, sizeof(extra), "-x HERD_FLIGHT_DIR=%s", dir);
    MH_JOB_OK(3, extra, "dump");
    for (int r = 0; r < 3; r++) {
        json_t *d = load_dump(dir, r);
        json_t *es = json_object_get(d, "entries");
        ck_assert_str_eq(s_of(d, "engine"), "mpi");
        ck_assert_str_eq(s_of(d, "reason"), "api");
        ck_assert_int_eq(json_integer_value(json_object_get(d, "rank")), r);
        ck_assert_uint_eq(json_array_size(es), r == 1 ? 3 : 4);
        for (size_t i = 0; i < json_array_size(es); i++)
            ck_assert_str_eq(s_of(json_array_get(es, i), "state"), "completed");
        ck_assert_str_eq(s_of(json_array_get(es, 1), "algo"), "ring");
        ck_assert_str_eq(s_of(json_array_get(es, 2), "coll"), "broadcast");
        json_decref(d);
    }
    ck_assert_int_eq(diagnose(dir, &out), 0);
    ck_assert_msg(strstr(out, "no problem found") &&
                      strstr(out, "dumps: mpi engine"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_skip_named)
{
    char *dir = tu_tmpdir(), extra[700], *out = NULL;
    snprintf(extra, sizeof(extra), "-x HERD_FLIGHT_DIR=%s", dir);
    MH_JOB_OK(3, extra, "skip");
    json_t *d = load_dump(dir, 0);
    json_t *e = json_array_get(json_object_get(d, "entries"), 1);
    ck_assert_str_eq(s_of(d, "reason"), "timeout");
    ck_assert_str_eq(s_of(e, "status"), "HERD_ERR_TIMEOUT");
    ck_assert_str_ne(s_of(e, "state"), "completed");
    json_decref(d);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: missing rank") &&
                      strstr(out, "rank 2 did not join all_reduce (seq 2") &&
                      strstr(out, "missing ranks (1): 2") &&
                      strstr(out, "waiting ranks (2): 0-1"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

static Suite *make(void)
{
    Suite *s = suite_create("mpi_flight");
    TCase *tc = tcase_create("flight");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_dump);
    tcase_add_test(tc, test_skip_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mh_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), make);
}
