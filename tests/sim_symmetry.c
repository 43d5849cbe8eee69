/* tests/sim_symmetry.c - the symmetry shortcut (sim/sym.c) changes no
 * prediction: every shipped scenario (scenarios/NAME.yaml, plus the
 * NCCL model and the ring on the 64 x 8 sweep) and a set of small
 * programs run with HERD_SIM_SYMMETRY=0 (every member simulated) and with
 * the shortcut, and must give the same results: exit status, every
 * timeline record of every rank to the nanosecond, the sweep table, the
 * end time. HERD_SIM_SYMMETRY=stats makes the engine say how many
 * collectives ran on representatives and how often the shortcut was
 * given up ("materialised"), so each case also checks that the shortcut
 * applied where it must (ring, all_gather, reduce_scatter, barrier,
 * NCCL's rings, several collectives in flight), fell back where it must
 * (a point-to-point op or a tree in the middle of the regime, classes
 * posting at different instants, uneven blocks) and is off where the
 * network or the ranks are not interchangeable (a straggler, a slow NIC,
 * a slow link, a fault, jitter, links slowed by compute). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

/* ---- small programs, in process ---- */

#define MAXR 64

typedef struct prog {
    size_t count;  /* all_reduce elements */
    int channels;  /* 0: default */
    int skew_rank; /* this rank computes 1 us longer first; -1: none */
    int p2p_mid;   /* 1: ranks 0 and 9 exchange a message mid-way */
    int tree_mid;  /* 1: a tree all_reduce mid-way */
    int inflight;  /* all_reduces posted together before waiting */
    herd_algo_t algo;
} prog_t;

static int prog_main(herd_comm_t *c, void *arg)
{
    const prog_t *p = arg;
    int r = herd_comm_rank(c), n = herd_comm_size(c);
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, p->algo);
    if (p->channels)
        herd_comm_set_channels(c, p->channels, 256 << 10);
    void *buf = NULL;
    if (herd_alloc(c, p->count * 4 * (size_t)n, &buf) != HERD_OK)
        return 1;
    if (p->skew_rank == r)
        herd_compute(c, 1e-6, "skew");
    herd_status_t st =
        herd_all_reduce(c, buf, buf, p->count, HERD_FLOAT32, HERD_SUM, NULL);
    herd_compute(c, 2e-6, "between");
    if (st == HERD_OK && p->p2p_mid && (r == 0 || r == 9))
        st = r == 0 ? herd_send(c, buf, 1 << 20, HERD_UINT8, 9, 7, NULL)
                    : herd_recv(c, buf, 1 << 20, HERD_UINT8, 0, 7, NULL);
    if (st == HERD_OK && p->tree_mid) {
        herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_TREE);
        st = herd_all_reduce(c, buf, buf, p->count, HERD_FLOAT32, HERD_SUM,
                             NULL);
        herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, p->algo);
    }
    herd_req_t *reqs[4] = {NULL};
    int k = p->inflight > 4 ? 4 : p->inflight;
    for (int i = 0; i < k && st == HERD_OK; i++)
        st = herd_all_reduce(c, buf, buf, p->count, HERD_FLOAT32, HERD_SUM,
                             &reqs[i]);
    for (int i = 0; i < k; i++)
        if (reqs[i]) {
            herd_status_t w = herd_req_wait(reqs[i]);
            herd_req_free(reqs[i]);
            if (st == HERD_OK)
                st = w;
        }
    if (st == HERD_OK)
        st = herd_all_gather(c, buf, buf, p->count / (size_t)n + 1,
                             HERD_FLOAT32, NULL);
    if (st == HERD_OK)
        st = herd_reduce_scatter(c, buf, buf, p->count / (size_t)n,
                                 HERD_FLOAT32, HERD_SUM, NULL);
    if (st == HERD_OK)
        st = herd_barrier(c, NULL);
    if (st == HERD_OK)
        st = herd_all_reduce(c, buf, buf, p->count, HERD_FLOAT32, HERD_SUM,
                             NULL);
    herd_free(c, buf);
    return st == HERD_OK ? 0 : 2;
}

/* Every rank's records, in the order that rank saw them. */
typedef struct log {
    char *text[MAXR];
    size_t len[MAXR], cap[MAXR];
} log_t;

