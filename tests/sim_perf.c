/* tests/sim_perf.c - `herd perf` on the simulator: nccl-tests' table for
 * a range of sizes, bus bandwidth that follows the cluster flags, -c 1
 * checking every collective's results, each size simulated once without
 * jitter, nccl-tests' out-of-place and in-place groups, -a, -m and -z,
 * --help and clear usage errors (-g, -t, -G that herd cannot honour). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

/* Runs herd perf; the output (stdout and stderr) without a sanitizer's
 * notes ("==PID==WARNING: ..."), which name the process and so differ
 * between two runs. */
static int perf(const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s perf %s 2>&1", tu_herd_binary(), args);
    int rc = tu_run(cmd, out);
    char *w = *out;
    for (const char *l = *out; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) + 1 : strlen(l);
        if (strncmp(l, "==", 2) != 0) {
            memmove(w, l, n);
            w += n;
        }
        l += n;
    }
    if (w)
        *w = '\0';
    return rc;
}

/* Data rows: lines not starting with '#' (or "==", a sanitizer's note on
 * stderr). */
static int rows(const char *out)
{
    int n = 0;
    for (const char *l = out; l && *l;) {
        if (*l != '#' && *l != '\n' && strncmp(l, "==", 2) != 0)
            n++;
        const char *e = strchr(l, '\n');
        l = e ? e + 1 : NULL;
    }
    return n;
}

/* busbw (8th column) of the row whose size is `size`. */
static double busbw(const char *out, const char *size)
{
    char pat[64];
    snprintf(pat, sizeof(pat), " %s ", size);
    const char *l = strstr(out, pat);
    ck_assert_ptr_nonnull(l);
    double v[8];
    char type[32], op[32];
    int n = sscanf(l, "%lf %lf %31s %31s %lf %lf %lf %lf", &v[0], &v[1], type,
                   op, &v[2], &v[3], &v[4], &v[5]);
    ck_assert_int_eq(n, 8);
    return v[5];
}

START_TEST(table)
{
    char *out = NULL;
    int rc =
        perf("--nodes 2 --gpus-per-node 4 -b 1K -e 1M -f 4 -n 2 -w 1", &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "algbw"));
    ck_assert_ptr_nonnull(strstr(out, "busbw"));
    ck_assert_ptr_nonnull(strstr(out, "#wrong"));
    ck_assert_int_eq(rows(out), 6); /* 1K 4K 16K 64K 256K 1M */
    ck_assert_ptr_nonnull(strstr(out, "float32"));
    free(out);
}
END_TEST

/* Without jitter each size is simulated once, and the header says so:
 * -n and -w do not change the table. With a scenario's jitter the
 * iterations run as asked. */
START_TEST(once_without_jitter)
{
    char *a = NULL, *b = NULL, src[1024];
    ck_assert_int_eq(perf("--nodes 2 --gpus-per-node 4 -b 1K -e 4M -f 16", &a),
                     0);
    ck_assert_msg(strstr(a, "# each size simulated once (no jitter"), "%s", a);
    ck_assert_int_eq(
        perf("--nodes 2 --gpus-per-node 4 -b 1K -e 4M -f 16 -n 7 -w 3", &b), 0);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    char args[1200];
    snprintf(args, sizeof(args), "--scenario %s -b 1K -e 1K -n 3 -w 2",
             tu_src_path(src, sizeof(src), "scenarios/straggler.yaml"));
    ck_assert_int_eq(perf(args, &a), 0);
    ck_assert_msg(strstr(a, "# 3 iterations per size after 2 warm-up (jitter "
                            "sigma 0.02, seed"),
                  "%s", a);
    ck_assert_int_eq(rows(a), 1);
    free(a);
}
END_TEST

