/* tests/trace_replay.c - the replayer on the simulator: every op kind of
 * a trace (groups, relative send/recv, async + wait, per-rank changes,
 * rank filters, markers) shows up in the timeline of the right ranks,
 * with labels and statuses; a trace for the wrong world size fails
 * cleanly. */
#include <stdlib.h>
#include <string.h>

#include <herd/sim.h>

#include "support/testutil.h"
#include "trace/replay.h"
#include "trace/timeline.h"

static const char *text =
    "{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 4,"
    " \"groups\": [[0, 2], [1, 3]], \"ops\": ["
    " {\"op\": \"mark\", \"label\": \"step\"},"
    " {\"op\": \"compute\", \"label\": \"fwd\", \"dur_us\": 1000,"
    "  \"per_rank\": {\"3\": {\"dur_us\": 3000}}},"
    " {\"op\": \"all_reduce\", \"label\": \"bucket0\", \"count\": 1024,"
    "  \"async\": \"b0\"},"
    " {\"op\": \"broadcast\", \"count\": 10, \"dtype\": \"int64\","
    "  \"root\": 1, \"group\": 1},"
    " {\"op\": \"send\", \"count\": 4, \"peer\": \"+1\", \"ranks\": [0, 2]},"
    " {\"op\": \"recv\", \"count\": 4, \"peer\": \"-1\", \"ranks\": [1, 3]},"
    " {\"op\": \"wait\", \"async\": \"b0\"},"
    " {\"op\": \"all_gather\", \"count\": 8, \"dtype\": \"int32\"},"
    " {\"op\": \"barrier\"}]}";

static int count_colls(const trace_timeline_t *tl, int rank, herd_coll_t c)
{
    int n = 0;
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    for (size_t i = 0; i < trace_timeline_count(tl); i++)
        n += r[i].rank == rank && r[i].kind == HERD_TL_COLL && r[i].coll == c &&
             r[i].status == HERD_OK;
    return n;
}

START_TEST(test_replay_sim)
{
    char err[512];
    trace_t *t = NULL;
    ck_assert_msg(trace_read_json_string(text, "t", &t, err, sizeof(err)) == 0,
                  "%s", err);
    trace_timeline_t *tl;
    ck_assert_int_eq(trace_timeline_create(&tl), 0);
    trace_replay_t rp;
    trace_replay_init(&rp, t);
    rp.steps = 2;
    herd_sim_opts_t opts;
    herd_sim_opts_init(&opts);
    opts.cluster.nodes = 1;
    opts.cluster.gpus_per_node = 4;
    herd_init_t init = {.backend = "sim",
                        .world_size = 4,
                        .engine_opts = &opts,
                        .timeline_cb = trace_timeline_collect,
                        .timeline_arg = tl};
    herd_run_info_t info = {0};
    ck_assert_int_eq(herd_run(&init, trace_replay_main, &rp, &info), 0);
    ck_assert_int_eq(info.failed_rank, -1);
    herd_run_info_clear(&info);
    for (int r = 0; r < 4; r++) {
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_ALL_REDUCE), 2);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_ALL_GATHER), 2);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_BARRIER), 2);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_BROADCAST),
                         r % 2 == 0 ? 2 : 0);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_SEND),
                         r % 2 == 0 ? 2 : 0);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_RECV),
                         r % 2 == 1 ? 2 : 0);
    }
    const herd_tl_rec_t *rec = trace_timeline_recs(tl);
    int computes = 0, marks = 0, labelled = 0;
    for (size_t i = 0; i < trace_timeline_count(tl); i++) {
        if (rec[i].kind == HERD_TL_COMPUTE) {
            computes++;
            ck_assert_str_eq(rec[i].label, "fwd");
            ck_assert_uint_eq(rec[i].end_ns - rec[i].start_ns,
                              rec[i].rank == 3 ? 3000000 : 1000000);
        }
        marks += rec[i].kind == HERD_TL_MARK;
        labelled += rec[i].kind == HERD_TL_COLL && rec[i].label &&
                    !strcmp(rec[i].label, "bucket0");
    }
    ck_assert_int_eq(computes, 8);
    ck_assert_int_eq(marks, 8);
    ck_assert_int_eq(labelled, 8);
    trace_timeline_destroy(tl);
    trace_destroy(t);
}
END_TEST

START_TEST(test_wrong_world)
{
    char err[512];
    trace_t *t = NULL;
    ck_assert_int_eq(trace_read_json_string(text, "t", &t, err, sizeof(err)),
                     0);
    trace_replay_t rp;
    trace_replay_init(&rp, t);
    herd_sim_opts_t opts;
    herd_sim_opts_init(&opts);
    herd_init_t init = {
        .backend = "sim", .world_size = 8, .engine_opts = &opts};
    herd_run_info_t info = {0};
    ck_assert_int_ne(herd_run(&init, trace_replay_main, &rp, &info), 0);
    ck_assert_int_eq(info.exit_code, 2);
    herd_run_info_clear(&info);
    trace_destroy(t);
}
END_TEST

/* A scenario's steps times a trace's ops is bounded: the text trace has
 * 9 SPMD ops on 4 ranks (36 per pass); a per-rank list counts its own. */
START_TEST(test_work_bound)
{
    char err[512];
    trace_t *t = NULL;
    ck_assert_int_eq(trace_read_json_string(text, "t", &t, err, sizeof(err)),
                     0);
    uint64_t per = (uint64_t)t->nspmd * 4;
    ck_assert_int_eq(trace_replay_check_work(t, 1000000, err, sizeof(err)),
                     HERD_OK);
    int too_many = (int)(TRACE_REPLAY_MAX_OPS / per + 1);
    ck_assert_int_eq(trace_replay_check_work(t, too_many, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "workload.steps"));
    ck_assert_ptr_nonnull(strstr(err, "the limit is 1e+09"));
    trace_destroy(t);
    /* through herd sim: 300 ops on 4 ranks x 10^6 steps, refused before
     * anything runs, naming the key */
    char *dir = tu_tmpdir(), path[1024], args[2200], *out = NULL;
    snprintf(path, sizeof(path), "%s/t.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 4, "
          "\"ops\": [", f);
    for (int i = 0; i < 300; i++)
        fprintf(f, "%s{\"op\": \"compute\", \"dur_us\": 1}", i ? ", " : "");
    fputs("]}", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/s.yaml", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("name: big\ncluster: {nodes: 1, gpus_per_node: 4}\n"
          "workload: {trace: t.json, steps: 1000000}\n", f);
    fclose(f);
    snprintf(args, sizeof(args), "sim %s -o %s/out --no-plots 2>&1", path,
             dir);
    ck_assert_int_ne(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "workload.steps") && strstr(out, "limit"), "%s",
                  out);
    free(out);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    tu_run(path, NULL);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_replay");
    TCase *tc = tcase_create("replay");
    tcase_add_test(tc, test_replay_sim);
    tcase_add_test(tc, test_wrong_world);
    tcase_add_test(tc, test_work_bound);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
