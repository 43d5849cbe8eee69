/* tests/real_diagnose.c - `herd diagnose` on hand-written flight-record
 * dumps: each class (missing rank, collective / size / dtype / state
 * mismatch, stuck collective) is named with the ranks involved and the
 * waiting / missing / mismatched lists, the reference is the majority's
 * arguments, a rank whose dump says it died counts as missing, many
 * large dumps are read, agreeing dumps are clean, and bad input is an
 * error naming the file, line and column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

typedef struct fr_ent {
    int seq;
    const char *coll, *dtype, *state, *status;
    long count;
} fr_ent_t;

static const char *g_rank_state; /* "dead" for the simulator's dumps */

static void write_dump(const char *dir, int rank, int world, const fr_ent_t *e,
                       int n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/rank%d.json", dir, rank);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "{\"version\":1,\"engine\":\"tcp\",\"rank\":%d,\"world_size\":%d,"
            "%s%s%s\"groups\":[{\"id\":0,\"ranks\":[",
            rank, world, g_rank_state ? "\"rank_state\":\"" : "",
            g_rank_state ? g_rank_state : "", g_rank_state ? "\"," : "");
    for (int r = 0; r < world; r++)
        fprintf(f, "%s%d", r ? "," : "", r);
    fprintf(f, "]}],\"entries\":[");
    for (int i = 0; i < n; i++)
        fprintf(f,
                "%s{\"id\":%d,\"group\":0,\"seq\":%d,\"coll\":\"%s\","
                "\"algo\":\"ring\",\"dtype\":\"%s\",\"op\":\"sum\","
                "\"root\":-1,\"count\":%ld,\"state\":\"%s\","
                "\"status\":\"%s\"}",
                i ? "," : "", i + 1, e[i].seq, e[i].coll, e[i].dtype,
                e[i].count, e[i].state, e[i].status ? e[i].status : "HERD_OK");
    fprintf(f, "]}\n");
    fclose(f);
}

static int diagnose(const char *dir, char **out)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "%s diagnose %s 2>&1", tu_herd_binary(), dir);
    return tu_run(cmd, out);
}

static void cleanup(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tu_run(cmd, NULL);
    free(dir);
}

#define OK_AR(s)                                                               \
    {                                                                          \
        s, "all_reduce", "float32", "completed", NULL, 1024                    \
    }

/* Rank 2's record stops where ranks 0 and 1 went on to seq 3. */
START_TEST(test_missing_rank)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {
        OK_AR(1), OK_AR(2), {3, "broadcast", "int32", "started", NULL, 10}};
    write_dump(dir, 0, 3, a, 3);
    write_dump(dir, 1, 3, a, 3);
    write_dump(dir, 2, 3, a, 2);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: missing rank") &&
                      strstr(out, "rank 2 did not join broadcast (seq 3"),
                  "%s", out);
    free(out);
    cleanup(dir);
}
END_TEST

static void two_ranks(const fr_ent_t *b, const char *want)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {OK_AR(1), OK_AR(2)};
    fr_ent_t bb[] = {OK_AR(1), *b};
    write_dump(dir, 0, 2, a, 2);
    write_dump(dir, 1, 2, bb, 2);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, want) && strstr(out, "rank 1: "), "%s", out);
    free(out);
    cleanup(dir);
}

START_TEST(test_collective_mismatch)
{
    fr_ent_t b = {2, "all_gather", "float32", "started", NULL, 1024};
    two_ranks(&b, "class: collective mismatch");
}
END_TEST

START_TEST(test_size_mismatch)
{
    fr_ent_t b = {2, "all_reduce", "float32", "started", NULL, 2048};
    two_ranks(&b, "class: size mismatch");
}
END_TEST

START_TEST(test_dtype_mismatch)
{
    fr_ent_t b = {2, "all_reduce", "float16", "started", NULL, 1024};
    two_ranks(&b, "class: dtype mismatch");
}
END_TEST

START_TEST(test_state_mismatch)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {OK_AR(1), OK_AR(2)};
    fr_ent_t b[] = {
        OK_AR(1),
        {2, "all_reduce", "float32", "started", "HERD_ERR_TIMEOUT", 1024}};
    write_dump(dir, 0, 2, a, 2);
    write_dump(dir, 1, 2, b, 2);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: state mismatch"), "%s", out);
    free(out);
    cleanup(dir);
}
END_TEST

