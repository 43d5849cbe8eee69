/* tests/real_tcp_abort.c - an abort notice on a pair that has never
 * settled reaches the lower rank even when that rank is outside herd
 * when the notice is sent, and even when its senders have exited before
 * it enters herd again: the lower rank fails with HERD_ERR_PEER_FAILED
 * naming the dead rank, well before its collective timeout (10 s), not a
 * timeout and not "rank 1 failed" (ranks that left because rank 2 died;
 * blaming them would send a user after the wrong process).
 *
 * A higher rank's first message on a pair waits for the lower rank's
 * one-byte answer to its handshake (link.c), and the lower rank answers
 * only from inside herd. Rank 0 is that lower rank and stays away from
 * herd (pid files in a temporary directory say when to come back):
 *   - "notice": four ranks, ring all_reduce. Ranks 1-3 first run a ring
 *     on the subgroup {1, 2, 3} (their pairs settle; rank 0 has no socket
 *     yet), then the world ring, in which rank 2 is killed after posting.
 *     Ranks 1 and 3 see its socket close and forward ABORT(2) to rank 0,
 *     which they have never sent to (rank 3 has only queued its first
 *     chunk for it). Rank 0 then joins the world ring.
 *   - "refused": three ranks. Ranks 1 and 2 run on {1, 2}; rank 2 dies
 *     between two collectives and rank 1 forwards ABORT(2) to rank 0.
 *     Rank 0 joins a collective on {0, 1}: it connects to rank 1 itself
 *     (or finds it gone), so it refuses rank 1's connection, the only one
 *     that carries the notice.
 * Rank 0 comes back "while flushing" (its informants have failed and are
 * in herd_run's exit, which waits up to 2 s for queued messages) or
 * "after exit" (they are gone; rank 0 has only its kernel buffers).
 *
 * Before the fix three of the four failed: the notice waited behind the
 * unanswered handshake and died with its sender (or with the connection
 * rank 0 refused), and rank 0 blamed rank 1 ("cannot connect to rank 1",
 * or "connection closed without goodbye"). Now a higher rank writes an
 * abort notice on its waiting connection at once, the lower rank reads it
 * even from a connection it refuses, and a send that cannot connect is a
 * suspicion (like a broken socket) that notices already received
 * explain, not yet a verdict. */
#include <errno.h>

#include "real_tcp_harness.h"
#include "support/testutil.h"

#define AB_COUNT 4096u
#define AB_DEAD 2

typedef struct ab_cfg {
    char dir[512];
    int wait_exit; /* rank 0 waits until ranks 1 and 3 have exited */
} ab_cfg_t;

/* dir/<what><rank> holding this process's pid, written atomically. */
static int ab_mark(const ab_cfg_t *cfg, const char *what, int rank)
{
    char tmp[600], path[600];
    snprintf(tmp, sizeof(tmp), "%s/.%s%d", cfg->dir, what, rank);
    snprintf(path, sizeof(path), "%s/%s%d", cfg->dir, what, rank);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%ld\n", (long)getpid());
    return fclose(f) == 0 && rename(tmp, path) == 0 ? 0 : -1;
}

/* Waits (up to 30 s) for dir/<what><rank>; returns the pid in it or -1. */
static long ab_await(const ab_cfg_t *cfg, const char *what, int rank)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s%d", cfg->dir, what, rank);
    for (int i = 0; i < 3000; i++) {
        FILE *f = fopen(path, "r");
        long pid = -1;
        if (f) {
            int ok = fscanf(f, "%ld", &pid) == 1;
            fclose(f);
            return ok ? pid : -1;
        }
        usleep(10000);
    }
    return -1;
}

/* Waits (up to 30 s) until process pid is gone (the harness reaps it). */
static int ab_await_exit(long pid)
{
    for (int i = 0; i < 3000; i++) {
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            return 0;
        usleep(10000);
    }
    return -1;
}