static void on_rec(const herd_tl_rec_t *r, void *arg)
{
    log_t *l = arg;
    char line[256];
    int n = snprintf(line, sizeof(line), "%d %d %llu %d %d %llu %llu %llu %d\n",
                     r->kind, r->group, (unsigned long long)r->seq, r->coll,
                     r->algo, (unsigned long long)r->count,
                     (unsigned long long)r->start_ns,
                     (unsigned long long)r->end_ns, r->status);
    int k = r->rank;
    ck_assert(k >= 0 && k < MAXR);
    if (l->len[k] + (size_t)n + 1 > l->cap[k]) {
        l->cap[k] = (l->cap[k] + (size_t)n + 1) * 2;
        l->text[k] = realloc(l->text[k], l->cap[k]);
        ck_assert_ptr_nonnull(l->text[k]);
    }
    memcpy(l->text[k] + l->len[k], line, (size_t)n + 1);
    l->len[k] += (size_t)n;
}

typedef struct result {
    herd_status_t st;
    uint64_t end;
    log_t log;
    int stats;       /* the engine printed its line: shortcut possible */
    long nsym, nmat; /* collectives run symmetric; materialisations */
} result_t;

/* One run with HERD_SIM_SYMMETRY set to `mode`; stderr is read back
 * for the engine's stats line. */
static void run(const herd_sim_opts_t *o, prog_t *p, const char *mode,
                result_t *res)
{
    memset(res, 0, sizeof(*res));
    setenv("HERD_SIM_SYMMETRY", mode, 1);
    char path[] = "/tmp/herd_sym_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    herd_init_t init = {.backend = "sim",
                        .engine_opts = o,
                        .timeline_cb = on_rec,
                        .timeline_arg = &res->log};
    herd_run_info_t info;
    res->st = herd_run(&init, prog_main, p, &info);
    res->end = info.end_time_ns;
    herd_run_info_clear(&info);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    char *err = tu_read_file(path);
    unlink(path);
    const char *s = err ? strstr(err, "symmetry: ") : NULL;
    if (s) {
        res->stats = 1;
        res->nsym = strtol(s + 10, NULL, 10);
        const char *m = strstr(s, "ranks, ");
        ck_assert_ptr_nonnull(m);
        res->nmat = strtol(m + 7, NULL, 10);
    }
    free(err);
    unsetenv("HERD_SIM_SYMMETRY");
}

static void log_free(log_t *l)
{
    for (int k = 0; k < MAXR; k++)
        free(l->text[k]);
}

/* Both ways; the same results; returns the shortcut's counts. */
static void both(const herd_sim_opts_t *o, prog_t *p, result_t *on)
{
    result_t off;
    run(o, p, "0", &off);
    run(o, p, "stats", on);
    ck_assert_int_eq(off.st, HERD_OK);
    ck_assert_int_eq(on->st, off.st);
    ck_assert_uint_eq(on->end, off.end);
    ck_assert_int_eq(off.stats, 0);
    for (int k = 0; k < MAXR; k++) {
        ck_assert_uint_eq(on->log.len[k], off.log.len[k]);
        if (off.log.len[k])
            ck_assert_msg(
                memcmp(on->log.text[k], off.log.text[k], off.log.len[k]) == 0,
                "rank %d's timeline differs with the shortcut", k);
    }
    log_free(&off.log);
    log_free(&on->log);
}

static herd_sim_opts_t opts(int nodes)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = nodes;
    o.cluster.gpus_per_node = 8;
    return o;
}

static prog_t base(void)
{
    prog_t p = {.count = 32 * 64 * 8, /* even blocks on 32 ranks, 8 ch */
                .skew_rank = -1,
                .algo = HERD_ALGO_RING};
    return p;
}

START_TEST(test_applies)
{
    herd_sim_opts_t o = opts(4);
    prog_t p = base();
    result_t r;
    both(&o, &p, &r);
    ck_assert(r.stats);
    /* all_reduce, all_gather, reduce_scatter, barrier, all_reduce */
    ck_assert_int_eq(r.nsym, 5);
    ck_assert_int_eq(r.nmat, 0);
    p.channels = 4; /* chunked, several channels */
    both(&o, &p, &r);
    ck_assert_int_eq(r.nsym, 5);
    p.inflight = 3; /* three all_reduces in flight at once */
    both(&o, &p, &r);
    ck_assert_int_eq(r.nsym, 8);
    ck_assert_int_eq(r.nmat, 0);
    o = opts(2); /* two nodes: 16 ranks, 8 representatives */
    p = base();
    p.count = 16 * 1000;
    both(&o, &p, &r);
    ck_assert_int_eq(r.nsym, 5);
    o.cluster.nics_per_node = 8; /* a NIC per GPU, said explicitly */
    both(&o, &p, &r);
    ck_assert_int_eq(r.nsym, 5);
}
END_TEST

