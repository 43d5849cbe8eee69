/* tests/sim_progress.c - long runs seen and stopped: the simulator calls
 * herd_sim_opts_t.progress_cb with growing events, simulated time and
 * collective steps, and watching changes no prediction; a nonzero
 * opts.stop ends the run with HERD_ERR_ABORTED and a partial report
 * (where it was, the collective in progress, every rank's state), and
 * the programs unwind; `herd sim` does the same on SIGINT and still
 * writes what it has. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

typedef struct watch {
    int calls, stop_after;
    herd_sim_progress_t last;
    int bad; /* a value went backwards or out of range */
    volatile sig_atomic_t stop;
} watch_t;

static void on_progress(const herd_sim_progress_t *p, void *arg)
{
    watch_t *w = arg;
    if (w->calls &&
        (p->events < w->last.events || p->now_ns < w->last.now_ns ||
         p->steps_done < w->last.steps_done || p->wall_s < w->last.wall_s))
        w->bad = 1;
    if (p->steps_done > p->steps_total || p->ranks != 64 ||
        p->ranks_done > p->ranks)
        w->bad = 1;
    w->last = *p;
    if (++w->calls == w->stop_after)
        w->stop = 1;
}

typedef struct tl {
    uint64_t hash;
    int nrec;
} tl_t;

static void on_rec(const herd_tl_rec_t *r, void *arg)
{
    tl_t *t = arg;
    uint64_t v[] = {(uint64_t)r->kind, (uint64_t)r->rank, r->seq,
                    r->start_ns,       r->end_ns,         (uint64_t)r->status};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        t->hash = (t->hash ^ v[i]) * 0x100000001b3ULL;
    t->nrec++;
}

/* Three ring all_reduces of 64 MiB on 64 ranks, 4 channels of 256 KiB
 * chunks: a few million events. */
static int prog(herd_comm_t *c, void *arg)
{
    (void)arg;
    void *buf;
    if (herd_alloc(c, 64 << 20, &buf) ||
        herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING) ||
        herd_comm_set_channels(c, 4, 256 << 10))
        return 1;
    for (int i = 0; i < 3; i++) {
        herd_compute(c, 1e-4, "backward");
        if (herd_all_reduce(c, buf, buf, 16 << 20, HERD_FLOAT32, HERD_SUM,
                            NULL))
            return 2;
    }
    return 0;
}

static herd_status_t run(watch_t *w, tl_t *t, herd_run_info_t *info)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 8;
    if (w) {
        o.progress_cb = on_progress;
        o.progress_arg = w;
        o.progress_s = 1e-9; /* every check */
        o.stop = &w->stop;
    }
    memset(t, 0, sizeof(*t));
    herd_init_t init = {.backend = "sim",
                        .engine_opts = &o,
                        .timeline_cb = on_rec,
                        .timeline_arg = t};
    return herd_run(&init, prog, NULL, info);
}

START_TEST(test_progress_changes_nothing)
{
    tl_t plain, watched;
    herd_run_info_t a, b;
    ck_assert_int_eq(run(NULL, &plain, &a), HERD_OK);
    watch_t w = {.stop_after = -1};
    ck_assert_int_eq(run(&w, &watched, &b), HERD_OK);
    ck_assert_uint_eq(plain.hash, watched.hash);
    ck_assert_int_eq(plain.nrec, watched.nrec);
    ck_assert_uint_eq(a.end_time_ns, b.end_time_ns);
    ck_assert_uint_eq(a.events, b.events);
    ck_assert_int_gt(w.calls, 10);
    ck_assert_int_eq(w.bad, 0);
    ck_assert_uint_gt(w.last.steps_done, 0);
    ck_assert_uint_gt(w.last.now_ns, 0);
    ck_assert_ptr_null(b.report);
    herd_run_info_clear(&a);
    herd_run_info_clear(&b);
}
END_TEST

START_TEST(test_stop_gives_partial_report)
{
    tl_t plain, t;
    herd_run_info_t a, info;
    ck_assert_int_eq(run(NULL, &plain, &a), HERD_OK);
    watch_t w = {.stop_after = 5};
    ck_assert_int_eq(run(&w, &t, &info), HERD_ERR_ABORTED);
    ck_assert_int_eq(w.calls, 5);
    ck_assert_uint_lt(info.end_time_ns, a.end_time_ns);
    ck_assert_uint_lt(info.events, a.events);
    ck_assert_ptr_nonnull(info.report);
    ck_assert_msg(strstr(info.report, "herd sim: interrupted at t=") &&
                      strstr(info.report, "a partial report") &&
                      strstr(info.report, "collective steps: ") &&
                      strstr(info.report, "in progress: all_reduce on group "
                                          "0, seq ") &&
                      strstr(info.report, "ranks 0-63: waiting in "
                                          "all_reduce"),
                  "%s", info.report);
    ck_assert_ptr_null(strstr(info.report, "class:"));
    ck_assert_int_lt(t.nrec, plain.nrec); /* what finished was recorded */
    herd_run_info_clear(&a);
    herd_run_info_clear(&info);
}
END_TEST

/* herd sim on SIGINT: the run stops, the partial report and the outputs
 * of what ran are written, exit 1. The interrupt is sent once the
 * progress line shows the run under way (a run of minutes otherwise). */
START_TEST(test_cli_sigint)
{
    char *dir = tu_tmpdir();
    ck_assert_ptr_nonnull(dir);
    char src[1024], out[1400], err[1400], odir[1400];
    tu_src_path(src, sizeof(src), "scenarios/64n-8gpu-400g.yaml");
    snprintf(out, sizeof(out), "%s/out.txt", dir);
    snprintf(err, sizeof(err), "%s/err.txt", dir);
    snprintf(odir, sizeof(odir), "%s/o", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("HERD_PROGRESS", "1", 1);
        if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr))
            _exit(99);
        execl(tu_herd_binary(), "herd", "sim", src, "-o", odir, "--no-plots",
              "--set", "cluster.nodes=512", "--set",
              "workload.sweep.algorithms=[ring]", "--set",
              "workload.sweep.min=256MiB", (char *)NULL);
        _exit(98);
    }
    int seen = 0, st = 0;
    pid_t gone = 0;
    for (int i = 0; i < 6000 && !seen && !gone; i++) { /* up to 10 min */
        char *e = tu_read_file(err);
        seen = e && strstr(e, "herd: simulating: ");
        free(e);
        if (!seen && !(gone = waitpid(pid, &st, WNOHANG)))
            usleep(100000);
    }
    /* a run that ends first (a faster simulator) fails here, not later */
    ck_assert_msg(seen, "no progress line (herd %s)",
                  gone ? "finished first" : "still running");
    kill(pid, SIGINT);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 1);
    char *o = tu_read_file(out);
    ck_assert_ptr_nonnull(o);
    ck_assert_msg(strstr(o, "result: operation aborted") &&
                      strstr(o, "herd sim: interrupted at t=") &&
                      strstr(o, "in progress: all_reduce") &&
                      strstr(o, "timeline.tsv"),
                  "%s", o);
    ck_assert_ptr_null(strstr(o, "rank 0 failed"));
    free(o);
    char cmd[1500];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

int main(void)
{
    /* these need long runs: the symmetry shortcut (sim/sym.c) would
     * finish these rings on representatives in a blink */
    setenv("HERD_SIM_SYMMETRY", "0", 1);
    Suite *s = suite_create("sim_progress");
    TCase *tc = tcase_create("progress");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_progress_changes_nothing);
    tcase_add_test(tc, test_stop_gives_partial_report);
    tcase_add_test(tc, test_cli_sigint);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