START_TEST(test_clean_and_bad_input)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {OK_AR(1), OK_AR(2)};
    write_dump(dir, 0, 2, a, 2);
    write_dump(dir, 1, 2, a, 2);
    ck_assert_int_eq(diagnose(dir, &out), 0);
    ck_assert_msg(strstr(out, "no problem found"), "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof(path), "%s/rank1.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"rank\": 1,\n  \"world_size\": }\n");
    fclose(f);
    ck_assert_int_eq(diagnose(dir, &out), 2);
    ck_assert_msg(strstr(out, "rank1.json:2:"), "%s", out);
    free(out);
    cleanup(dir);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "%s diagnose 2>&1", tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, NULL), 2);
}
END_TEST

/* Rank 0 alone posts another size: the three others are the reference
 * and rank 0 is the one named. */
START_TEST(test_majority_names_the_odd_one)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {OK_AR(1),
                    {2, "all_reduce", "float32", "started", NULL, 1024}};
    fr_ent_t odd[] = {OK_AR(1),
                      {2, "all_reduce", "float32", "started", NULL, 4096}};
    write_dump(dir, 0, 4, odd, 2);
    for (int r = 1; r < 4; r++)
        write_dump(dir, r, 4, a, 2);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: size mismatch") &&
                      strstr(out, "  rank 1: all_reduce (seq 2, count 1024") &&
                      strstr(out, "  rank 0: all_reduce (seq 2, count 4096") &&
                      strstr(out, "waiting ranks (4): 0-3") &&
                      strstr(out, "missing ranks (0): none") &&
                      strstr(out, "mismatched ranks (1): 0 (their arguments "
                                  "differ from rank 1's)"),
                  "%s", out);
    free(out);
    cleanup(dir);
}
END_TEST

/* Every rank joined the last all_reduce and none finished it. */
START_TEST(test_stuck_collective)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {OK_AR(1),
                    {2, "all_reduce", "float32", "started", NULL, 1024}};
    for (int r = 0; r < 3; r++)
        write_dump(dir, r, 3, a, 2);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: stuck collective") &&
                      strstr(out, "all 3 ranks joined all_reduce (seq 2") &&
                      strstr(out, "waiting ranks (3): 0-2"),
                  "%s", out);
    free(out);
    cleanup(dir);
}
END_TEST

/* The simulator writes a dead rank's dump too: a rank that died inside
 * the collective is missing from it, as the simulator reports it; two
 * ranks that never came are both listed. */
START_TEST(test_dead_and_several_missing)
{
    char *dir = tu_tmpdir(), *out = NULL;
    fr_ent_t a[] = {OK_AR(1),
                    {2, "all_reduce", "float32", "started", NULL, 1024}};
    write_dump(dir, 0, 4, a, 2);
    write_dump(dir, 2, 4, a, 2);
    write_dump(dir, 3, 4, a, 1);
    g_rank_state = "dead";
    write_dump(dir, 1, 4, a, 2);
    g_rank_state = NULL;
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: missing rank") &&
                      strstr(out, "rank 1 died in all_reduce (seq 2") &&
                      strstr(out, "rank 3 did not join all_reduce (seq 2") &&
                      strstr(out, "waiting ranks (2): 0,2") &&
                      strstr(out, "missing ranks (2): 1,3"),
                  "%s", out);
    free(out);
    cleanup(dir);
}
END_TEST

/* 64 ranks of 1000 entries each: read, indexed and checked (the lookups
 * are binary searches; a scan per lookup took minutes at this size). */
START_TEST(test_many_large_dumps)
{
    char *dir = tu_tmpdir(), *out = NULL;
    enum { W = 64, N = 1000 };
    fr_ent_t *a = malloc(N * sizeof(*a));
    for (int i = 0; i < N; i++)
        a[i] = (fr_ent_t)OK_AR(i + 1);
    for (int r = 0; r < W; r++)
        write_dump(dir, r, W, a, r == 17 ? N - 1 : N);
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "rank 17 did not join all_reduce (seq 1000") &&
                      strstr(out, "missing ranks (1): 17"),
                  "%s", out);
    free(out);
    free(a);
    cleanup(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("real_diagnose");
    TCase *tc = tcase_create("diagnose");
    tcase_add_test(tc, test_missing_rank);
    tcase_add_test(tc, test_collective_mismatch);
    tcase_add_test(tc, test_size_mismatch);
    tcase_add_test(tc, test_dtype_mismatch);
    tcase_add_test(tc, test_state_mismatch);
    tcase_add_test(tc, test_clean_and_bad_input);
    tcase_add_test(tc, test_majority_names_the_odd_one);
    tcase_add_test(tc, test_stuck_collective);
    tcase_add_test(tc, test_dead_and_several_missing);
    tcase_add_test(tc, test_many_large_dumps);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
