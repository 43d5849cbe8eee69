/* tests/trace_calls.c - the trace format for issue 15's new collective
 * kinds: all_gather_v and reduce_scatter_v ("counts", one per rank of the
 * op's group), all_to_all_v ("splits", a row per rank) and
 * monitored_barrier ("timeout_s", "wait_all_ranks") read, written and
 * read back to the same text; bad fields named with their op; a trace
 * with them refuses to rescale; the replayer runs them on the simulator,
 * where the timeline names each kind; and the size-sweep tools (herd
 * perf, herd schedule, sweep traces) refuse them with a message. */
#include <stdlib.h>
#include <string.h>

#include <herd/sim.h>

#include "support/testutil.h"
#include "trace/replay.h"
#include "trace/scenario.h"
#include "trace/timeline.h"

static const char *text =
    "{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 4,"
    " \"groups\": [[1, 3]], \"ops\": ["
    " {\"op\": \"all_gather_v\", \"counts\": [1, 0, 3, 2],"
    "  \"dtype\": \"int32\", \"async\": \"a\"},"
    " {\"op\": \"wait\", \"async\": \"a\"},"
    " {\"op\": \"reduce_scatter_v\", \"counts\": [5, 7], \"group\": 1,"
    "  \"reduce\": \"max\"},"
    " {\"op\": \"all_to_all_v\", \"label\": \"moe\", \"splits\": [[0, 1, 2, 3],"
    "  [1, 0, 0, 4], [2, 2, 2, 2], [9, 0, 1, 0]]},"
    " {\"op\": \"monitored_barrier\", \"timeout_s\": 5,"
    "  \"wait_all_ranks\": true},"
    " {\"op\": \"monitored_barrier\"}]}";

