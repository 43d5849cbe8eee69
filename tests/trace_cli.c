/* tests/trace_cli.c - the commands end to end: herd sim on the shipped
 * scenarios (timeline JSON valid, TSV and PNG written, hangs diagnosed
 * with exit 1), herd check (exit 2 with file:line:column), herd trace
 * rescale, herd replay on sim, herd compare, and a missing gnuplot. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/testutil.h"

/* Remove a test's temporary folder (made by tu_tmpdir: safe characters). */
static void rm_dir(char *dir)
{
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

static char *run(const char *fmt, const char *a, const char *b, int *rc)
{
    char cmd[4096], src[1024];
    tu_src_path(src, sizeof(src), "");
    snprintf(cmd, sizeof(cmd), "cd %s && ", src);
    size_t k = strlen(cmd);
    snprintf(cmd + k, sizeof(cmd) - k, fmt, tu_herd_binary(), a, b);
    char *out = NULL;
    *rc = tu_run(cmd, &out);
    return out;
}

static int file_starts_with(const char *path, const char *magic, size_t n)
{
    char buf[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    return got == n && !memcmp(buf, magic, n);
}

/* Every X event of a timeline has the Chrome trace fields. */
static size_t check_chrome(const char *path)
{
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    ck_assert_msg(root, "%s: %s", path, e.text);
    size_t i, nx = 0;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
    {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        ck_assert_ptr_nonnull(ph);
        if (strcmp(ph, "X"))
            continue;
        nx++;
        ck_assert(json_is_string(json_object_get(ev, "name")));
        ck_assert(json_is_number(json_object_get(ev, "ts")));
        ck_assert(json_is_number(json_object_get(ev, "dur")));
        ck_assert(json_is_integer(json_object_get(ev, "pid")));
        ck_assert(json_is_integer(json_object_get(ev, "tid")));
    }
    json_decref(root);
    return nx;
}

START_TEST(test_sim_straggler)
{
    char *dir = tu_tmpdir(), path[1024];
    int rc;
    char *out = run("%s sim scenarios/straggler.yaml -o %s%s", dir, "", &rc);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "result: ok") && strstr(out, "all_reduce") &&
                      strstr(out, "ms over 2 steps"),
                  "%s", out);
    snprintf(path, sizeof(path), "%s/timeline.json", dir);
    ck_assert_uint_gt(check_chrome(path), 100);
    snprintf(path, sizeof(path), "%s/timeline.tsv", dir);
    ck_assert_int_eq(access(path, R_OK), 0);
    /* the effective scenario is recorded and loads again */
    snprintf(path, sizeof(path), "%s/scenario.yaml", dir);
    char *chk = run("%s check %s%s", path, "", &rc);
    ck_assert_msg(rc == 0 &&
                      strstr(chk, "ok (scenario, 16 ranks; name straggler)"),
                  "%s", chk);
    free(chk);
    if (strstr(out, "gantt.png")) {
        snprintf(path, sizeof(path), "%s/gantt.png", dir);
        ck_assert(file_starts_with(path, "\x89PNG", 4));
        snprintf(path, sizeof(path), "%s/gantt.svg", dir);
        ck_assert(file_starts_with(path, "<?xml", 5));
    }
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_sim_sweep)
{
    char *dir = tu_tmpdir(), path[1024];
    int rc;
    char *out = run("%s sim scenarios/h100-8gpu.yaml -o %s --set "
                    "workload.sweep.max=64KiB --set "
                    "'workload.sweep.algorithms=[ring]'%s",
                    dir, "", &rc);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "algorithm ring") && strstr(out, "busbw") &&
                      strstr(out, "32768"),
                  "%s", out);
    snprintf(path, sizeof(path), "%s/sweep.tsv", dir);
    ck_assert_int_eq(access(path, R_OK), 0);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_sim_hangs)
{
    char *dir = tu_tmpdir();
    int rc;
    char *out = run("%s sim scenarios/mismatch-hang.yaml -o %s --no-plots%s",
                    dir, "", &rc);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "hang detected") && strstr(out, "mismatch"), "%s",
                  out);
    free(out);
    out =
        run("%s sim scenarios/dead-rank.yaml -o %s --no-plots%s", dir, "", &rc);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "missing rank") || strstr(out, "dead"), "%s",
                  out);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_check)
{
    int rc;
    char *out = run("%s check scenarios/straggler.yaml "
                    "scenarios/traces/dp-steps.json%s%s",
                    "", "", &rc);
    ck_assert_msg(rc == 0 &&
                      strstr(out, "ok (scenario, 16 ranks; name straggler)"),
                  "%s", out);
    free(out);
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/bad.yaml", dir);
    FILE *f = fopen(path, "w");
    fputs("cluster:\n  nodes: 4\n  inter: {bandwidth: 400Gbit}\n", f);
    fclose(f);
    out = run("%s check %s 2>&1%s", path, "", &rc);
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(out, "bad.yaml:3:22: cluster.inter.bandwidth: bad "
                              "value '400Gbit'"),
                  "%s", out);
    free(out);
    out = run("%s sim %s 2>&1%s", path, "", &rc);
    ck_assert_int_eq(rc, 2);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_rescale_replay_compare)
{
    char *dir = tu_tmpdir(), a[1024], b[1024];
    int rc;
    snprintf(a, sizeof(a), "%s/r64.json", dir);
    char *out = run("%s trace rescale scenarios/traces/dp-steps.json "
                    "--world-size 64 -o %s%s",
                    a, "", &rc);
    ck_assert_msg(rc == 0 && strstr(out, "64 ranks"), "%s", out);
    free(out);
    snprintf(b, sizeof(b), "%s/rp", dir);
    out = run("%s replay %s --engine sim --no-plots -o %s", a, b, &rc);
    ck_assert_msg(rc == 0 && strstr(out, "64 ranks"), "%s", out);
    free(out);
    snprintf(a, sizeof(a), "%s/rp/timeline.json", dir);
    snprintf(b, sizeof(b), "%s/cmp", dir);
    char cmd_tail[2200];
    snprintf(cmd_tail, sizeof(cmd_tail), "%s -o %s --no-plots", a, b);
    out = run("%s compare %s %s", a, cmd_tail, &rc);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "all_reduce") && strstr(out, "0.0%") &&
                      strstr(out, "error +0.0%"),
                  "%s", out);
    free(out);
    snprintf(a, sizeof(a), "%s/root.json", dir);
    FILE *f = fopen(a, "w");
    fputs("{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 8,"
          " \"ops\": [{\"op\": \"broadcast\", \"count\": 4, \"root\": 6}]}",
          f);
    fclose(f);
    out = run("%s trace rescale %s --world-size 4 -o %s/x.json 2>&1", a, dir,
              &rc);
    ck_assert_msg(rc == 2 && strstr(out, "root 6 does not exist in 4 ranks"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

/* Predicted (sim) against measured (tcp, 2 processes under herd launch):
 * the same trace, matched op by op. */
START_TEST(test_tcp_measured_compare)
{
    char *dir = tu_tmpdir(), tr[1024], args[3000];
    snprintf(tr, sizeof(tr), "%s/t.json", dir);
    FILE *f = fopen(tr, "w");
    fputs("{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2,"
          " \"ops\": [{\"op\": \"compute\", \"dur_us\": 2000},"
          " {\"op\": \"all_reduce\", \"count\": 4096, \"async\": \"a\"},"
          " {\"op\": \"compute\", \"dur_us\": 1000},"
          " {\"op\": \"wait\", \"async\": \"a\"},"
          " {\"op\": \"broadcast\", \"count\": 100, \"root\": 1}]}",
          f);
    fclose(f);
    int rc;
    snprintf(args, sizeof(args),
             "%s --engine sim -o %s/pred --no-plots > /dev/null", tr, dir);
    char *out = run("%s replay %s%s", args, "", &rc);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    snprintf(args, sizeof(args),
             "--standalone --nproc-per-node 2 --quiet -- %s replay %s "
             "--engine tcp -o %s/meas",
             tu_herd_binary(), tr, dir);
    out = run("%s launch %s 2>&1%s", args, "", &rc);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    snprintf(args, sizeof(args),
             "%s/pred/timeline.json %s/meas/timeline-rank0.json "
             "%s/meas/timeline-rank1.json -o %s/cmp --no-plots",
             dir, dir, dir, dir);
    out = run("%s compare %s%s", args, "", &rc);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "matched 8 ops; unmatched: 0 predicted, 0 "
                              "measured; 0 differ"),
                  "%s", out);
    ck_assert_msg(strstr(out, "all_reduce") && strstr(out, "broadcast") &&
                      strstr(out, "compute"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_perf_scenario)
{
    int rc;
    char *out = run("%s perf --scenario scenarios/h100-8gpu.yaml -b 1MiB -e "
                    "1MiB -n 1 2>&1%s%s",
                    "", "", &rc);
    ck_assert_msg(rc == 0 && strstr(out, "busbw") && strstr(out, "1048576"),
                  "%s", out);
    free(out);
    out = run("%s perf --scenario scenarios/nonexistent.yaml 2>&1%s%s", "", "",
              &rc);
    ck_assert_msg(rc == 2 && strstr(out, "nonexistent.yaml: cannot open"), "%s",
                  out);
    free(out);
}
END_TEST

START_TEST(test_replay_set)
{
    char *dir = tu_tmpdir();
    int rc;
    char *out = run("%s replay scenarios/traces/dp-steps.json --no-plots -o "
                    "%s --set cluster.gpus_per_node=4 --set cluster.nodes=2%s",
                    dir, "", &rc);
    ck_assert_msg(rc == 0 && strstr(out, "on sim: 8 ranks"), "%s", out);
    free(out);
    out = run("%s replay scenarios/traces/dp-steps.json -o %s --set "
              "cluster.nodez=2 2>&1%s",
              dir, "", &rc);
    ck_assert_msg(rc == 2 && strstr(out, "--set cluster.nodez: unknown key"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_no_gnuplot)
{
    char *dir = tu_tmpdir();
    int rc;
    char *out = run("PATH=/nonexistent %s sim scenarios/mismatch-hang.yaml "
                    "-o %s 2>&1%s",
                    dir, "", &rc);
    ck_assert_int_eq(rc, 1); /* the hang, not the plots */
    ck_assert_msg(strstr(out, "plots skipped: gnuplot not found"), "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sim_straggler);
    tcase_add_test(tc, test_sim_sweep);
    tcase_add_test(tc, test_sim_hangs);
    tcase_add_test(tc, test_check);
    tcase_add_test(tc, test_rescale_replay_compare);
    tcase_add_test(tc, test_perf_scenario);
    tcase_add_test(tc, test_replay_set);
    tcase_add_test(tc, test_tcp_measured_compare);
    tcase_add_test(tc, test_no_gnuplot);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
