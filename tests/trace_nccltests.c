/* tests/trace_nccltests.c - nccl-tests output as measurements: tables,
 * rank and node counts and the collective are read from the logs in
 * tests/data/nccltests/ (made from a known alpha-beta model, see its
 * README) and herd perf's tables of one and two column groups, the fit
 * recovers that model, malformed rows are errors with
 * their position, `herd calibrate --from` writes the link it implies and
 * `herd compare` puts a herd perf prediction beside a log. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/testutil.h"
#include "trace/nccltests.h"

static const char *data(char *buf, size_t len, const char *name)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "nccltests/%s", name);
    return tu_data_path(buf, len, rel);
}

static void load_ok(const char *name, trace_ncclt_t *t)
{
    char p[1024], err[1024];
    ck_assert_msg(trace_ncclt_load(data(p, sizeof(p), name), t, err,
                                   sizeof(err)) == HERD_OK,
                  "%s", err);
}

static herd_status_t parse_text(const char *text, trace_ncclt_t *t, char *err,
                                size_t errlen)
{
    return trace_ncclt_parse(text, strlen(text), "mem.log", t, err, errlen);
}

START_TEST(reads_multi_node_log)
{
    trace_ncclt_t t;
    load_ok("all_reduce_2x8.log", &t);
    ck_assert_uint_eq(t.ntables, 1);
    const trace_ncclt_table_t *tb = &t.tables[0];
    ck_assert(tb->have_coll);
    ck_assert_int_eq(tb->coll, HERD_COLL_ALL_REDUCE);
    ck_assert_str_eq(tb->coll_from, "binary name");
    ck_assert_int_eq(tb->nranks, 16);
    ck_assert_int_eq(tb->nnodes, 2);
    ck_assert_int_eq(tb->groups, 2);
    ck_assert_uint_eq(tb->nrows, 28); /* 8 B .. 1 GiB; the NCCL INFO skipped */
    ck_assert_uint_eq(tb->rows[0].bytes, 8);
    ck_assert_uint_eq(tb->rows[27].bytes, 1u << 30);
    ck_assert_str_eq(tb->rows[0].type, "float");
    ck_assert_str_eq(tb->rows[0].redop, "sum");
    ck_assert(tb->rows[27].time_us[TRACE_NCCLT_INPLACE] > 0);
    trace_ncclt_free(&t);
}
END_TEST

START_TEST(reads_single_process_log)
{
    trace_ncclt_t t;
    load_ok("ag_1x8.txt", &t);
    ck_assert_uint_eq(t.ntables, 1);
    ck_assert_int_eq(t.tables[0].coll, HERD_COLL_ALL_GATHER);
    ck_assert_str_eq(t.tables[0].coll_from, "header");
    ck_assert_int_eq(t.tables[0].nranks, 8);
    ck_assert_int_eq(t.tables[0].nnodes, 1);
    trace_ncclt_free(&t);
}
END_TEST

/* The log was made from alpha 40 us / bus 4 GB/s below 1 MiB and alpha
 * 120 us / bus 45 GB/s from 1 MiB, with +-2% noise. */
START_TEST(fit_recovers_the_model)
{
    trace_ncclt_t t;
    trace_ncclt_fit_t f;
    char err[256];
    load_ok("all_reduce_2x8.log", &t);
    ck_assert_int_eq(trace_ncclt_fit(&t.tables[0], TRACE_NCCLT_OOP, &f, err,
                                     sizeof(err)),
                     HERD_OK);
    ck_assert_int_eq(f.nregimes, 2);
    ck_assert_uint_eq(f.regime[1].lo, 1u << 20);
    ck_assert_double_eq_tol(f.regime[0].alpha_s, 40e-6, 2e-6);
    ck_assert_double_eq_tol(f.regime[0].beta_Bps, 4e9, 0.2e9);
    ck_assert_double_eq_tol(f.regime[1].alpha_s, 120e-6, 12e-6);
    ck_assert_double_eq_tol(f.regime[1].beta_Bps, 45e9, 1.5e9);
    ck_assert(f.regime[0].max_resid < 0.05);
    /* one regime when one line fits (the all_gather log) */
    trace_ncclt_free(&t);
    load_ok("ag_1x8.txt", &t);
    ck_assert_int_eq(trace_ncclt_fit(&t.tables[0], TRACE_NCCLT_INPLACE, &f,
                                     err, sizeof(err)),
                     HERD_OK);
    ck_assert_int_eq(f.nregimes, 1);
    ck_assert_double_eq_tol(f.regime[0].beta_Bps, 20e9, 1e9);
    trace_ncclt_free(&t);
}
END_TEST