START_TEST(bus_bandwidth_follows_the_nic)
{
    char *out = NULL;
    /* 64 MiB over 2 nodes: ring busbw approaches the NIC rate. -a 3: the
     * slowest rank's time, the collective's; the mean (-a 1, nccl-tests'
     * default) counts ranks that finish early and can exceed the rate */
    int rc = perf("--nodes 2 --gpus-per-node 4 --inter-bw 100Gbps "
                  "--inter-lat 5us --algo ring -b 64M -e 64M -n 1 -a 3",
                  &out);
    ck_assert_msg(rc == 0, "%s", out);
    double bw = busbw(out, "67108864");
    ck_assert_msg(bw > 11.0 && bw <= 12.5, "busbw %g", bw);
    free(out);
    rc = perf("--nodes 2 --gpus-per-node 4 --inter-bw 400Gbps "
              "--algo ring -b 64M -e 64M -n 1 -a 3",
              &out);
    ck_assert_int_eq(rc, 0);
    bw = busbw(out, "67108864");
    ck_assert_msg(bw > 44.0 && bw <= 50.0, "busbw %g", bw);
    free(out);
}
END_TEST

START_TEST(check_every_collective)
{
    static const char *colls[] = {"all_reduce",     "broadcast", "reduce",
                                  "all_gather",     "gather",    "scatter",
                                  "reduce_scatter", "all_to_all"};
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        char args[256], *out = NULL;
        snprintf(args, sizeof(args),
                 "--gpus-per-node 5 --coll %s -b 4K -e 64K -f 16 -n 1 -c 1 "
                 "-r 2 --chunk 1KiB --channels 2",
                 colls[i]);
        int rc = perf(args, &out);
        ck_assert_msg(rc == 0, "%s: %s", colls[i], out);
        ck_assert_ptr_nonnull(strstr(out, "Out of bounds values : 0 OK"));
        free(out);
    }
    char *out = NULL;
    int rc =
        perf("--gpus-per-node 3 -d int8 -o bxor -b 1K -e 1K -n 1 -c 1", &out);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
}
END_TEST

/* time (us) of column group g (0 out-of-place, 1 in-place) of the first
 * data row. */
static double time_of(const char *out, int g)
{
    for (const char *l = out; l && *l;) {
        if (*l != '#' && *l != '\n') {
            double v[12];
            char type[32], op[32];
            int n =
                sscanf(l, "%lf %lf %31s %31s %lf %lf %lf %lf %*s %lf", &v[0],
                       &v[1], type, op, &v[2], &v[3], &v[4], &v[5], &v[6]);
            ck_assert_int_eq(n, 9);
            return g ? v[6] : v[3];
        }
        const char *e = strchr(l, '\n');
        l = e ? e + 1 : NULL;
    }
    ck_abort_msg("no row in %s", out);
    return 0;
}

/* nccl-tests' layout: the "out-of-place  in-place" line as it prints it,
 * then time algbw busbw #wrong twice; -c 1 checks both groups. */
START_TEST(in_place_columns)
{
    char *out = NULL;
    int rc =
        perf("--gpus-per-node 4 --coll all_gather -b 64K -e 64K -c 1", &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "#                                            "
                              "                  out-of-place              "
                              "         in-place          \n"),
                  "%s", out);
    ck_assert_msg(strstr(out, "#       size         count      type   redop "
                              "   root     time   algbw   busbw  #wrong     "
                              "time   algbw   busbw  #wrong\n"),
                  "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "Out of bounds values : 0 OK"));
    ck_assert(time_of(out, 0) > 0 && time_of(out, 1) > 0);
    free(out);
}
END_TEST

/* -a combines the ranks' times: the least <= the mean <= the greatest
 * (broadcast: ranks near the root finish first), rank 0's among them. */
START_TEST(average_modes)
{
    double t[4];
    for (int a = 0; a < 4; a++) {
        char args[256], *out = NULL;
        snprintf(args, sizeof(args),
                 "--nodes 2 --gpus-per-node 4 --coll broadcast --algo "
                 "binomial -b 4M -e 4M -a %d",
                 a);
        ck_assert_int_eq(perf(args, &out), 0);
        t[a] = time_of(out, 0);
        free(out);
    }
    ck_assert_msg(t[2] <= t[1] && t[1] <= t[3], "min %g mean %g max %g", t[2],
                  t[1], t[3]);
    ck_assert_msg(t[2] < t[3], "the ranks' times differ: %g %g", t[2], t[3]);
    ck_assert(t[0] >= t[2] && t[0] <= t[3]);
}
END_TEST

