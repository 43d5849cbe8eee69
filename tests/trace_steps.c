/* tests/trace_steps.c - step records (HERD_STEPS_DIR): the simulator
 * writes one line per step of every rank's collectives, with its
 * symmetry shortcut aside; the reader takes them back and refuses
 * malformed files at file:line:column; the comparison matches steps by
 * (rank, group, sequence, step) and reports medians per rank and step;
 * `herd compare` takes step records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "core/sched.h"
#include "support/testutil.h"
#include "trace/steps.h"

#define P 4

static int ring_prog(herd_comm_t *c, void *arg)
{
    (void)arg;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    void *buf;
    if (herd_alloc(c, 4 * 4000, &buf) != HERD_OK)
        return 1;
    for (int i = 0; i < 2; i++)
        if (herd_all_reduce(c, buf, buf, 4000, HERD_FLOAT32, HERD_SUM, NULL))
            return 2;
    return 0;
}

/* Runs two ring all_reduces on 2 nodes x 2 GPUs with step records in dir
 * (a world the symmetry shortcut would take). */
static void sim_ring(const char *dir)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 2;
    o.cluster.gpus_per_node = 2;
    o.cluster.intra.bandwidth = 100e9;
    o.cluster.intra.latency = 1e-6;
    o.cluster.inter.bandwidth = 10e9;
    o.cluster.inter.latency = 5e-6;
    setenv("HERD_STEPS_DIR", dir, 1);
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    ck_assert_int_eq(herd_run(&init, ring_prog, NULL, NULL), HERD_OK);
    unsetenv("HERD_STEPS_DIR");
}

START_TEST(sim_writes_every_rank)
{
    char *dir = tu_tmpdir(), path[512], err[512];
    sim_ring(dir);
    snprintf(path, sizeof(path), "%s/steps.tsv", dir);
    ck_assert(trace_steps_is_file(path));
    trace_steps_t s = {0};
    ck_assert_int_eq(trace_steps_read(path, &s, err, sizeof(err)), HERD_OK);
    /* ring all_reduce: 2(p-1) sends and as many receives per rank, two
     * ops, every rank (the shortcut would have simulated 2 of 4) */
    ck_assert_uint_eq(s.n, 2 * P * 4 * (P - 1));
    int per_rank[P] = {0}, sends = 0;
    for (size_t i = 0; i < s.n; i++) {
        const core_step_rec_t *r = &s.r[i];
        ck_assert(r->rank >= 0 && r->rank < P);
        per_rank[r->rank]++;
        ck_assert_int_eq(r->coll, HERD_COLL_ALL_REDUCE);
        ck_assert_int_eq(r->algo, HERD_ALGO_RING);
        ck_assert_uint_eq(r->op_bytes, 16000);
        ck_assert_uint_eq(r->bytes, 4000); /* one block of 1000 floats */
        ck_assert(r->op_start <= r->start && r->start <= r->end);
        if (r->kind == CORE_STEP_SEND) {
            sends++;
            ck_assert_int_eq(r->peer, (r->rank + 1) % P);
            /* a lone block: its transfer time, over NVLink or the NIC */
            uint64_t tx = r->rank % 2 ? 400 : 40;
            ck_assert_uint_eq(r->end - r->start, tx);
        } else {
            ck_assert_int_eq(r->peer, (r->rank + P - 1) % P);
        }
    }
    ck_assert_int_eq(sends, 2 * P * 2 * (P - 1));
    for (int r = 0; r < P; r++)
        ck_assert_int_eq(per_rank[r], 2 * 4 * (P - 1));
    trace_steps_free(&s);
    tu_tmpdir_free(dir);
}
END_TEST

START_TEST(compare_matches_and_shifts)
{
    char *dir = tu_tmpdir(), path[512], err[512];
    sim_ring(dir);
    snprintf(path, sizeof(path), "%s/steps.tsv", dir);
    trace_steps_t a = {0}, b = {0};
    ck_assert_int_eq(trace_steps_read(path, &a, err, sizeof(err)), HERD_OK);
    ck_assert_int_eq(trace_steps_read(path, &b, err, sizeof(err)), HERD_OK);
    /* the "measurement": rank 1 posted 1 ms later on its own clock and its
     * step 3 ended 7 us late; rank 3's records are missing */
    size_t keep = 0;
    for (size_t i = 0; i < b.n; i++) {
        core_step_rec_t r = b.r[i];
        if (r.rank == 3)
            continue;
        if (r.rank == 1) {
            r.op_start += 1000000, r.start += 1000000, r.end += 1000000;
            if (r.step == 3)
                r.end += 7000;
        }
        if (r.rank == 2 && r.seq == 1 && r.step == 0)
            r.bytes += 4; /* not the same step: left out */
        b.r[keep++] = r;
    }
    size_t dropped = b.n - keep;
    b.n = keep;
    trace_step_cmp_t c;
    ck_assert_int_eq(trace_steps_compare(&a, &b, &c), HERD_OK);
    ck_assert_uint_eq(c.matched, keep - 1);
    ck_assert_uint_eq(c.differ, 1);
    ck_assert_uint_eq(c.only_pred, dropped);
    ck_assert_uint_eq(c.only_meas, 0);
    ck_assert_uint_eq(c.nrows, 3 * 4 * (P - 1)); /* ranks 0-2, per step */
    for (size_t i = 0; i < c.nrows; i++) {
        const trace_step_row_t *r = &c.rows[i];
        ck_assert_uint_eq(r->n, r->rank == 2 && r->step == 0 ? 1 : 2);
        ck_assert(r->pred_start == r->meas_start);
        double want = r->rank == 1 && r->step == 3 ? 7000 : 0;
        ck_assert_msg(r->meas_end - r->pred_end == want, "rank %d step %u",
                      r->rank, r->step);
    }
    trace_step_cmp_free(&c);
    trace_steps_free(&a);
    trace_steps_free(&b);
    tu_tmpdir_free(dir);
}
END_TEST

