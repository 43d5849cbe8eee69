/* tests/ddp_scenarios.c - every DDP hang or error scenario in scenarios/
 * runs on the simulator through `herd ddp run` and its diagnosis names
 * what a real job would hit: the reduction error on the ranks without
 * gradients and the ranks left waiting, uneven data, rank-0-only
 * collectives, checkpoints with and without a barrier; plus the working
 * scenarios (find_unused_parameters, no_sync, a straggler). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

typedef struct run {
    int rc;
    json_t *j;
    const char *diag;
    char *out;
} run_t;

static void run_scenario(const char *name, const char *extra, run_t *r)
{
    char scn[1024], rel[256], cmd[4096];
    char *dir = tu_tmpdir();
    snprintf(rel, sizeof(rel), "scenarios/%s.yaml", name);
    snprintf(cmd, sizeof(cmd), "%s ddp run %s --json %s/r.json %s 2>&1",
             tu_herd_binary(), tu_src_path(scn, sizeof(scn), rel), dir,
             extra ? extra : "");
    r->rc = tu_run(cmd, &r->out);
    snprintf(cmd, sizeof(cmd), "%s/r.json", dir);
    json_error_t je;
    r->j = json_load_file(cmd, 0, &je);
    ck_assert_msg(r->j, "%s: no JSON report (rc %d): %s", name, r->rc, r->out);
    r->diag = json_string_value(json_object_get(r->j, "diagnosis"));
    ck_assert_ptr_nonnull(r->diag);
    remove(cmd);
    remove(dir);
    free(dir);
}

static void run_done(run_t *r)
{
    json_decref(r->j);
    free(r->out);
}

static const char *status(const run_t *r)
{
    return json_string_value(json_object_get(r->j, "status"));
}

static void expect(const run_t *r, const char *needle)
{
    ck_assert_msg(strstr(r->diag, needle), "diagnosis lacks '%s':\n%s", needle,
                  r->diag);
}

START_TEST(test_unused_param_all_ranks)
{
    run_t r;
    run_scenario("ddp-unused-param", NULL, &r);
    ck_assert_int_eq(r.rc, 1);
    /* every rank raises; nobody is left waiting */
    ck_assert_str_eq(status(&r), "HERD_ERR_RANK_EXITED");
    ck_assert_uint_eq(json_array_size(json_object_get(r.j, "raised_ranks")), 8);
    expect(&r, "ranks 0-7 raised at the next forward");
    expect(&r, "Expected to have finished reduction in the prior iteration");
    expect(&r, "did not receive grad for rank 0: 100");
    expect(&r, "nobody is left waiting");
    ck_assert_ptr_null(strstr(r.diag, "blocked in"));
    run_done(&r);
}
END_TEST

START_TEST(test_unused_param_one_rank_hangs)
{
    run_t r;
    run_scenario("ddp-unused-param-rank", NULL, &r);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(status(&r), "HERD_ERR_HANG");
    json_t *raised = json_object_get(r.j, "raised_ranks");
    ck_assert_uint_eq(json_array_size(raised), 1);
    ck_assert_int_eq(json_integer_value(json_array_get(raised, 0)), 3);
    expect(&r, "rank 3 raised at the next forward");
    expect(&r, "ranks 0-2,4-7 stopped on an error: blocked in all_reduce "
               "'bucket 0' of iteration 0");
    expect(&r, "missing rank");
    run_done(&r);
}
END_TEST

START_TEST(test_find_unused_fixes_it)
{
    run_t r;
    run_scenario("ddp-find-unused", NULL, &r);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    ck_assert_str_eq(status(&r), "HERD_OK");
    ck_assert_str_eq(r.diag, "");
    /* never rebuilt: the [1 MiB, cap] construction buckets stay */
    ck_assert_int_eq(
        json_integer_value(json_object_get(r.j, "buckets")),
        json_integer_value(json_object_get(r.j, "initial_buckets")));
    ck_assert_int_gt(json_integer_value(json_object_get(r.j, "buckets")), 1);
    run_done(&r);
}
END_TEST

START_TEST(test_uneven_shards_hang)
{
    run_t r;
    run_scenario("ddp-uneven-shards", NULL, &r);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(status(&r), "HERD_ERR_HANG");
    expect(&r, "rank 7 finished their data");
    expect(&r, "6 to 8 iterations");
    expect(&r, "of iteration 6");
    run_done(&r);
}
END_TEST

START_TEST(test_join_fixes_uneven_shards)
{
    run_t r;
    run_scenario("ddp-uneven-join", NULL, &r);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    ck_assert_str_eq(status(&r), "HERD_OK");
    ck_assert_str_eq(r.diag, "");
    /* rank 7 shadows steps 6 and 7: every rank completes all 8 */
    json_t *steps = json_object_get(r.j, "steps");
    ck_assert_uint_eq(json_array_size(steps), 8);
    for (size_t i = 0; i < 8; i++)
        ck_assert(json_is_true(
            json_object_get(json_array_get(steps, i), "complete")));
    run_done(&r);
}
END_TEST

