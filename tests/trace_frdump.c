/* tests/trace_frdump.c - PyTorch Flight Recorder dumps: real dumps from
 * PyTorch 2.15 on gloo (tests/data/flight/, made by fr_gen.py there) are
 * converted into herd's flight-record form with the right groups, ranks,
 * collectives, sizes and states, and `herd diagnose` gives the classes
 * PyTorch's fr_trace analyser gives: none, size mismatch, missing rank,
 * collective mismatch, stuck collective; bad files get clear errors. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/frdump.h"

static json_t *load_case(const char *c, int rank)
{
    char rel[256], p[1024];
    snprintf(rel, sizeof(rel), "flight/torch215_%s/rank%d.json", c, rank);
    json_error_t je;
    json_t *root = json_load_file(tu_data_path(p, sizeof(p), rel), 0, &je);
    ck_assert_msg(root != NULL, "%s: %s", rel, je.text);
    return root;
}

START_TEST(rank_from_file_name)
{
    ck_assert_int_eq(trace_frdump_rank_from_name("rank3.json"), 3);
    ck_assert_int_eq(trace_frdump_rank_from_name("/tmp/d/nccl_trace_rank_12"),
                     12);
    ck_assert_int_eq(trace_frdump_rank_from_name("fr_dump_0.json"), 0);
    ck_assert_int_eq(trace_frdump_rank_from_name("dump.json"), -1);
    ck_assert_int_eq(trace_frdump_rank_from_name("rank0.log"), -1);
    ck_assert_int_eq(trace_frdump_rank_from_name("r123456789"), -1);
}
END_TEST

START_TEST(converts_a_real_dump)
{
    json_t *pt = load_case("ok", 1), *h = NULL;
    char err[512];
    ck_assert(trace_frdump_is_pytorch(pt));
    ck_assert_int_eq(trace_frdump_convert(pt, 1, 0, "rank1.json", &h, err,
                                          sizeof(err)),
                     HERD_OK);
    ck_assert(!trace_frdump_is_pytorch(h)); /* herd's form has a rank */
    ck_assert_int_eq(json_integer_value(json_object_get(h, "rank")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(h, "world_size")), 2);
    json_t *g = json_array_get(json_object_get(h, "groups"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "id")), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(g, "ranks")), 2);
    json_t *es = json_object_get(h, "entries");
    ck_assert_uint_eq(json_array_size(es), 5);
    const char *want[] = {"all_reduce", "all_reduce", "all_reduce",
                          "broadcast", "all_gather"};
    for (size_t i = 0; i < 5; i++) {
        json_t *e = json_array_get(es, i);
        ck_assert_str_eq(json_string_value(json_object_get(e, "coll")),
                         want[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "seq")),
                         (json_int_t)i + 1);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "count")),
                         1000);
        ck_assert_str_eq(json_string_value(json_object_get(e, "dtype")),
                         "float32");
        /* gloo leaves "scheduled"; retired means it finished */
        ck_assert_str_eq(json_string_value(json_object_get(e, "state")),
                         "completed");
    }
    json_decref(h);
    /* a rank outside the world its groups name */
    ck_assert_int_eq(trace_frdump_convert(pt, 5, 0, "rank5.json", &h, err,
                                          sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err, "outside the 2-rank world"));
    json_decref(pt);
}
END_TEST

START_TEST(bad_entries_say_where)
{
    json_t *pt = json_pack("{s:s, s:[{s:s, s:i, s:i}, {s:i}]}", "version",
                           "2.10", "entries", "profiling_name",
                           "nccl:all_reduce", "pg_id", 0, "collective_seq_id",
                           1, "pg_id", 0),
           *h = NULL;
    char err[512];
    ck_assert_int_eq(trace_frdump_convert(pt, 0, 2, "x.json", &h, err,
                                          sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err, "x.json: entries[1]"));
    json_decref(pt);
}
END_TEST

static int diagnose(const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "diagnose %s 2>&1", args);
    return tu_herd(cmd, out);
}

START_TEST(diagnose_classes)
{
    static const struct {
        const char *c, *cls;
        int rc;
    } cases[] = {{"ok", "no problem found", 0},
                 {"size", "class: size mismatch", 1},
                 {"missing", "class: missing rank", 1},
                 {"coll", "class: collective mismatch", 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char rel[256], p[1024], *out = NULL;
        snprintf(rel, sizeof(rel), "flight/torch215_%s", cases[i].c);
        ck_assert_int_eq(diagnose(tu_data_path(p, sizeof(p), rel), &out),
                         cases[i].rc);
        ck_assert_msg(strstr(out, cases[i].cls), "%s: %s", cases[i].c, out);
        free(out);
    }
}
END_TEST

/* All ranks joined the last all_gather and none finished it. */
START_TEST(diagnose_stuck)
{
    char *dir = tu_tmpdir(), path[1024], *out = NULL;
    for (int r = 0; r < 2; r++) {
        json_t *pt = load_case("ok", r);
        json_t *es = json_object_get(pt, "entries");
        json_t *last = json_array_get(es, json_array_size(es) - 1);
        json_object_set_new(last, "retired", json_false());
        json_object_set_new(last, "state", json_string("started"));
        json_object_set_new(json_object_get(json_object_get(pt, "pg_status"),
                                            "0"),
                            "last_completed_collective", json_string("4"));
        snprintf(path, sizeof(path), "%s/fr_dump_%d.json", dir, r);
        ck_assert_int_eq(json_dump_file(pt, path, 0), 0);
        json_decref(pt);
    }
    ck_assert_int_eq(diagnose(dir, &out), 1);
    ck_assert_msg(strstr(out, "class: stuck collective"), "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "all_gather (seq 5"));
    free(out);
    /* files named one by one work as the folder does */
    char args[2048];
    snprintf(args, sizeof(args), "%.900s/fr_dump_0.json %.900s/fr_dump_1.json",
             dir, dir);
    ck_assert_int_eq(diagnose(args, &out), 1);
    free(out);
    /* a pickled dump is named as such, with the way to convert it */
    snprintf(path, sizeof(path), "%s/rank0", dir);
    FILE *f = fopen(path, "wb");
    fputs("\x80\x04\x95", f);
    fclose(f);
    ck_assert_int_eq(diagnose(path, &out), 2);
    ck_assert_msg(strstr(out, "pickled"), "%s", out);
    free(out);
    /* a PyTorch dump whose name has no rank */
    snprintf(path, sizeof(path), "%s/dump.json", dir);
    json_t *pt = load_case("ok", 0);
    json_dump_file(pt, path, 0);
    json_decref(pt);
    ck_assert_int_eq(diagnose(path, &out), 2);
    ck_assert_msg(strstr(out, "names no rank"), "%s", out);
    free(out);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    tu_run(path, NULL);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_frdump");
    TCase *tc = tcase_create("frdump");
    tcase_add_test(tc, rank_from_file_name);
    tcase_add_test(tc, converts_a_real_dump);
    tcase_add_test(tc, bad_entries_say_where);
    tcase_add_test(tc, diagnose_classes);
    tcase_add_test(tc, diagnose_stuck);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
