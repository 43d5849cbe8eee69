/* tests/sim_flight.c - the simulator's flight records (sim/flight.c over
 * core/flight.c): herd_flight_dump writes each rank's record in virtual
 * time (groups, sequence numbers, states, p2p peers, the ring's limit),
 * its errors name what is missing, and when a run hangs or times out
 * the simulator writes every rank's record so that `herd diagnose` on
 * them says what the simulator's own report says: the same class and
 * the same waiting, missing and mismatched ranks (scenarios/
 * mismatch-hang.yaml and dead-rank.yaml through `herd sim --flight-dir`,
 * and a timeout through herd_sim_opts_t.flight_dir). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

static void rm_dir(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

static json_t *load_dump(const char *dir, int rank)
{
    char path[600];
    json_error_t e;
    snprintf(path, sizeof(path), "%.500s/rank%d.json", dir, rank);
    json_t *j = json_load_file(path, 0, &e);
    ck_assert_msg(j != NULL, "%s: %s", path, e.text);
    return j;
}

static json_t *entry(json_t *dump, size_t i)
{
    return json_array_get(json_object_get(dump, "entries"), i);
}

static const char *s_of(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static json_int_t i_of(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static herd_status_t run_sim(int nodes, int gpn, herd_main_fn fn, void *arg,
                             const char *flight_dir, double timeout_s,
                             herd_run_info_t *info)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = nodes;
    o.cluster.gpus_per_node = gpn;
    o.flight_dir = flight_dir;
    herd_init_t init = {
        .backend = "sim", .engine_opts = &o, .timeout_s = timeout_s};
    return herd_run(&init, fn, arg, info);
}

/* Three all_reduces on the world, one on group {1, 3}, 0 sends to 2, and
 * every rank dumps its record at t = 1 ms after the last op. */
static int prog_dump(herd_comm_t *c, void *arg)
{
    const char *dir = arg;
    char buf[256] = {0};
    int r = herd_comm_rank(c), bad = 0;
    static const int members[] = {1, 3};
    herd_comm_t *g = NULL;
    for (int i = 0; i < 3; i++)
        bad |= herd_all_reduce(c, buf, buf, 64, HERD_FLOAT32, HERD_SUM, NULL) !=
               HERD_OK;
    bad |= herd_new_group(c, members, 2, &g) != HERD_OK;
    if (g)
        bad |= herd_all_reduce(g, buf, buf, 8, HERD_INT32, HERD_MAX, NULL) !=
               HERD_OK;
    if (r == 0)
        bad |= herd_send(c, buf, 16, HERD_UINT8, 2, 7, NULL) != HERD_OK;
    if (r == 2)
        bad |= herd_recv(c, buf, 16, HERD_UINT8, 0, 7, NULL) != HERD_OK;
    bad |= herd_compute(c, 0.001, "idle") != HERD_OK;
    bad |= herd_flight_dump(c, dir) != HERD_OK;
    if (g)
        herd_comm_destroy(g);
    return bad;
}