/* -m: operations per iteration, the time per operation; -z 1 posts each
 * through the blocking call, so four in a row take four times one. */
START_TEST(aggregated_and_blocking)
{
    char *one = NULL, *agg = NULL, *blk = NULL;
    const char *base = "--nodes 2 --gpus-per-node 2 -b 8M -e 8M";
    char args[256];
    ck_assert_int_eq(perf(base, &one), 0);
    snprintf(args, sizeof(args), "%s -m 4", base);
    ck_assert_int_eq(perf(args, &agg), 0);
    snprintf(args, sizeof(args), "%s -m 4 -z 1", base);
    ck_assert_int_eq(perf(args, &blk), 0);
    double t1 = time_of(one, 0), ta = time_of(agg, 0), tb = time_of(blk, 0);
    ck_assert_msg(fabs(tb - t1) <= 0.01 * t1, "blocking %g vs one %g", tb, t1);
    ck_assert_msg(ta > 0 && ta <= t1 * 1.01, "aggregated %g vs one %g", ta, t1);
    free(one);
    free(agg);
    free(blk);
    /* -g 1, -t 1, -G 0 and -p are accepted */
    ck_assert_int_eq(
        perf("--gpus-per-node 2 -b 1K -e 1K -g 1 -t 1 -G 0 -p 1", &one), 0);
    free(one);
}
END_TEST

START_TEST(usage)
{
    char *out = NULL;
    ck_assert_int_eq(perf("--help", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--inter-bw"));
    ck_assert_ptr_nonnull(strstr(out, "-b, --minbytes"));
    free(out);
    static const char *bad[][2] = {
        {"--intra-bw fast", "--intra-bw: 'fast' is not a bandwidth"},
        {"--inter-lat 5", "--inter-lat: '5' is not a time"},
        {"--nodes 0", "--nodes: '0' is not an integer"},
        {"-b 1M -e 1K", "is larger than -e"},
        {"--coll nope", "--coll: 'nope' is not a collective"},
        {"--algo tree --coll gather", "does not implement"},
        {"-o bxor -d float32", "bitwise"},
        {"-r 8", "root out of range"},
        {"--engine nope", "unknown engine"},
        {"--frobnicate", "unknown argument '--frobnicate'"},
        {"-n", "-n needs a value"},
        {"-g 2", "-g 2: the sim engine drives one GPU per process"},
        {"-t 4", "-t 4: herd perf runs one thread per process"},
        {"-G 1", "-G 1: CUDA graph launches need the nccl engine, not sim"},
        {"-G 1 --engine tcp", "need the nccl engine, not tcp"},
        {"-a 4", "--average: '4' is not an integer in [0, 3]"},
        {"-m 0", "--agg_iters: '0' is not an integer"},
        {"-m 1025", "--agg_iters: '1025' is not an integer in [1, 1024]"},
        {"-z 2", "--blocking: '2' is not an integer in [0, 1]"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = perf(bad[i][0], &out);
        ck_assert_msg(rc == 2, "%s: rc %d", bad[i][0], rc);
        ck_assert_msg(strstr(out, bad[i][1]), "%s: %s", bad[i][0], out);
        free(out);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_perf");
    TCase *t = tcase_create("perf");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, table);
    tcase_add_test(t, once_without_jitter);
    tcase_add_test(t, bus_bandwidth_follows_the_nic);
    tcase_add_test(t, check_every_collective);
    tcase_add_test(t, in_place_columns);
    tcase_add_test(t, average_modes);
    tcase_add_test(t, aggregated_and_blocking);
    tcase_add_test(t, usage);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