static const char header[] =
    "#  Rank  0 Group  0 Pid 1 on h device 0 [0x0] G\n"
    "#  Rank  1 Group  0 Pid 2 on h device 1 [0x1] G\n"
    "#  Rank  2 Group  0 Pid 3 on h device 2 [0x2] G\n"
    "#  Rank  3 Group  0 Pid 4 on h device 3 [0x3] G\n"
    "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  "
    "algbw  busbw #wrong\n";

START_TEST(malformed_rows_say_where)
{
    trace_ncclt_t t;
    char text[2048], err[512];
    snprintf(text, sizeof(text), "%s%s", header,
             "1024 256 float sum -1 10.0 0.10 0.15 0 10.0 0.10 0.15 0\n"
             "2048 512 float sum -1 1x.0 0.20 0.30 0 10.0 0.20 0.30 0\n");
    ck_assert_int_eq(parse_text(text, &t, err, sizeof(err)), HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "mem.log:7:"), "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "time"));
    snprintf(text, sizeof(text), "%s%s", header, "4096 1024 float sum\n");
    ck_assert_int_eq(parse_text(text, &t, err, sizeof(err)), HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "mem.log:6:1:"), "%s", err);
    ck_assert_int_eq(parse_text("{\"traceEvents\": []}\n", &t, err,
                                sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err, "no nccl-tests table"));
    ck_assert_int_eq(trace_ncclt_parse("# size count time\n1 1 f\0 1 1 1 0",
                                       33, "nul.log", &t, err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err, "NUL"));
}
END_TEST

/* Without a name anywhere, all_reduce is told by busbw / algbw. */
START_TEST(collective_from_bandwidth_ratio)
{
    trace_ncclt_t t;
    char text[2048], err[512];
    /* p = 4: busbw = 1.5 x algbw */
    snprintf(text, sizeof(text), "%s%s", header,
             "1048576 262144 float sum -1 100.0 10.49 15.73 0 100.0 10.49 "
             "15.73 0\n"
             "2097152 524288 float sum -1 180.0 11.65 17.48 0 180.0 11.65 "
             "17.48 0\n");
    ck_assert_int_eq(parse_text(text, &t, err, sizeof(err)), HERD_OK);
    ck_assert(t.tables[0].have_coll);
    ck_assert_str_eq(t.tables[0].coll_from, "bandwidth ratio");
    trace_ncclt_free(&t);
}
END_TEST

/* herd perf's tables before in-place columns (one group) and after (two,
 * under nccl-tests' "out-of-place  in-place" line) both read. */
START_TEST(reads_herd_perf_layouts)
{
    static const char one[] =
        "# herd perf: all_reduce, algorithm ring, predicted by sim for 1 "
        "node(s) x 4 GPU(s); intra 370.0 GB/s 1us\n"
        "#\n#          size         count      type   redop    root       "
        "time    algbw    busbw  #wrong\n"
        "#           (B)    (elements)                                 (us)   "
        "(GB/s)   (GB/s)\n"
        "        1024           256   float32     sum      -1       5.00     "
        "0.20     0.31     N/A\n"
        "# Out of bounds values : 0 OK\n";
    static const char two[] =
        "# herd perf: all_reduce, algorithm ring, predicted by sim for 1 "
        "node(s) x 4 GPU(s); intra 370.0 GB/s 1us\n"
        "#\n#                                                              "
        "out-of-place                       in-place          \n"
        "#       size         count      type   redop    root     time   "
        "algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
        "#        (B)    (elements)                               (us)  "
        "(GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)        \n"
        "        1024           256   float32     sum      -1     5.00    "
        "0.20    0.31       0     6.00    0.17    0.26       0\n"
        "  1073741824     268435456   float32     sum      -1  42775.8   "
        "25.10   37.65     N/A  42773.5   25.10   37.65     N/A\n"
        "# Out of bounds values : 0 OK\n";
    trace_ncclt_t t;
    char err[512];
    ck_assert_int_eq(parse_text(one, &t, err, sizeof(err)), HERD_OK);
    ck_assert_int_eq(t.tables[0].groups, 1);
    ck_assert_int_eq(t.tables[0].nranks, 4);
    ck_assert_uint_eq(t.tables[0].nrows, 1);
    ck_assert_double_eq_tol(t.tables[0].rows[0].time_us[0], 5.0, 1e-9);
    trace_ncclt_free(&t);
    ck_assert_int_eq(parse_text(two, &t, err, sizeof(err)), HERD_OK);
    ck_assert_uint_eq(t.ntables, 1);
    ck_assert_int_eq(t.tables[0].groups, 2);
    ck_assert_int_eq(t.tables[0].coll, HERD_COLL_ALL_REDUCE);
    ck_assert_int_eq(t.tables[0].nranks, 4);
    ck_assert_uint_eq(t.tables[0].nrows, 2);
    ck_assert_double_eq_tol(t.tables[0].rows[0].time_us[TRACE_NCCLT_INPLACE],
                            6.0, 1e-9);
    ck_assert_double_eq_tol(t.tables[0].rows[1].time_us[TRACE_NCCLT_OOP],
                            42775.8, 1e-6);
    ck_assert_double_eq_tol(t.tables[0].rows[1].busbw[TRACE_NCCLT_INPLACE],
                            37.65, 1e-9);
    trace_ncclt_free(&t);
}
END_TEST