static void check_dump_world(int nodes, int gpn)
{
    char *dir = tu_tmpdir();
    herd_run_info_t info;
    ck_assert_int_eq(run_sim(nodes, gpn, prog_dump, dir, NULL, 0, &info),
                     HERD_OK);
    herd_run_info_clear(&info);
    int world = nodes * gpn;
    for (int r = 0; r < world; r++) {
        json_t *d = load_dump(dir, r);
        ck_assert_str_eq(s_of(d, "engine"), "sim");
        ck_assert_str_eq(s_of(d, "clock"), "virtual");
        ck_assert_str_eq(s_of(d, "reason"), "api");
        ck_assert_int_eq(i_of(d, "rank"), r);
        ck_assert_int_eq(i_of(d, "world_size"), world);
        size_t n = json_array_size(json_object_get(d, "entries"));
        size_t want = 3 + (r == 1 || r == 3) + (r == 0 || r == 2);
        ck_assert_uint_eq(n, want);
        for (size_t i = 0; i < n; i++) {
            json_t *e = entry(d, i);
            ck_assert_str_eq(s_of(e, "state"), "completed");
            ck_assert_str_eq(s_of(e, "status"), "HERD_OK");
            ck_assert_int_eq(i_of(e, "id"), (json_int_t)i + 1);
            ck_assert_int_le(i_of(e, "t_scheduled_ns"),
                             i_of(e, "t_completed_ns"));
            ck_assert_int_le(i_of(e, "t_completed_ns"),
                             i_of(d, "dump_time_ns"));
        }
        /* virtual time: the first collective is posted at t = 0 */
        ck_assert_int_eq(i_of(entry(d, 0), "t_scheduled_ns"), 0);
        ck_assert_int_eq(i_of(entry(d, 2), "seq"), 3);
        ck_assert_int_eq(i_of(entry(d, 2), "in_bytes"), 256);
        ck_assert_int_ge(i_of(d, "dump_time_ns"),
                         i_of(entry(d, n - 1), "t_completed_ns") + 1000000);
        if (r == 1 || r == 3) {
            json_t *e = entry(d, 3);
            ck_assert_int_eq(i_of(e, "group"), 1);
            ck_assert_int_eq(i_of(e, "seq"), 1);
            ck_assert_str_eq(s_of(e, "op"), "max");
            json_t *gs = json_object_get(d, "groups");
            int found = 0;
            for (size_t k = 0; k < json_array_size(gs); k++) {
                json_t *g = json_array_get(gs, k);
                json_t *rk = json_object_get(g, "ranks");
                if (i_of(g, "id") == 1)
                    found = json_array_size(rk) == 2 &&
                            json_integer_value(json_array_get(rk, 0)) == 1 &&
                            json_integer_value(json_array_get(rk, 1)) == 3;
            }
            ck_assert_msg(found, "rank %d: group 1 is not [1, 3]", r);
        }
        if (r == 0 || r == 2) {
            json_t *e = entry(d, 3);
            ck_assert_str_eq(s_of(e, "coll"), r == 0 ? "send" : "recv");
            ck_assert(json_is_true(json_object_get(e, "is_p2p")));
            ck_assert_int_eq(i_of(e, "peer"), r == 0 ? 2 : 0);
            ck_assert_int_eq(i_of(e, "p2p_seq_id"), 1);
            ck_assert_int_eq(i_of(e, "collective_seq_id"), 3);
        }
        json_decref(d);
    }
    /* the dumps agree: herd diagnose finds nothing */
    char cmd[700], *out = NULL;
    snprintf(cmd, sizeof(cmd), "diagnose %s", dir);
    ck_assert_int_eq(tu_herd(cmd, &out), 0);
    ck_assert_msg(strstr(out, "no problem found") &&
                      strstr(out, "dumps: sim engine, written on api"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}

START_TEST(dump_per_rank)
{
    check_dump_world(1, 4);
}
END_TEST

/* Two nodes: the world's collectives may take the simulator's shortcuts
 * (rotations, symmetry); every rank's record must not notice. */
START_TEST(dump_per_rank_two_nodes)
{
    check_dump_world(2, 2);
}
END_TEST

static int prog_errors(herd_comm_t *c, void *arg)
{
    int *what = arg, bad = 0;
    herd_status_t st = herd_flight_dump(c, NULL);
    if (*what == 0) /* no directory anywhere */
        bad = st != HERD_ERR_INVALID_ARG ||
              !strstr(herd_last_error(c), "HERD_FLIGHT_DIR");
    else if (*what == 1) /* recording off */
        bad = st != HERD_ERR_UNSUPPORTED ||
              !strstr(herd_last_error(c), "HERD_FLIGHT_ENTRIES=0");
    else /* a file where the folder should be */
        bad = herd_flight_dump(c, "/dev/null/x") != HERD_ERR_IO ||
              !strstr(herd_last_error(c), "/dev/null/x");
    return bad;
}

START_TEST(dump_errors_are_named)
{
    herd_run_info_t info;
    unsetenv("HERD_FLIGHT_DIR");
    for (int what = 0; what < 3; what++) {
        if (what == 1)
            setenv("HERD_FLIGHT_ENTRIES", "0", 1);
        ck_assert_int_eq(run_sim(1, 2, prog_errors, &what, NULL, 0, &info),
                         HERD_OK);
        herd_run_info_clear(&info);
        unsetenv("HERD_FLIGHT_ENTRIES");
    }
}
END_TEST

/* 12 all_reduces with a limit of 5: the last 5 stay, oldest first. */
static int prog_many(herd_comm_t *c, void *arg)
{
    char buf[8] = {0};
    int bad = 0;
    for (int i = 0; i < 12; i++)
        bad |= herd_all_reduce(c, buf, buf, 2, HERD_FLOAT32, HERD_SUM, NULL) !=
               HERD_OK;
    return bad || herd_flight_dump(c, arg) != HERD_OK;
}

START_TEST(ring_keeps_the_last)
{
    char *dir = tu_tmpdir();
    herd_run_info_t info;
    setenv("HERD_FLIGHT_ENTRIES", "5", 1);
    ck_assert_int_eq(run_sim(1, 2, prog_many, dir, NULL, 0, &info), HERD_OK);
    unsetenv("HERD_FLIGHT_ENTRIES");
    herd_run_info_clear(&info);
    json_t *d = load_dump(dir, 1);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "entries")), 5);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(i_of(entry(d, (size_t)i), "id"), 8 + i);
        ck_assert_int_eq(i_of(entry(d, (size_t)i), "seq"), 8 + i);
    }
    json_decref(d);
    rm_dir(dir);
}
END_TEST