/* Writes text to dir/name and returns the reader's error. */
static herd_status_t read_text(const char *dir, const char *text, char *err,
                               size_t errlen)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/bad.tsv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    trace_steps_t s = {0};
    herd_status_t st = trace_steps_read(path, &s, err, errlen);
    trace_steps_free(&s);
    return st;
}

START_TEST(reader_refuses_malformed)
{
    char *dir = tu_tmpdir(), err[512], text[4096];
    static const struct {
        const char *line, *where, *what;
    } bad[] = {
        {"0\t0\t1\tall_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t5",
         ":2:42:", "fewer than 14"},
        {"0\t0\t1\tall_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t5\t9\t1\t2",
         ":2:", "more than 14"},
        {"0\t0\t1\tall_reduce\tring\t16\t0\t0\tsned\t1\t0\t4\t5\t9\t",
         ":2:", "bad kind"},
        {"0\t0\tx\tall_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t5\t9",
         ":2:5:", "bad seq"},
        {"0\t0\t1\tall_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t9\t5",
         ":2:1:", "end_ns before start_ns"},
        {"-1\t0\t1\tall_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t5\t9",
         ":2:1:", "bad rank"},
        {"0\t0\t1\tal_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t5\t9",
         ":2:7:", "bad coll"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "%s\n%s\n", core_steplog_header,
                 bad[i].line);
        ck_assert_int_eq(read_text(dir, text, err, sizeof(err)),
                         HERD_ERR_INVALID_ARG);
        ck_assert_msg(strstr(err, bad[i].where) && strstr(err, bad[i].what),
                      "case %zu: %s", i, err);
    }
    /* only the header: no records, and nothing to compare */
    char path[512];
    snprintf(text, sizeof(text), "%s\n", core_steplog_header);
    ck_assert_int_eq(read_text(dir, text, err, sizeof(err)), HERD_OK);
    snprintf(path, sizeof(path), "%s/bad.tsv", dir);
    trace_steps_t a = {0}, b = {0};
    ck_assert_int_eq(trace_steps_read(path, &a, err, sizeof(err)), HERD_OK);
    ck_assert_uint_eq(a.n, 0);
    trace_step_cmp_t c;
    ck_assert_int_eq(trace_steps_compare(&a, &b, &c), HERD_OK);
    ck_assert_uint_eq(c.matched + c.nrows + c.only_pred + c.only_meas, 0);
    trace_step_cmp_free(&c);
    trace_steps_free(&a);
    ck_assert_int_eq(read_text(dir, "", err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_msg(strstr(err, ":1:1: empty"), "%s", err);
    ck_assert_int_eq(read_text(dir, "rank\tstep\n", err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_msg(strstr(err, ":1:1: not step records"), "%s", err);
    /* a line longer than the reader's buffer */
    size_t n = snprintf(text, sizeof(text), "%s\n", core_steplog_header);
    memset(text + n, '7', 2000);
    text[n + 2000] = '\0';
    ck_assert_int_eq(read_text(dir, text, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_msg(strstr(err, ":2:1023: line longer"), "%s", err);
    tu_tmpdir_free(dir);
}
END_TEST

START_TEST(cli_compares_steps)
{
    char *dir = tu_tmpdir(), args[1024], *out = NULL;
    sim_ring(dir);
    snprintf(args, sizeof(args), "compare %s/steps.tsv %s/steps.tsv -o %s/c",
             dir, dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "96 steps matched (0 predicted only, 0 "
                              "measured only, 0 differ") &&
                      strstr(out, "all_reduce ring"),
                  "%s", out);
    free(out);
    char *tsv = tu_read_in(dir, "c/steps.tsv");
    ck_assert_ptr_nonnull(tsv);
    static const char head[] = "coll\talgo\top_bytes\trank\tstep\t";
    ck_assert_msg(!strncmp(tsv, head, sizeof(head) - 1), "%s", tsv);
    free(tsv);
    /* the widest gap per collective, algorithm and size, among receives
     * (a run against itself: none) */
    char *md = tu_read_in(dir, "c/steps.md");
    ck_assert_msg(md && strstr(md, "| all_reduce | ring | 16000 | ") &&
                      strstr(md, " recv") && strstr(md, "| +0.000 |") &&
                      !strstr(md, "send to"),
                  "%s", md);
    free(md);
    tu_tmpdir_free(dir);
}
END_TEST

/* herd sweep's concurrent workers would write one file at once: the
 * variable is ignored, with a note, and no file is left half written. */
START_TEST(sweep_jobs_ignore_steps)
{
    char *dir = tu_tmpdir(), cmd[2048], src[1024], path[600], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "HERD_STEPS_DIR=%s %s sweep %s --set cluster.nodes=1 --set "
             "ddp.steps=1 --set ddp.bucket_cap_mb=5,25 --jobs 2 2>&1",
             dir, tu_herd_binary(),
             tu_src_path(src, sizeof(src), "scenarios/ddp-gpt2-64n.yaml"));
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "HERD_STEPS_DIR ignored with --jobs 2"), "%s",
                  out);
    free(out);
    snprintf(path, sizeof(path), "%s/steps.tsv", dir);
    ck_assert(!trace_steps_is_file(path));
    tu_tmpdir_free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_steps");
    TCase *t = tcase_create("steps");
    tcase_add_test(t, sim_writes_every_rank);
    tcase_add_test(t, compare_matches_and_shifts);
    tcase_add_test(t, reader_refuses_malformed);
    tcase_add_test(t, cli_compares_steps);
    tcase_add_test(t, sweep_jobs_ignore_steps);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
