/* tests/trace_format.c - the trace format: reading every op kind, SPMD
 * with per-rank differences, round trips (read -> write -> read gives the
 * same text), a golden file, malformed input with the place named,
 * rescaling (data-parallel scales, rank-specific p2p is mapped or
 * rejected) and the sweep generator. */
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"
#include "trace/trace.h"

/* A trace that uses every feature. Written as herd writes it, so it is
 * also the golden output of trace_dumps. */
static const char *golden =
    "{\n"
    "  \"format\": \"herd-trace\",\n"
    "  \"version\": 1,\n"
    "  \"name\": \"every \\\"kind\\\"\",\n"
    "  \"world_size\": 4,\n"
    "  \"ranks_per_node\": 2,\n"
    "  \"groups\": [[0, 2], [1, 3]],\n"
    "  \"ops\": [\n"
    "    {\"op\": \"mark\", \"label\": \"step\"},\n"
    "    {\"op\": \"compute\", \"label\": \"fwd\", \"dur_ns\": 1500000, "
    "\"per_rank\": {\"3\": {\"dur_ns\": 3000000}}},\n"
    "    {\"op\": \"all_reduce\", \"label\": \"bucket0\", \"count\": 1024, "
    "\"dtype\": \"float32\", \"reduce\": \"sum\", \"async\": \"b0\"},\n"
    "    {\"op\": \"broadcast\", \"count\": 10, \"dtype\": \"int64\", "
    "\"root\": 1, \"group\": 1, \"algo\": \"tree\"},\n"
    "    {\"op\": \"send\", \"count\": 4, \"dtype\": \"float16\", \"peer\": "
    "\"+1\", \"tag\": 7, \"ranks\": [0, 2]},\n"
    "    {\"op\": \"recv\", \"count\": 4, \"dtype\": \"float16\", \"peer\": "
    "\"-1\", \"tag\": 7, \"ranks\": [1, 3]},\n"
    "    {\"op\": \"wait\", \"async\": \"b0\"},\n"
    "    {\"op\": \"reduce_scatter\", \"count\": 8, \"dtype\": \"int32\", "
    "\"reduce\": \"bxor\", \"per_rank\": {\"2\": {\"skip\": true}}},\n"
    "    {\"op\": \"barrier\"},\n"
    "    {\"op\": \"wait_all\"}\n"
    "  ],\n"
    "  \"rank_ops\": {\n"
    "    \"1\": [\n"
    "      {\"op\": \"compute\", \"dur_ns\": 7},\n"
    "      {\"op\": \"barrier\"}\n"
    "    ]\n"
    "  }\n"
    "}\n";

START_TEST(test_golden_round_trip)
{
    char err[512] = "";
    trace_t *t = NULL;
    ck_assert_msg(
        trace_read_json_string(golden, "g.json", &t, err, sizeof(err)) == 0,
        "%s", err);
    ck_assert_int_eq(t->world_size, 4);
    ck_assert_uint_eq(t->nspmd, 10);
    ck_assert_uint_eq(t->ngroups, 2);
    char *text = trace_dumps(t);
    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq(text, golden);
    trace_t *t2 = NULL;
    ck_assert_int_eq(
        trace_read_json_string(text, "again", &t2, err, sizeof(err)), 0);
    char *text2 = trace_dumps(t2);
    ck_assert_str_eq(text, text2);
    free(text);
    free(text2);
    trace_destroy(t2);
    trace_destroy(t);
}
END_TEST