/* The lines of `text` that start (after blanks) with one of the keys,
 * blanks stripped, one per line: what must agree between the
 * simulator's report and herd diagnose's. */
static void key_lines(const char *text, char *out, size_t len)
{
    static const char *const keys[] = {"class: ", "waiting ranks (",
                                       "missing ranks (", "mismatched ranks ("};
    size_t o = 0;
    out[0] = '\0';
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        const char *p = l;
        while (p < l + n && *p == ' ')
            p++;
        if (!strncmp(p, "group ", 6) && strstr(p, ": class: ") &&
            strstr(p, ": class: ") < l + n)
            p = strstr(p, ": class: ") + 2; /* "group 0: class: x" */
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            if (!strncmp(p, keys[k], strlen(keys[k]))) {
                size_t m = (size_t)(l + n - p);
                const char *paren = strstr(p, " (their");
                if (paren && paren < l + n)
                    m = (size_t)(paren - p); /* "differ from rank 0's" */
                o += (size_t)snprintf(out + o, len - o, "%.*s\n", (int)m, p);
            }
        l = end ? end + 1 : NULL;
    }
}

/* herd sim SCENARIO --flight-dir DIR, then herd diagnose DIR: the class
 * and the rank lists agree. */
static void sim_then_diagnose(const char *scenario, const char *want_class)
{
    char *dir = tu_tmpdir(), *sim_out = NULL, *dg_out = NULL, cmd[1400],
         src[600], a[2048], b[2048];
    snprintf(cmd, sizeof(cmd),
             "sim %s -o %s/out --no-plots --flight-dir %s/fr 2>&1",
             tu_src_path(src, sizeof(src), scenario), dir, dir);
    ck_assert_int_eq(tu_herd(cmd, &sim_out), 1);
    ck_assert_msg(strstr(sim_out, "flight records of all "), "%s", sim_out);
    snprintf(cmd, sizeof(cmd), "diagnose %s/fr 2>&1", dir);
    ck_assert_int_eq(tu_herd(cmd, &dg_out), 1);
    key_lines(sim_out, a, sizeof(a));
    key_lines(dg_out, b, sizeof(b));
    ck_assert_msg(strstr(a, want_class), "simulator:\n%s", sim_out);
    ck_assert_msg(!strcmp(a, b),
                  "the simulator's report:\n%s\nherd diagnose:\n%s\n"
                  "(key lines: '%s' vs '%s')",
                  sim_out, dg_out, a, b);
    free(sim_out);
    free(dg_out);
    rm_dir(dir);
}