/* st is the dead-peer error naming rank AB_DEAD: "rank 2 failed" for the
 * late rank (only a notice can tell it); ranks that saw the socket break
 * may also say "connection to rank 2 lost". */
static int ab_check(herd_comm_t *c, herd_status_t st)
{
    const char *e = herd_last_error(c);
    int late = herd_comm_world_rank(c, herd_comm_rank(c)) == 0;
    char want[32];
    snprintf(want, sizeof(want), late ? "rank %d failed" : "rank %d ", AB_DEAD);
    if (st == HERD_ERR_PEER_FAILED && strstr(e, want))
        return 0;
    fprintf(stderr, "rank %d: got %s (%s), expected %s naming '%s'\n",
            herd_comm_world_rank(c, herd_comm_rank(c)), herd_status_name(st), e,
            herd_status_name(HERD_ERR_PEER_FAILED), want);
    return 1;
}

/* Away from herd until ranks `from`, `from` + step, ... <= to have
 * failed (and, in the worst case, exited); 0 when they have. */
static int ab_stay_away(const ab_cfg_t *cfg, int from, int to, int step)
{
    for (int q = from; q <= to; q += step) {
        long pid = ab_await(cfg, "failed", q);
        if (pid < 0)
            return 10 + q;
        if (cfg->wait_exit && ab_await_exit(pid) != 0)
            return 20 + q;
    }
    return 0;
}

/* Rank 0: away until ranks 1 and 3 have failed; then it joins the world
 * all_reduce. */
static int ab_late_rank(herd_comm_t *c, const ab_cfg_t *cfg, float *x)
{
    int rc = ab_stay_away(cfg, 1, 3, 2);
    if (rc)
        return rc;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    return ab_check(
        c, herd_all_reduce(c, x, x, AB_COUNT, HERD_FLOAT32, HERD_SUM, NULL));
}

/* Ranks 1-3: settle their pairs on a subgroup ring, then the world ring,
 * in which rank 2 dies. */