START_TEST(test_per_rank)
{
    char err[512];
    trace_t *t = NULL;
    ck_assert_int_eq(
        trace_read_json_string(golden, "g.json", &t, err, sizeof(err)), 0);
    const trace_op_t *ops;
    uint32_t n;
    trace_op_t op;
    trace_rank_ops(t, 3, &ops, &n);
    ck_assert_uint_eq(n, 10);
    ck_assert(trace_op_for_rank(t, &ops[1], 3, &op));
    ck_assert_uint_eq(op.dur_ns, 3000000);
    ck_assert(trace_op_for_rank(t, &ops[1], 0, &op));
    ck_assert_uint_eq(op.dur_ns, 1500000);
    ck_assert(!trace_op_for_rank(t, &ops[4], 3, &op)); /* send: 0, 2 */
    ck_assert(trace_op_for_rank(t, &ops[4], 2, &op));
    ck_assert_int_eq(trace_op_peer(&op, 2, 4), 3);
    ck_assert(trace_op_for_rank(t, &ops[5], 3, &op));
    ck_assert_int_eq(trace_op_peer(&op, 3, 4), 2);
    ck_assert(!trace_op_for_rank(t, &ops[7], 2, &op)); /* skipped */
    trace_rank_ops(t, 1, &ops, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(ops[0].dur_ns, 7);
    ck_assert_str_eq(trace_string(t, ops[0].label == TRACE_NONE
                                         ? t->ops[0].label
                                         : ops[0].label),
                     "step");
    trace_destroy(t);
}
END_TEST

static const struct {
    const char *json;
    const char *expect;
} bad[] = {
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\"}]}",
     "b.json: ops[0].count: missing"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"count\": \"8\"}]}",
     "ops[0].count: expected an integer"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"jump\"}]}",
     "ops[0].op: expected an op"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"compute\", \"dur_ns\": 5, \"count\": 3}]}",
     "ops[0].count: unknown key for this op"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"broadcast\", \"count\": 4, \"root\": 2}]}",
     "ops[0].root: expected a rank in [0, 2)"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"count\": 4, \"dtype\": "
     "\"float32\", \"reduce\": \"band\"}]}",
     "bitwise ops need an integer dtype"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"wait\", \"async\": \"x\"}]}",
     "wait for async id 'x' that is not outstanding"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"count\": 1, \"async\": \"a\"}, "
     "{\"op\": \"all_reduce\", \"count\": 1, \"async\": \"a\"}]}",
     "async id 'a' posted again before it was waited"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"send\", \"count\": 1, \"peer\": 0}]}",
     "send to itself"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"count\": 1, \"per_rank\": "
     "{\"7\": {\"count\": 2}}}]}",
     "per_rank: key '7': expected a rank in [0, 2)"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"bytes\": 6}]}",
     "bytes: 6 is not a multiple of the float32 size"},
    {"{\"format\": \"herd-trace\", \"version\": 9, \"world_size\": 2, "
     "\"ops\": []}",
     "version: 9 is newer than this herd reads (1)"},
    {"{\"format\": \"chrome\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": []}",
     "format: expected \"herd-trace\""},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 0, "
     "\"ops\": []}",
     "world_size: 0 is out of range"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"count\": "
     "99999999999999999999999}]}",
     "b.json:1:"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_reduce\", \"count\": 1125899906842625}]}",
     "count: 1125899906842625 is out of range"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"all_re",
     "b.json:1:"},
    {"\x01garbage", "b.json:1:1:"},
    {"", "b.json:"},
    {"[1, 2]", "expected a JSON object"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"opz\": []}",
     "opz: unknown top-level key"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"groups\": [[0, 0]], \"ops\": []}",
     "groups: [0][1]: expected a distinct rank"},
    {"{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2, "
     "\"ops\": [{\"op\": \"compute\", \"dur_us\": -4}]}",
     "dur_us: expected a non-negative number"},
};

START_TEST(test_bad)
{
    char err[512] = "";
    trace_t *t = NULL;
    herd_status_t st =
        trace_read_json_string(bad[_i].json, "b.json", &t, err, sizeof(err));
    ck_assert_msg(st != 0, "case %d accepted", _i);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, bad[_i].expect), "case %d: '%s'", _i, err);
}
END_TEST

START_TEST(test_deep_nesting)
{
    size_t n = 50000;
    char *j = malloc(n + 64);
    strcpy(j, "{\"ops\": ");
    size_t k = strlen(j);
    memset(j + k, '[', n);
    j[k + n] = '\0';
    char err[512] = "";
    trace_t *t = NULL;
    ck_assert_int_ne(trace_read_json_string(j, "d.json", &t, err, sizeof(err)),
                     0);
    ck_assert_msg(strstr(err, "d.json:1:"), "%s", err);
    free(j);
}
END_TEST

START_TEST(test_shipped)
{
    static const char *files[] = {"scenarios/traces/dp-steps.json",
                                  "scenarios/traces/mismatch.json"};
    for (size_t i = 0; i < 2; i++) {
        char path[1024], err[512];
        trace_t *t = NULL;
        tu_src_path(path, sizeof(path), files[i]);
        ck_assert_msg(trace_read_json(path, &t, err, sizeof(err)) == 0, "%s",
                      err);
        trace_destroy(t);
    }
    char err[512];
    trace_t *t = NULL;
    ck_assert_int_eq(trace_read_json("/nonexistent.json", &t, err, sizeof(err)),
                     HERD_ERR_IO);
}
END_TEST