START_TEST(test_nccl_rings)
{
    herd_sim_opts_t o = opts(4);
    prog_t p = base();
    p.algo = HERD_ALGO_NCCL;
    p.count = 64u << 20; /* NCCL picks its rings at 256 MiB on 4 nodes */
    result_t r;
    both(&o, &p, &r);
    ck_assert(r.stats);
    ck_assert_int_ge(r.nsym, 2);
}
END_TEST

START_TEST(test_materialised)
{
    herd_sim_opts_t o = opts(4);
    prog_t p = base();
    result_t r;
    p.p2p_mid = 1; /* a send/recv while the regime runs */
    both(&o, &p, &r);
    ck_assert_int_ge(r.nsym, 1);
    ck_assert_int_ge(r.nmat, 1);
    p = base();
    p.tree_mid = 1; /* a tree is not symmetric under a node shift */
    both(&o, &p, &r);
    ck_assert_int_ge(r.nsym, 1);
    ck_assert_int_ge(r.nmat, 1);
}
END_TEST

START_TEST(test_falls_back)
{
    herd_sim_opts_t o = opts(4);
    prog_t p = base();
    result_t r;
    p.skew_rank = 9; /* one member of class 1 posts later than its class */
    both(&o, &p, &r);
    ck_assert(r.stats);
    p = base();
    p.count = 32 * 64 * 8 + 5; /* uneven blocks: not rotations */
    both(&o, &p, &r);
    ck_assert(r.stats);
    ck_assert_int_eq(r.nmat, 0);
}
END_TEST

/* Options under which members are not interchangeable: the shortcut is
 * never considered (no stats line), results are the full simulation's. */
START_TEST(test_off)
{
    prog_t p = base();
    result_t r;
    herd_rank_override_t slow = {.rank = 5, .compute_factor = 1.5};
    herd_sim_opts_t o = opts(4);
    o.ranks = &slow; /* a straggler */
    o.nranks_overrides = 1;
    both(&o, &p, &r);
    ck_assert_int_eq(r.stats, 0);
    herd_rank_override_t nic = {.rank = 12, .nic_factor = 0.5};
    o = opts(4);
    o.ranks = &nic; /* a slow NIC */
    o.nranks_overrides = 1;
    both(&o, &p, &r);
    ck_assert_int_eq(r.stats, 0);
    herd_link_override_t link = {.a = 7, .b = 8, .bw_factor = 0.25};
    o = opts(4);
    o.links = &link; /* a heterogeneous link */
    o.nlink_overrides = 1;
    both(&o, &p, &r);
    ck_assert_int_eq(r.stats, 0);
    o = opts(4);
    o.jitter = HERD_JITTER_NORMAL;
    o.jitter_sigma = 0.1;
    both(&o, &p, &r);
    ck_assert_int_eq(r.stats, 0);
    o = opts(4);
    o.cluster.topo = HERD_TOPO_FATTREE; /* shared uplinks */
    o.cluster.oversub = 2;
    o.cluster.nodes_per_leaf = 2;
    both(&o, &p, &r);
    ck_assert_int_eq(r.stats, 0);
    o = opts(4);
    o.cluster.compute_comm_slowdown = 0.1; /* links slowed by compute */
    both(&o, &p, &r);
    ck_assert_int_eq(r.stats, 0);
}
END_TEST

START_TEST(test_fault)
{
    /* a rank dies: the run fails the same way with and without */
    herd_fault_t f = {.rank = 3, .at_time = 1e-6, .at_step = -1};
    herd_sim_opts_t o = opts(4);
    o.faults = &f;
    o.nfaults = 1;
    prog_t p = base();
    result_t a, b;
    run(&o, &p, "0", &a);
    run(&o, &p, "stats", &b);
    ck_assert_int_ne(a.st, HERD_OK);
    ck_assert_int_eq(a.st, b.st);
    ck_assert_uint_eq(a.end, b.end);
    ck_assert_int_eq(b.stats, 0);
    log_free(&a.log);
    log_free(&b.log);
}
END_TEST

/* ---- every shipped scenario through herd sim, both ways ---- */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_file(uint64_t h, const char *path)
{
    char *t = tu_read_file(path);
    if (!t)
        return fnv(h, "-", 1);
    h = fnv(h, t, strlen(t));
    free(t);
    return h;
}

