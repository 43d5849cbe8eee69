/* tests/trace_timeline.c - the timeline collector (from several threads),
 * the Chrome trace JSON (every event has the fields Chrome/Perfetto
 * require; golden text), the TSV (golden), reading back (round trip) and
 * malformed timeline files. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/timeline.h"

/* Remove a test's temporary folder (made by tu_tmpdir: safe characters). */
static void rm_dir(char *dir)
{
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

static herd_tl_rec_t rec(herd_tl_kind_t kind, int rank, uint64_t start,
                         uint64_t end, const char *label)
{
    return (herd_tl_rec_t){.kind = kind,
                           .rank = rank,
                           .node = rank / 2,
                           .seq = kind == HERD_TL_COLL ? 1 : 0,
                           .coll = HERD_COLL_ALL_REDUCE,
                           .algo = HERD_ALGO_RING,
                           .dtype = HERD_FLOAT32,
                           .op = HERD_SUM,
                           .count = 256,
                           .bytes = 1024,
                           .peer = -1,
                           .start_ns = start,
                           .end_ns = end,
                           .label = label};
}

static trace_timeline_t *small_timeline(void)
{
    trace_timeline_t *tl;
    ck_assert_int_eq(trace_timeline_create(&tl), 0);
    herd_tl_rec_t r[] = {
        rec(HERD_TL_COLL, 1, 2000, 5500, "bucket \"0\""),
        rec(HERD_TL_COMPUTE, 0, 0, 2000, "fwd"),
        rec(HERD_TL_COLL, 0, 2000, 5500, "bucket \"0\""),
        rec(HERD_TL_MARK, 2, 0, 0, "step"),
        rec(HERD_TL_WAIT, 2, 100, 1100, NULL),
    };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        trace_timeline_collect(&r[i], tl);
    ck_assert_int_eq(trace_timeline_set_meta(tl, "engine", "sim"), 0);
    trace_timeline_sort(tl);
    return tl;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char *golden_tsv =
    "# herd-timeline v1: times in microseconds\n"
    "rank\tnode\tgroup\tseq\tkind\tname\talgo\tbytes\tstart_us\tend_us\t"
    "dur_us\tlabel\tlabel_id\n"
    "0\t0\t0\t0\tcompute\tfwd\t-\t0\t0.000\t2.000\t2.000\tfwd\t1\n"
    "0\t0\t0\t1\tcoll\tall_reduce\tring\t1024\t2.000\t5.500\t3.500\t"
    "bucket \"0\"\t2\n"
    "1\t0\t0\t1\tcoll\tall_reduce\tring\t1024\t2.000\t5.500\t3.500\t"
    "bucket \"0\"\t2\n"
    "2\t1\t0\t0\tmark\tstep\t-\t0\t0.000\t0.000\t0.000\tstep\t3\n"
    "2\t1\t0\t0\twait\twait\t-\t0\t0.100\t1.100\t1.000\t-\t0\n";

static const char *golden_json_event =
    "{\"name\":\"all_reduce\",\"cat\":\"coll\",\"ph\":\"X\",\"ts\":2.0,"
    "\"dur\":3.5,\"pid\":0,\"tid\":1,\"args\":{\"bytes\":1024,\"count\":256,"
    "\"dtype\":\"float32\",\"op\":\"sum\",\"algorithm\":\"ring\",\"peer\":-1,"
    "\"label\":\"bucket \\\"0\\\"\",\"seq\":1,\"group\":0,\"status\":"
    "\"HERD_OK\",\"start_ns\":2000,\"end_ns\":5500}}";

START_TEST(test_golden)
{
    trace_timeline_t *tl = small_timeline();
    char *dir = tu_tmpdir(), path[512], err[512];
    snprintf(path, sizeof(path), "%s/t.tsv", dir);
    ck_assert_int_eq(trace_timeline_write_tsv(tl, path, err, sizeof(err)), 0);
    char *text = slurp(path);
    ck_assert_str_eq(text, golden_tsv);
    free(text);
    snprintf(path, sizeof(path), "%s/t.json", dir);
    ck_assert_int_eq(trace_timeline_write_chrome(tl, path, err, sizeof(err)),
                     0);
    text = slurp(path);
    ck_assert_msg(strstr(text, golden_json_event), "%s", text);
    ck_assert(strstr(text, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
                           "\"tid\":2,\"args\":{\"name\":\"rank 2\"}}"));
    ck_assert(strstr(text, "\"engine\":\"sim\""));
    free(text);
    trace_timeline_destroy(tl);
    rm_dir(dir);
}
END_TEST

/* Every event carries what the Chrome trace event format requires. */
static void check_event(json_t *e, size_t i)
{
    const char *ph = json_string_value(json_object_get(e, "ph"));
    ck_assert_msg(ph, "event %zu: no ph", i);
    ck_assert_msg(json_is_string(json_object_get(e, "name")), "%zu", i);
    ck_assert_msg(json_is_integer(json_object_get(e, "pid")), "%zu", i);
    ck_assert_msg(json_is_integer(json_object_get(e, "tid")), "%zu", i);
    if (!strcmp(ph, "M")) {
        ck_assert(json_is_string(
            json_object_get(json_object_get(e, "args"), "name")));
        return;
    }
    ck_assert_msg(json_is_number(json_object_get(e, "ts")), "%zu", i);
    ck_assert(json_is_string(json_object_get(e, "cat")));
    ck_assert(json_is_object(json_object_get(e, "args")));
    if (!strcmp(ph, "X")) {
        json_t *dur = json_object_get(e, "dur");
        ck_assert_msg(json_is_number(dur) && json_number_value(dur) >= 0,
                      "event %zu: dur", i);
    } else {
        ck_assert_str_eq(ph, "i");
        ck_assert_str_eq(json_string_value(json_object_get(e, "s")), "t");
    }
}

START_TEST(test_chrome_valid)
{
    trace_timeline_t *tl = small_timeline();
    char *dir = tu_tmpdir(), path[512], err[512];
    snprintf(path, sizeof(path), "%s/t.json", dir);
    ck_assert_int_eq(trace_timeline_write_chrome(tl, path, err, sizeof(err)),
                     0);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(root, "%s", jerr.text);
    json_t *events = json_object_get(root, "traceEvents");
    ck_assert(json_is_array(events));
    size_t i, nx = 0, nm = 0;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        check_event(e, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        nx += !strcmp(ph, "X");
        nm += !strcmp(ph, "M");
    }
    ck_assert_uint_eq(nx, 4);
    ck_assert_uint_eq(nm, 2 + 3); /* 2 nodes, 3 ranks */
    json_decref(root);
    trace_timeline_destroy(tl);
    rm_dir(dir);
}
END_TEST

START_TEST(test_read_back)
{
    trace_timeline_t *tl = small_timeline(), *back = NULL;
    char *dir = tu_tmpdir(), path[512], err[512];
    snprintf(path, sizeof(path), "%s/t.json", dir);
    ck_assert_int_eq(trace_timeline_write_chrome(tl, path, err, sizeof(err)),
                     0);
    ck_assert_msg(trace_timeline_read_chrome(path, &back, err, sizeof(err)) ==
                      0,
                  "%s", err);
    ck_assert_uint_eq(trace_timeline_count(back), trace_timeline_count(tl));
    const herd_tl_rec_t *a = trace_timeline_recs(tl);
    const herd_tl_rec_t *b = trace_timeline_recs(back);
    for (size_t i = 0; i < trace_timeline_count(tl); i++) {
        ck_assert_int_eq(a[i].kind, b[i].kind);
        ck_assert_int_eq(a[i].rank, b[i].rank);
        ck_assert_int_eq(a[i].node, b[i].node);
        ck_assert_uint_eq(a[i].seq, b[i].seq);
        ck_assert_uint_eq(a[i].start_ns, b[i].start_ns);
        ck_assert_uint_eq(a[i].end_ns, b[i].end_ns);
        ck_assert_int_eq(!a[i].label, !b[i].label);
        if (a[i].label)
            ck_assert_str_eq(a[i].label, b[i].label);
        if (a[i].kind == HERD_TL_COLL) {
            ck_assert_int_eq(a[i].coll, b[i].coll);
            ck_assert_int_eq(a[i].algo, b[i].algo);
            ck_assert_uint_eq(a[i].bytes, b[i].bytes);
        }
    }
    ck_assert_str_eq(trace_timeline_get_meta(back, "engine"), "sim");
    trace_timeline_destroy(back);
    trace_timeline_destroy(tl);
    rm_dir(dir);
}
END_TEST

static void *collect_thread(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        herd_tl_rec_t r = rec(HERD_TL_COMPUTE, i % 7, (uint64_t)i,
                              (uint64_t)i + 5, i % 2 ? "x" : NULL);
        trace_timeline_collect(&r, arg);
    }
    return NULL;
}

START_TEST(test_threads)
{
    trace_timeline_t *tl;
    ck_assert_int_eq(trace_timeline_create(&tl), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, collect_thread, tl);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    ck_assert_uint_eq(trace_timeline_count(tl), 8000);
    ck_assert_int_eq(trace_timeline_status(tl), 0);
    trace_timeline_destroy(tl);
}
END_TEST

START_TEST(test_labels_shared)
{
    trace_timeline_t *tl;
    ck_assert_int_eq(trace_timeline_create(&tl), 0);
    char label[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(label, sizeof(label), "bucket%d", i % 1000);
        herd_tl_rec_t r =
            rec(HERD_TL_COLL, 0, (uint64_t)i, (uint64_t)i + 1, label);
        ck_assert_int_eq(trace_timeline_add(tl, &r), 0);
    }
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    for (int i = 0; i < 1000; i++) {
        snprintf(label, sizeof(label), "bucket%d", i);
        ck_assert_str_eq(r[i].label, label);
        ck_assert_ptr_eq(r[i].label, r[i + 1000].label); /* one copy */
        ck_assert_ptr_eq(r[i].label, r[i + 2000].label);
    }
    trace_timeline_destroy(tl);
}
END_TEST

static const struct {
    const char *text;
    const char *expect;
} bad[] = {
    {"{\"traceEvents\": [{\"ph\": \"X\"", "t.json:1:"},
    {"\x7f\x01garbage", "t.json:1:"},
    {"{\"traceEvents\": 5}", "expected a Chrome trace"},
    {"{\"traceEvents\": [7]}", "traceEvents[0]: expected an object"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"compute\", \"name\": "
     "\"x\", \"ts\": 5, \"dur\": 1, \"pid\": 0, \"tid\": 0, \"args\": "
     "{\"start_ns\": 10, \"end_ns\": 2}}]}",
     "traceEvents[0]: ends at 2 ns, before it starts (10 ns)"},
};

START_TEST(test_bad)
{
    char *dir = tu_tmpdir(), path[512], err[512] = "";
    snprintf(path, sizeof(path), "%s/t.json", dir);
    FILE *f = fopen(path, "w");
    fputs(bad[_i].text, f);
    fclose(f);
    trace_timeline_t *tl = NULL;
    ck_assert_int_ne(trace_timeline_read_chrome(path, &tl, err, sizeof(err)),
                     0);
    ck_assert_ptr_null(tl);
    ck_assert_msg(strstr(err, bad[_i].expect), "case %d: %s", _i, err);
    rm_dir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_timeline");
    TCase *tc = tcase_create("timeline");
    tcase_add_test(tc, test_golden);
    tcase_add_test(tc, test_chrome_valid);
    tcase_add_test(tc, test_read_back);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_labels_shared);
    tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