static const char *p2p =
    "{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 4, "
    "\"ops\": [{\"op\": \"all_reduce\", \"count\": 64},"
    " {\"op\": \"compute\", \"dur_ns\": 10, \"per_rank\": {\"3\": "
    "{\"dur_ns\": 99}}}],"
    " \"rank_ops\": {\"0\": [{\"op\": \"send\", \"count\": 2, \"peer\": 1}],"
    " \"1\": [{\"op\": \"recv\", \"count\": 2, \"peer\": 0}]}}";

START_TEST(test_rescale)
{
    char err[512] = "";
    trace_t *t = NULL, *r = NULL;
    ck_assert_int_eq(trace_read_json_string(p2p, "p", &t, err, sizeof(err)), 0);
    /* Tiling to 8: rank 4 sends to 5, rank 7 computes 99 ns. */
    ck_assert_msg(trace_rescale(t, 8, &r, err, sizeof(err)) == 0, "%s", err);
    const trace_op_t *ops;
    uint32_t n;
    trace_op_t op;
    trace_rank_ops(r, 4, &ops, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ops[0].coll, HERD_COLL_SEND);
    ck_assert_int_eq(ops[0].peer, 5);
    trace_rank_ops(r, 7, &ops, &n);
    ck_assert(trace_op_for_rank(r, &ops[1], 7, &op));
    ck_assert_uint_eq(op.dur_ns, 99);
    ck_assert_uint_eq(ops[0].count, 64); /* data-parallel keeps counts */
    trace_destroy(r);
    /* Shrinking to 2 keeps the pair 0 -> 1, drops rank 3's variant. */
    ck_assert_msg(trace_rescale(t, 2, &r, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(r->nvariants, 0);
    ck_assert_uint_eq(r->nrank_lists, 2);
    trace_destroy(r);
    /* Shrinking to 1 loses rank 1, the receiver: rejected, with reason. */
    ck_assert_int_ne(trace_rescale(t, 1, &r, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "rank_ops.0[0]: peer 1 does not exist in 1 "
                              "ranks"),
                  "%s", err);
    trace_destroy(t);
    const char *root = "{\"format\": \"herd-trace\", \"version\": 1, "
                       "\"world_size\": 8, \"ops\": [{\"op\": \"broadcast\", "
                       "\"count\": 1, \"root\": 6}]}";
    ck_assert_int_eq(trace_read_json_string(root, "r", &t, err, sizeof(err)),
                     0);
    ck_assert_int_ne(trace_rescale(t, 4, &r, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "root 6 does not exist in 4 ranks"), "%s", err);
    ck_assert_int_eq(trace_rescale(t, 1024, &r, err, sizeof(err)), 0);
    ck_assert_int_eq(r->world_size, 1024);
    trace_destroy(r);
    trace_destroy(t);
}
END_TEST

START_TEST(test_sweep)
{
    trace_sweep_t sw = {.coll = HERD_COLL_ALL_REDUCE,
                        .algos = {HERD_ALGO_RING, HERD_ALGO_TREE},
                        .nalgos = 2,
                        .min_bytes = 2,
                        .max_bytes = 64,
                        .factor = 2,
                        .dtype = HERD_FLOAT32,
                        .op = HERD_SUM,
                        .iters = 3,
                        .warmup = 1};
    trace_t *t = NULL;
    ck_assert_int_eq(trace_from_sweep(&sw, 16, &t), 0);
    /* sizes 4..64 bytes (2 is below one float): 5 sizes x 4 calls x 2 */
    ck_assert_uint_eq(t->nspmd, 40);
    ck_assert_uint_eq(t->ops[0].count, 1);
    ck_assert_str_eq(trace_string(t, t->ops[0].label), "warmup");
    ck_assert_str_eq(trace_string(t, t->ops[1].label), "sweep");
    ck_assert_int_eq(t->ops[39].algo, HERD_ALGO_TREE);
    ck_assert_uint_eq(t->ops[39].count, 16);
    trace_destroy(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_format");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, test_golden_round_trip);
    tcase_add_test(tc, test_per_rank);
    tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_shipped);
    tcase_add_test(tc, test_rescale);
    tcase_add_test(tc, test_sweep);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