static int ab_trio_rank(herd_comm_t *c, const ab_cfg_t *cfg, float *x)
{
    int r = herd_comm_rank(c), trio[3] = {1, 2, 3};
    herd_comm_t *g = NULL;
    if (herd_new_group(c, trio, 3, &g) != HERD_OK || !g)
        return 30;
    herd_comm_set_algo(g, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    herd_status_t st =
        herd_all_reduce(g, x, x, AB_COUNT, HERD_FLOAT32, HERD_SUM, NULL);
    if (st != HERD_OK)
        fprintf(stderr, "rank %d: subgroup all_reduce: %s (%s)\n", r,
                herd_status_name(st), herd_last_error(g));
    herd_comm_destroy(g);
    if (st != HERD_OK)
        return 31;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    /* Rank 2 dies only once the others are done with the subgroup. */
    if (r != AB_DEAD && ab_mark(cfg, "warm", r) != 0)
        return 33;
    if (r == AB_DEAD &&
        (ab_await(cfg, "warm", 1) < 0 || ab_await(cfg, "warm", 3) < 0))
        return 34;
    if (r == AB_DEAD) {
        herd_req_t *req; /* posting sends the first chunk, then death */
        herd_all_reduce(c, x, x, AB_COUNT, HERD_FLOAT32, HERD_SUM, &req);
        raise(SIGKILL);
    }
    st = herd_all_reduce(c, x, x, AB_COUNT, HERD_FLOAT32, HERD_SUM, NULL);
    int bad = ab_check(c, st);
    if (ab_mark(cfg, "failed", r) != 0)
        return 32;
    return bad;
}

static int ab_main(herd_comm_t *c, void *arg)
{
    const ab_cfg_t *cfg = arg;
    float *x = calloc(AB_COUNT, sizeof(float));
    if (!x)
        return 40;
    int rc = herd_comm_rank(c) == 0 ? ab_late_rank(c, cfg, x)
                                    : ab_trio_rank(c, cfg, x);
    free(x);
    return rc;
}

/* Three ranks: ranks 1 and 2 run on the subgroup {1, 2}, and rank 2
 * dies in their second all_reduce. Rank 1 forwards ABORT(2) to rank 0 on
 * a connection of its own, then leaves. Rank 0's collective is on {0, 1}:
 * it connects to rank 1 itself (or finds it gone), so it refuses rank 1's
 * connection, and the notice is on that refused socket, from the only
 * rank that can tell rank 0 about rank 2. */
static int ab_refused_main(herd_comm_t *c, void *arg)
{
    const ab_cfg_t *cfg = arg;
    int r = herd_comm_rank(c), duo[2] = {1, AB_DEAD}, late[2] = {0, 1};
    herd_comm_t *g12 = NULL, *g01 = NULL;
    float *x = calloc(AB_COUNT, sizeof(float));
    if (!x || herd_new_group(c, duo, 2, &g12) != HERD_OK ||
        herd_new_group(c, late, 2, &g01) != HERD_OK) {
        free(x);
        return 30;
    }
    herd_comm_t *gs[2] = {g12, g01};
    for (int i = 0; i < 2; i++)
        if (gs[i])
            herd_comm_set_algo(gs[i], HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    int rc = 0;
    if (r == 0) {
        rc = ab_stay_away(cfg, 1, 1, 1);
        if (!rc)
            rc = ab_check(g01, herd_all_reduce(g01, x, x, AB_COUNT,
                                               HERD_FLOAT32, HERD_SUM, NULL));
    } else if (herd_all_reduce(g12, x, x, AB_COUNT, HERD_FLOAT32, HERD_SUM,
                               NULL) != HERD_OK) {
        rc = 31;
    } else if (r == AB_DEAD) {
        /* Between rank 1's collectives, once it is done with the first. */
        if (ab_await(cfg, "warm", 1) < 0)
            rc = 34;
        else
            raise(SIGKILL);
    } else if (ab_mark(cfg, "warm", r) != 0) {
        rc = 33;
    } else {
        rc = ab_check(g12, herd_all_reduce(g12, x, x, AB_COUNT, HERD_FLOAT32,
                                           HERD_SUM, NULL));
        if (ab_mark(cfg, "failed", r) != 0)
            rc = 32;
    }
    if (g12)
        herd_comm_destroy(g12);
    if (g01)
        herd_comm_destroy(g01);
    free(x);
    return rc;
}

static void ab_run(int p, herd_main_fn fn, int wait_exit)
{
    ab_cfg_t cfg = {.wait_exit = wait_exit};
    char *dir = tu_tmpdir();
    snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
    int codes[4];
    rt_opts_t o = {.op_timeout_s = 10, .wall_s = 90};
    rt_spawn_opts(p, fn, &cfg, &o, codes);
    ck_assert_msg(codes[0] == 0,
                  "rank 0 (the late rank) exited with %d (rank 1: %d)",
                  codes[0], codes[1]);
    for (int r = 1; r < p; r++)
        ck_assert_msg(codes[r] == (r == AB_DEAD ? -1 : 0),
                      "rank %d exited with %d", r, codes[r]);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tu_run(cmd, NULL);
    free(dir);
}

START_TEST(test_notice_while_flushing)
{
    ab_run(4, ab_main, 0);
}
END_TEST

START_TEST(test_notice_after_exit)
{
    ab_run(4, ab_main, 1);
}
END_TEST

START_TEST(test_refused_while_flushing)
{
    ab_run(3, ab_refused_main, 0);
}
END_TEST

START_TEST(test_refused_after_exit)
{
    ab_run(3, ab_refused_main, 1);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_abort");
    TCase *tc = tcase_create("abort");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_notice_while_flushing);
    tcase_add_test(tc, test_notice_after_exit);
    tcase_add_test(tc, test_refused_while_flushing);
    tcase_add_test(tc, test_refused_after_exit);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