START_TEST(test_rank0_eval_collective)
{
    run_t r;
    run_scenario("ddp-rank0-eval", NULL, &r);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(status(&r), "HERD_ERR_HANG");
    expect(&r, "rank 0 stopped on an error: blocked in all_reduce 'eval "
               "metric' of iteration 1");
    expect(&r, "collective mismatch");
    run_done(&r);
}
END_TEST

START_TEST(test_checkpoint_barrier_variants)
{
    run_t r;
    run_scenario("ddp-checkpoint-barrier", NULL, &r);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    /* the checkpoint steps (1, 3) carry the 2 s save on every rank */
    json_t *steps = json_object_get(r.j, "steps");
    double s1 =
        json_real_value(json_object_get(json_array_get(steps, 1), "step_s"));
    double s2 =
        json_real_value(json_object_get(json_array_get(steps, 2), "step_s"));
    ck_assert_double_gt(s1, 2.0);
    ck_assert_double_lt(s2, 1.0);
    run_done(&r);

    run_scenario("ddp-checkpoint-rank0-barrier", NULL, &r);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(status(&r), "HERD_ERR_HANG");
    expect(&r, "blocked in barrier 'checkpoint barrier'");
    expect(&r, "collective mismatch");
    run_done(&r);

    run_scenario("ddp-checkpoint-no-barrier", NULL, &r);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(status(&r), "HERD_ERR_TIMEOUT");
    expect(&r, "rank 0 stopped on an error: stopped in compute 'checkpoint'");
    expect(&r, "ranks 1-7 stopped on an error: blocked in");
    run_done(&r);
    /* a save shorter than the timeout only delays the others */
    run_scenario("ddp-checkpoint-no-barrier", "--set ddp.checkpoint_s=5", &r);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    run_done(&r);
}
END_TEST

START_TEST(test_straggler_and_no_sync)
{
    run_t r;
    run_scenario("ddp-resnet50-8gpu", NULL, &r);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    json_t *steady = json_object_get(r.j, "steady");
    ck_assert_int_eq(
        json_integer_value(json_object_get(steady, "critical_rank")), 5);
    double ov = json_real_value(json_object_get(steady, "overlap"));
    ck_assert(ov > 0 && ov <= 1);
    run_done(&r);
    run_scenario("ddp-no-sync", NULL, &r);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    json_t *steps = json_object_get(r.j, "steps");
    ck_assert_uint_eq(json_array_size(steps), 8);
    /* one optimizer step spans the 4 accumulated iterations */
    steady = json_object_get(r.j, "steady");
    ck_assert_double_gt(
        json_real_value(json_object_get(steady, "optimizer_step_s")),
        2 * json_real_value(json_object_get(steady, "step_s")));
    for (size_t i = 0; i < 8; i++)
        ck_assert_int_eq(
            json_is_true(json_object_get(json_array_get(steps, i), "sync")),
            i % 4 == 3);
    run_done(&r);
}
END_TEST

START_TEST(test_timeline_output)
{
    char *dir = tu_tmpdir(), cmd[2048], scn[1024], *out = NULL;
    snprintf(
        cmd, sizeof(cmd),
        "%s ddp run %s --timeline %s/tl.json --quiet 2>/dev/null && grep -c "
        "'bucket 3' %s/tl.json",
        tu_herd_binary(),
        tu_src_path(scn, sizeof(scn), "scenarios/ddp-resnet50-8gpu.yaml"), dir,
        dir);
    ck_assert_msg(tu_run(cmd, &out) == 0, "%s", out);
    ck_assert_int_gt(atoi(out), 0);
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

START_TEST(test_bad_input)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s ddp run --set ddp.bucket_cap_mb=zero 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "bucket_cap_mb"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s ddp run --set ddp.model=nosuch 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "nosuch"));
    free(out);
    snprintf(cmd, sizeof(cmd),
             "%s ddp run --set ddp.unused_params=[100000] 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "unused_params"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s ddp run --set ddp.shard_sizes=[1,2] 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "2 entries for 8 ranks"));
    free(out);
    /* a bad value in a scenario file names the file, line and column */
    char *dir = tu_tmpdir(), path[1200];
    snprintf(path, sizeof(path), "%s/bad.yaml", dir);
    FILE *f = fopen(path, "w");
    fputs("name: bad\nworkload:\n  ddp:\n    model: gpt2_small\n"
          "    comm_hook: fp8\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s ddp run %s 2>&1", tu_herd_binary(), path);
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "bad.yaml:5:") && strstr(out, "comm_hook"), "%s",
                  out);
    free(out);
    remove(path);
    remove(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_scenarios");
    TCase *tc = tcase_create("scenarios");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_unused_param_all_ranks);
    tcase_add_test(tc, test_unused_param_one_rank_hangs);
    tcase_add_test(tc, test_find_unused_fixes_it);
    tcase_add_test(tc, test_uneven_shards_hang);
    tcase_add_test(tc, test_join_fixes_uneven_shards);
    tcase_add_test(tc, test_rank0_eval_collective);
    tcase_add_test(tc, test_checkpoint_barrier_variants);
    tcase_add_test(tc, test_straggler_and_no_sync);
    tcase_add_test(tc, test_timeline_output);
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