START_TEST(round_trip)
{
    char err[512];
    trace_t *t = NULL, *t2 = NULL;
    ck_assert_msg(trace_read_json_string(text, "t", &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(trace_validate(t, err, sizeof(err)), 0);
    ck_assert_uint_eq(t->nops, 6);
    ck_assert_int_eq(t->ops[0].coll, HERD_COLL_ALL_GATHER_V);
    ck_assert_uint_eq(trace_op_vlen(t, &t->ops[0]), 4);
    ck_assert_uint_eq(t->vpool[t->ops[0].vcounts + 2], 3);
    ck_assert_uint_eq(trace_op_vlen(t, &t->ops[2]), 2);
    ck_assert_uint_eq(trace_op_vlen(t, &t->ops[3]), 16);
    ck_assert_uint_eq(t->vpool[t->ops[3].vcounts + 3 * 4], 9);
    ck_assert_uint_eq(t->ops[4].dur_ns, 5000000000ull);
    ck_assert_int_eq(t->ops[4].tag, 1);
    ck_assert_int_eq(t->ops[5].tag, 0);
    char *a = trace_dumps(t);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(strstr(a, "\"splits\": [[0, 1, 2, 3]"));
    ck_assert_ptr_nonnull(strstr(a, "\"wait_all_ranks\": true"));
    ck_assert_msg(trace_read_json_string(a, "again", &t2, err, sizeof(err)) ==
                      0,
                  "%s\n%s", err, a);
    char *b = trace_dumps(t2);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    trace_destroy(t);
    /* no rule says what new ranks would send */
    const char *v = "{\"format\": \"herd-trace\", \"version\": 1, "
                    "\"world_size\": 2, \"ops\": [{\"op\": \"all_gather_v\","
                    " \"counts\": [1, 2]}]}";
    trace_t *big = NULL;
    ck_assert_int_eq(trace_read_json_string(v, "v", &t, err, sizeof(err)), 0);
    ck_assert_int_ne(trace_rescale(t, 4, &big, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "count per rank"), "%s", err);
    trace_destroy(t);
    trace_destroy(t2);
}
END_TEST

static const struct {
    const char *json, *want;
} bad[] = {
    {"{\"op\": \"all_gather_v\", \"counts\": [1, 2]}", "4 counts"},
    {"{\"op\": \"all_gather_v\", \"count\": 4}", "not a count"},
    {"{\"op\": \"all_gather_v\"}", "needs a count per rank"},
    {"{\"op\": \"all_gather_v\", \"counts\": [1, 2, -1, 0]}", "item 2"},
    {"{\"op\": \"all_to_all_v\", \"splits\": [[1, 1, 1, 1], [1, 1, 1, 1]]}",
     "4 rows"},
    {"{\"op\": \"all_to_all_v\", \"splits\": [[1, 1, 1, 1], [1, 1, 1],"
     " [1, 1, 1, 1], [1, 1, 1, 1]]}",
     "row 1"},
    {"{\"op\": \"all_to_all_v\", \"counts\": [1, 1, 1, 1]}", "takes"},
    {"{\"op\": \"all_reduce\", \"count\": 2, \"counts\": [1, 1, 1, 1]}",
     "only the *_v"},
    {"{\"op\": \"monitored_barrier\", \"timeout_s\": -1}", "seconds"},
    {"{\"op\": \"barrier\", \"wait_all_ranks\": true}", "only "
                                                        "monitored_barrier"},
    {"{\"op\": \"all_gather_v\", \"counts\": [1, 1, 1, 1],"
     " \"per_rank\": {\"1\": {\"count\": 3}}}",
     "per_rank change"},
};

START_TEST(bad_fields)
{
    char json[512], err[512];
    snprintf(json, sizeof(json),
             "{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 4,"
             " \"ops\": [%s]}",
             bad[_i].json);
    trace_t *t = NULL;
    ck_assert_int_ne(
        trace_read_json_string(json, "b.json", &t, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, bad[_i].want) && strstr(err, "ops[0]"),
                  "%s: got '%s'", bad[_i].json, err);
    ck_assert_ptr_null(t);
}
END_TEST

static int count_colls(const trace_timeline_t *tl, int rank, herd_coll_t c)
{
    int n = 0;
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    for (size_t i = 0; i < trace_timeline_count(tl); i++)
        n += r[i].rank == rank && r[i].kind == HERD_TL_COLL && r[i].coll == c &&
             r[i].status == HERD_OK;
    return n;
}

START_TEST(replay_sim)
{
    char err[512];
    trace_t *t = NULL;
    ck_assert_msg(trace_read_json_string(text, "t", &t, err, sizeof(err)) == 0,
                  "%s", err);
    trace_timeline_t *tl;
    ck_assert_int_eq(trace_timeline_create(&tl), 0);
    trace_replay_t rp;
    trace_replay_init(&rp, t);
    herd_sim_opts_t opts;
    herd_sim_opts_init(&opts);
    opts.cluster.nodes = 1;
    opts.cluster.gpus_per_node = 4;
    opts.real_buffers = 1; /* the engine checks sizes against buffers */
    herd_init_t init = {.backend = "sim",
                        .engine_opts = &opts,
                        .timeline_cb = trace_timeline_collect,
                        .timeline_arg = tl};
    herd_run_info_t info = {0};
    ck_assert_int_eq(herd_run(&init, trace_replay_main, &rp, &info), 0);
    herd_run_info_clear(&info);
    for (int r = 0; r < 4; r++) {
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_ALL_GATHER_V), 1);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_REDUCE_SCATTER_V), r % 2);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_ALL_TO_ALL_V), 1);
        ck_assert_int_eq(count_colls(tl, r, HERD_COLL_MONITORED_BARRIER), 2);
    }
    /* the bytes a rank puts in: its own block or row */
    const herd_tl_rec_t *rec = trace_timeline_recs(tl);
    for (size_t i = 0; i < trace_timeline_count(tl); i++)
        if (rec[i].kind == HERD_TL_COLL &&
            rec[i].coll == HERD_COLL_ALL_TO_ALL_V && rec[i].rank == 3)
            ck_assert_uint_eq(rec[i].bytes, 10 * 4);
    trace_timeline_destroy(tl);
    trace_destroy(t);
}
END_TEST

START_TEST(sweep_tools_refuse)
{
    trace_sweep_t sw = {.coll = HERD_COLL_ALL_TO_ALL_V,
                        .algos = {HERD_ALGO_AUTO},
                        .nalgos = 1,
                        .min_bytes = 64,
                        .max_bytes = 1024,
                        .factor = 2,
                        .dtype = HERD_FLOAT32,
                        .iters = 1};
    trace_t *t = NULL;
    ck_assert_int_eq(trace_from_sweep(&sw, 4, &t), HERD_ERR_INVALID_ARG);
    sw.coll = HERD_COLL_MONITORED_BARRIER;
    ck_assert_int_eq(trace_from_sweep(&sw, 4, &t), HERD_ERR_INVALID_ARG);
    char *out = NULL;
    ck_assert_int_ne(tu_herd("perf --engine sim --coll all_to_all_v", &out), 0);
    ck_assert_msg(strstr(out, "counts per rank"), "%s", out);
    free(out);
    ck_assert_int_ne(tu_herd("schedule --coll reduce_scatter_v -p 4", &out), 0);
    ck_assert_msg(strstr(out, "bad value 'reduce_scatter_v'"), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_calls");
    TCase *tc = tcase_create("calls");
    tcase_add_test(tc, round_trip);
    tcase_add_loop_test(tc, bad_fields, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, replay_sim);
    tcase_add_test(tc, sweep_tools_refuse);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