START_TEST(mismatch_hang_agrees)
{
    sim_then_diagnose("scenarios/mismatch-hang.yaml", "class: size mismatch");
}
END_TEST

START_TEST(dead_rank_agrees)
{
    sim_then_diagnose("scenarios/dead-rank.yaml", "class: missing rank");
}
END_TEST

/* Rank 2 computes past the timeout instead of joining the second
 * all_reduce: a timeout (not a hang), dumps through the option. */
static int prog_late(herd_comm_t *c, void *arg)
{
    (void)arg;
    char buf[64] = {0};
    herd_all_reduce(c, buf, buf, 16, HERD_FLOAT32, HERD_SUM, NULL);
    if (herd_comm_rank(c) == 2)
        herd_compute(c, 100.0, "late");
    herd_all_reduce(c, buf, buf, 16, HERD_FLOAT32, HERD_SUM, NULL);
    return 0;
}

START_TEST(timeout_dumps_every_rank)
{
    char *dir = tu_tmpdir(), fr[600], cmd[700], *out = NULL, a[2048], b[2048];
    snprintf(fr, sizeof(fr), "%s/fr", dir);
    herd_run_info_t info;
    ck_assert_int_eq(run_sim(1, 4, prog_late, NULL, fr, 2.0, &info),
                     HERD_ERR_TIMEOUT);
    ck_assert_msg(info.report && strstr(info.report, "flight records of all "
                                                     "4 ranks"),
                  "%s", info.report ? info.report : "(none)");
    json_t *d = load_dump(fr, 2);
    ck_assert_str_eq(s_of(d, "reason"), "timeout");
    ck_assert_str_eq(s_of(d, "rank_state"), "running");
    json_decref(d);
    d = load_dump(fr, 0);
    ck_assert_str_eq(s_of(d, "rank_state"), "waiting");
    ck_assert_str_eq(s_of(entry(d, 1), "state"), "started");
    ck_assert_int_eq(i_of(d, "dump_time_ns"),
                     i_of(entry(d, 1), "t_scheduled_ns") + 2000000000);
    json_decref(d);
    snprintf(cmd, sizeof(cmd), "diagnose %s", fr);
    ck_assert_int_eq(tu_herd(cmd, &out), 1);
    key_lines(info.report, a, sizeof(a));
    key_lines(out, b, sizeof(b));
    ck_assert_msg(!strcmp(a, b) && strstr(b, "missing ranks (1): 2"),
                  "report:\n%s\ndiagnose:\n%s", info.report, out);
    free(out);
    herd_run_info_clear(&info);
    rm_dir(dir);
}
END_TEST

/* Without a directory a hang writes nothing and the report is as
 * before. */
START_TEST(no_dir_no_dumps)
{
    herd_run_info_t info;
    unsetenv("HERD_FLIGHT_DIR");
    ck_assert_int_eq(run_sim(1, 4, prog_late, NULL, NULL, 2.0, &info),
                     HERD_ERR_TIMEOUT);
    ck_assert_ptr_null(strstr(info.report, "flight records"));
    herd_run_info_clear(&info);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_flight");
    TCase *tc = tcase_create("flight");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, dump_per_rank);
    tcase_add_test(tc, dump_per_rank_two_nodes);
    tcase_add_test(tc, dump_errors_are_named);
    tcase_add_test(tc, ring_keeps_the_last);
    tcase_add_test(tc, mismatch_hang_agrees);
    tcase_add_test(tc, dead_rank_agrees);
    tcase_add_test(tc, timeout_dumps_every_rank);
    tcase_add_test(tc, no_dir_no_dumps);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