/* herd sim on one scenario with HERD_SIM_SYMMETRY=mode: a hash of what
 * it predicts; *nsym, *nmat from the stats line (-1: none). */
static uint64_t sim_case(const char *scenario, const char *sets,
                         const char *mode, const char *dir, long *nsym,
                         long *nmat)
{
    char src[1024], args[3000], path[1500];
    tu_src_path(src, sizeof(src), "scenarios");
    snprintf(args, sizeof(args), "sim %s/%s -o %s --no-plots %s", src, scenario,
             dir, sets);
    setenv("HERD_SIM_SYMMETRY", mode, 1);
    char *err = NULL; /* its output, stderr included */
    int rc = tu_herd(args, &err);
    unsetenv("HERD_SIM_SYMMETRY");
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, (const char *)&rc, sizeof(rc));
    snprintf(path, sizeof(path), "%s/timeline.tsv", dir);
    h = hash_file(h, path);
    snprintf(path, sizeof(path), "%s/sweep.tsv", dir);
    h = hash_file(h, path);
    const char *s = err ? strstr(err, "symmetry: ") : NULL;
    *nsym = s ? strtol(s + 10, NULL, 10) : -1;
    s = s ? strstr(s, "ranks, ") : NULL;
    *nmat = s ? strtol(s + 7, NULL, 10) : -1;
    free(err);
    return h;
}

START_TEST(test_scenarios)
{
    static const char *const extra[][2] = {
        {"64n-8gpu-400g.yaml", "--set 'workload.sweep.algorithms=[ring]'"},
        {"64n-8gpu-400g.yaml",
         "--set 'workload.sweep.algorithms=[nccl]' --set cluster.nodes=4"},
    };
    char src[1024];
    tu_src_path(src, sizeof(src), "scenarios");
    char cmd[1200], *list = NULL;
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep '\\.yaml$'", src);
    ck_assert_int_eq(tu_run(cmd, &list), 0);
    char *tmp = tu_tmpdir();
    ck_assert_ptr_nonnull(tmp);
    long applied = 0, mats = 0;
    char bad[4096] = "";
    size_t nbad = 0, n = 0, nx = sizeof(extra) / sizeof(extra[0]);
    const char *scen[256 + 2], *sets[256 + 2];
    char *save = NULL;
    for (char *name = strtok_r(list, "\n", &save); name && n < 256;
         name = strtok_r(NULL, "\n", &save), n++) {
        scen[n] = name;
        sets[n] = "";
    }
    for (size_t i = 0; i < nx; i++, n++) {
        scen[n] = extra[i][0];
        sets[n] = extra[i][1];
    }
    for (size_t i = 0; i < n; i++) {
        char d0[1400], d1[1400];
        snprintf(d0, sizeof(d0), "%s/%zu-off", tmp, i);
        snprintf(d1, sizeof(d1), "%s/%zu-on", tmp, i);
        long s0, m0, s1, m1;
        uint64_t h0 = sim_case(scen[i], sets[i], "0", d0, &s0, &m0);
        uint64_t h1 = sim_case(scen[i], sets[i], "stats", d1, &s1, &m1);
        ck_assert_int_eq(s0, -1);
        if (s1 > 0)
            applied += s1;
        if (m1 > 0)
            mats += m1;
        if (h0 != h1 && nbad++ < 20) {
            size_t len = strlen(bad);
            snprintf(bad + len, sizeof(bad) - len, "\n  %s %s", scen[i],
                     sets[i]);
        }
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    tu_run(cmd, NULL);
    free(tmp);
    free(list);
    ck_assert_msg(nbad == 0, "%zu case(s) differ with the shortcut:%s", nbad,
                  bad);
    /* the 64 x 8 ring sweep runs on representatives; its ring -> hier
     * switch materialises */
    ck_assert_int_gt(applied, 0);
    ck_assert_int_gt(mats, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_symmetry");
    TCase *tc = tcase_create("programs");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_applies);
    tcase_add_test(tc, test_nccl_rings);
    tcase_add_test(tc, test_materialised);
    tcase_add_test(tc, test_falls_back);
    tcase_add_test(tc, test_off);
    tcase_add_test(tc, test_fault);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("scenarios");
    tcase_set_timeout(ts, 1800);
    tcase_add_test(ts, test_scenarios);
    suite_add_tcase(s, ts);
    return tu_run_suite(s);
}