START_TEST(calibrate_from_writes_the_link)
{
    char p1[1024], p2[1024], args[2300], *out = NULL;
    snprintf(args, sizeof(args), "calibrate --from %s %s 2>&1",
             data(p1, sizeof(p1), "all_reduce_2x8.log"),
             data(p2, sizeof(p2), "ag_1x8.txt"));
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "nodes: 2\n"));
    ck_assert_ptr_nonnull(strstr(out, "gpus_per_node: 8\n"));
    const char *inter = strstr(out, "inter: {bandwidth: ");
    ck_assert_msg(inter != NULL, "%s", out);
    double gbs = strtod(inter + strlen("inter: {bandwidth: "), NULL);
    ck_assert_double_eq_tol(gbs, 45, 1.5);
    ck_assert_ptr_nonnull(strstr(out, "# all_gather ("));
    free(out);
    /* no ranks in the log and none given: the options are named */
    char dir_tmpl[] = "/tmp/herd-ncclt-XXXXXX", path[256], text[2048];
    ck_assert_ptr_nonnull(mkdtemp(dir_tmpl));
    snprintf(path, sizeof(path), "%s/all_reduce.log", dir_tmpl);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    snprintf(text, sizeof(text), "%s", strstr(header, "#  size"));
    fprintf(f, "%s1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n"
               "4096 1024 float sum -1 20.0 0.2 0.2 0 20.0 0.2 0.2 0\n",
            text);
    fclose(f);
    snprintf(args, sizeof(args), "calibrate --from %s 2>&1", path);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--nodes and --gpus-per-node"));
    free(out);
    snprintf(args, sizeof(args),
             "calibrate --from %s --nodes 1 --gpus-per-node 4 2>&1", path);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "intra: {bandwidth: "));
    ck_assert_ptr_nonnull(strstr(out, "collective from file name"));
    free(out);
    remove(path);
    rmdir(dir_tmpl);
}
END_TEST

START_TEST(compare_prediction_with_log)
{
    char dir_tmpl[] = "/tmp/herd-ncclt-XXXXXX", pred[256], log[1024];
    char args[2400], *out = NULL;
    ck_assert_ptr_nonnull(mkdtemp(dir_tmpl));
    snprintf(pred, sizeof(pred), "%s/pred.txt", dir_tmpl);
    snprintf(args, sizeof(args),
             "perf --engine sim --algo ring -b 8 -e 1G -f 2 --nodes 2 "
             "--gpus-per-node 8 --inter-bw 45GB/s --inter-lat 1us > %s",
             pred);
    ck_assert_int_eq(tu_herd(args, NULL), 0);
    /* the prediction itself reads as a table */
    trace_ncclt_t t;
    char err[512];
    ck_assert_int_eq(trace_ncclt_load(pred, &t, err, sizeof(err)), HERD_OK);
    ck_assert_int_eq(t.tables[0].coll, HERD_COLL_ALL_REDUCE);
    ck_assert_int_eq(t.tables[0].nranks, 16);
    ck_assert_int_eq(t.tables[0].groups, 2); /* out-of-place, in-place */
    ck_assert_uint_eq(t.tables[0].nrows, 28);
    ck_assert(t.tables[0].rows[27].time_us[TRACE_NCCLT_OOP] > 0);
    ck_assert(t.tables[0].rows[27].time_us[TRACE_NCCLT_INPLACE] > 0);
    trace_ncclt_free(&t);
    snprintf(args, sizeof(args), "compare %s %s 2>&1", pred,
             data(log, sizeof(log), "all_reduce_2x8.log"));
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "summary: 28 size(s) matched"), "%s", out);
    free(out);
    /* another collective: nothing matches, and that is an error */
    snprintf(args, sizeof(args), "compare %s %s 2>&1", pred,
             data(log, sizeof(log), "ag_1x8.txt"));
    ck_assert_int_eq(tu_herd(args, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "no size matched"));
    free(out);
    remove(pred);
    rmdir(dir_tmpl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_nccltests");
    TCase *tc = tcase_create("nccltests");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, reads_multi_node_log);
    tcase_add_test(tc, reads_single_process_log);
    tcase_add_test(tc, fit_recovers_the_model);
    tcase_add_test(tc, malformed_rows_say_where);
    tcase_add_test(tc, collective_from_bandwidth_ratio);
    tcase_add_test(tc, reads_herd_perf_layouts);
    tcase_add_test(tc, calibrate_from_writes_the_link);
    tcase_add_test(tc, compare_prediction_with_log);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
