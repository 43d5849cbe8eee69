/* tests/real_tcp_steps.c - the tcp engine's step records (HERD_STEPS_DIR):
 * each rank writes steps-rank<r>.tsv with one line per step of its
 * collectives (not of its point-to-point ops), which match the
 * simulator's records of the same program step for step; herd validate
 * keeps both sides' and compares them per step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/sim.h>

#include "real_tcp_harness.h"
#include "support/testutil.h"
#include "trace/steps.h"

#define P 3

static int prog(herd_comm_t *c, void *arg)
{
    (void)arg;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    void *buf;
    if (herd_alloc(c, 4 * 3000, &buf) != HERD_OK)
        return 1;
    for (int i = 0; i < 2; i++)
        if (herd_all_reduce(c, buf, buf, 3000, HERD_INT32, HERD_SUM, NULL))
            return 2;
    int r = herd_comm_rank(c); /* a p2p op: no step records */
    if (r < 2 && (r == 0 ? herd_send(c, buf, 8, HERD_INT32, 1, 0, NULL)
                         : herd_recv(c, buf, 8, HERD_INT32, 0, 0, NULL)))
        return 3;
    return 0;
}

static void set_steps_dir(int rank, void *arg)
{
    (void)rank;
    setenv("HERD_STEPS_DIR", arg, 1);
}

START_TEST(tcp_writes_steps)
{
    if (!rt_loopback_ok())
        return;
    char *dir = tu_tmpdir(), path[512], err[512];
    int codes[P];
    rt_opts_t o = {.wall_s = 60, .child_cb = set_steps_dir};
    ck_assert_int_eq(rt_spawn_opts(P, prog, dir, &o, codes), 0);
    trace_steps_t meas = {0};
    for (int r = 0; r < P; r++) {
        snprintf(path, sizeof(path), "%s/steps-rank%d.tsv", dir, r);
        ck_assert_msg(trace_steps_is_file(path), "%s", path);
        size_t before = meas.n;
        ck_assert_int_eq(trace_steps_read(path, &meas, err, sizeof(err)),
                         HERD_OK);
        /* ring all_reduce: 2(p-1) sends and receives, two ops */
        ck_assert_uint_eq(meas.n - before, 2 * 4 * (P - 1));
        for (size_t i = before; i < meas.n; i++) {
            ck_assert_int_eq(meas.r[i].rank, r);
            ck_assert_int_eq(meas.r[i].coll, HERD_COLL_ALL_REDUCE);
            ck_assert(meas.r[i].op_start <= meas.r[i].start);
        }
    }
    /* the same program simulated: every step matches */
    herd_sim_opts_t so;
    herd_sim_opts_init(&so);
    so.cluster.nodes = 1;
    so.cluster.gpus_per_node = P;
    setenv("HERD_STEPS_DIR", dir, 1);
    herd_init_t init = {.backend = "sim", .engine_opts = &so};
    ck_assert_int_eq(herd_run(&init, prog, NULL, NULL), HERD_OK);
    unsetenv("HERD_STEPS_DIR");
    snprintf(path, sizeof(path), "%s/steps.tsv", dir);
    trace_steps_t pred = {0};
    ck_assert_int_eq(trace_steps_read(path, &pred, err, sizeof(err)), HERD_OK);
    trace_step_cmp_t c;
    ck_assert_int_eq(trace_steps_compare(&pred, &meas, &c), HERD_OK);
    ck_assert_uint_eq(c.matched, meas.n);
    ck_assert_uint_eq(c.only_pred, 0);
    ck_assert_uint_eq(c.only_meas, 0);
    ck_assert_uint_eq(c.differ, 0);
    ck_assert_uint_eq(c.nrows, P * 4 * (P - 1));
    trace_step_cmp_free(&c);
    trace_steps_free(&pred);
    trace_steps_free(&meas);
    tu_tmpdir_free(dir);
}
END_TEST

/* A directory that cannot take the records is said, and the run goes on. */
START_TEST(tcp_unwritable_dir)
{
    if (!rt_loopback_ok())
        return;
    int codes[P];
    rt_opts_t o = {.wall_s = 60, .child_cb = set_steps_dir};
    ck_assert_int_eq(
        rt_spawn_opts(P, prog, "/nonexistent/herd-steps", &o, codes), 0);
}
END_TEST

/* Each row of report.md gives the measured durations' p10 - p90 around
 * their median, and the footer counts the rows whose prediction lies in
 * it. Returns the rows checked. */
static int check_spread(const char *md)
{
    int rows = 0, in = 0;
    for (const char *l = strstr(md, "\n| all_reduce |"); l;
         l = strstr(l + 1, "\n| all_reduce |")) {
        char name[32], algo[16], size[32], label[32];
        double pred, meas, lo, hi, err;
        unsigned n;
        int got =
            sscanf(l + 1,
                   "| %31[^ |] | %15[^ |] | %31[^|]| %31[^ |] | %u | "
                   "%lf | %lf | %lf - %lf | %lf%%",
                   name, algo, size, label, &n, &pred, &meas, &lo, &hi, &err);
        ck_assert_msg(got == 10, "row not parsed (%d): %.120s", got, l + 1);
        ck_assert_msg(lo > 0 && lo <= meas && meas <= hi,
                      "p10 %.3f, median %.3f, p90 %.3f", lo, meas, hi);
        in += pred >= lo && pred <= hi;
        rows++;
    }
    char want[64];
    snprintf(want, sizeof(want), "; %d predicted within the measured p10 - p90",
             in);
    ck_assert_msg(strstr(md, want), "footer lacks \"%s\"", want);
    return rows;
}

/* herd validate keeps both sides' records and compares them per step. */
START_TEST(validate_compares_steps)
{
    if (!rt_loopback_ok())
        return;
    char *dir = tu_tmpdir(), args[2048], src[1024], *out = NULL;
    snprintf(args, sizeof(args),
             "validate %s --nproc 2 --no-calibrate --set "
             "workload.sweep.max=1MiB --timeout 60 -o %s/v",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    char *md = tu_read_in(dir, "v/report.md");
    ck_assert_msg(md && strstr(md, "steps: [all_reduce/steps.md]"), "%s", md);
    ck_assert_int_eq(check_spread(md), 3); /* ring, tree, rhd at 1 MiB */
    free(md);
    md = tu_read_in(dir, "v/all_reduce/steps.md");
    ck_assert_msg(md && strstr(md, "| all_reduce | ring | 1048576 | ") &&
                      strstr(md, "| all_reduce | tree | 1048576 | ") &&
                      strstr(md, "| all_reduce | rhd | 1048576 | "),
                  "%s", md);
    free(md);
    char *tsv = tu_read_in(dir, "v/all_reduce/steps.tsv");
    ck_assert_msg(tsv && !strncmp(tsv, "coll\talgo\t", 10), "%s", tsv);
    free(tsv);
    tu_tmpdir_free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("real_tcp_steps");
    TCase *t = tcase_create("steps");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, tcp_writes_steps);
    tcase_add_test(t, tcp_unwritable_dir);
    tcase_add_test(t, validate_compares_steps);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
