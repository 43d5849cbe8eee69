/* tests/sim_gloo.c - algorithm "gloo" in the simulator (sim/gloo_lower.c,
 * the rendezvous transport in sim/exec.c): results of every collective
 * with real buffers; and the timing that follows from gloo's posting
 * order, in closed form on one 2-node link: ranks that post together
 * move both directions at once (all_gather in the link time T), while a
 * rank posting later than the notice's latency puts its data ahead of
 * its own notice, so an all_gather takes 1.5 T (gloo sends each block as
 * two halves) and an all_reduce (receives posted first) does not slow
 * down; with three ranks the notices go to the other neighbour and
 * nothing waits. A rank that never posts is still diagnosed as a hang.
 * FSDP with backend gloo runs algorithm gloo unless the scenario names
 * one, charges fsdp.hook_s four times per unit and step, and
 * ProcessGroupGloo's copies around each all_gather (p + 2 shards) and
 * reduce_scatter (p + 1) at the model's copy rate. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "core/sched.h"
#include "sim/sim.h"
#include "support/testutil.h"

#define MAXP 5
#define BW 50e6   /* bytes/s */
#define LAT 50e-6 /* s */

typedef struct job {
    herd_coll_t coll;
    herd_algo_t algo;
    size_t count;
    double late_s; /* rank 1 posts this much later */
    int skip;      /* this rank never posts (-1: none) */
    double t[MAXP];
    herd_status_t st[MAXP];
    int bad[MAXP];
} job_t;

static herd_init_t sim_init(herd_sim_opts_t *o, int p, int real)
{
    herd_sim_opts_init(o);
    o->cluster.nodes = p;
    o->cluster.gpus_per_node = 1;
    o->cluster.inter.bandwidth = BW;
    o->cluster.inter.latency = LAT;
    o->real_buffers = real;
    herd_init_t init = {.backend = "sim", .engine_opts = o};
    return init;
}

static herd_status_t post(herd_comm_t *c, const job_t *j, int *in, int *out)
{
    size_t n = j->count;
    switch (j->coll) {
    case HERD_COLL_ALL_REDUCE:
        return herd_all_reduce(c, in, out, n, HERD_INT32, HERD_SUM, NULL);
    case HERD_COLL_ALL_GATHER:
        return herd_all_gather(c, in, out, n, HERD_INT32, NULL);
    case HERD_COLL_REDUCE_SCATTER:
        return herd_reduce_scatter(c, in, out, n, HERD_INT32, HERD_SUM, NULL);
    case HERD_COLL_BROADCAST:
        return herd_broadcast(c, out, n, HERD_INT32, 0, NULL);
    default:
        return herd_barrier(c, NULL);
    }
}

/* What rank `me` of p must hold after the call, input rank r element i
 * being r * 1000 + i (broadcast: root 0's). */
static int check(const job_t *j, int me, int p, const int *out)
{
    size_t n = j->count;
    for (size_t i = 0; i < n * (size_t)p; i++) {
        int want;
        switch (j->coll) {
        case HERD_COLL_ALL_REDUCE:
        case HERD_COLL_REDUCE_SCATTER: {
            size_t e = j->coll == HERD_COLL_ALL_REDUCE ? i : me * n + i;
            if (i >= n)
                return 0;
            want = 0;
            for (int r = 0; r < p; r++)
                want += r * 1000 + (int)e;
            break;
        }
        case HERD_COLL_ALL_GATHER:
            want = (int)(i / n) * 1000 + (int)(i % n);
            break;
        case HERD_COLL_BROADCAST:
            if (i >= n)
                return 0;
            want = (int)i;
            break;
        default:
            return 0;
        }
        if (out[i] != want)
            return 1;
    }
    return 0;
}

static int prog(herd_comm_t *c, void *arg)
{
    job_t *j = arg;
    int me = herd_comm_rank(c), p = herd_comm_size(c);
    size_t n = j->count * (size_t)p;
    int *in = calloc(n, sizeof(int)), *out = calloc(n, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        size_t e = j->coll == HERD_COLL_REDUCE_SCATTER ? i : i % j->count;
        in[i] = me * 1000 + (int)e;
        out[i] = j->coll == HERD_COLL_BROADCAST && me == 0 ? (int)i : -1;
    }
    herd_comm_set_algo(c, j->coll, j->algo);
    if (me == 1 && j->late_s > 0)
        herd_compute(c, j->late_s, "late");
    if (me != j->skip) {
        uint64_t t0 = herd_now(c);
        j->st[me] = post(c, j, in, out);
        j->t[me] = (double)(herd_now(c) - t0) * 1e-9;
        j->bad[me] = check(j, me, p, out);
    }
    free(in);
    free(out);
    return 0;
}

static herd_status_t run(job_t *j, int p, int real)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, p, real);
    herd_run_info_t info;
    herd_status_t st = herd_run(&init, prog, j, &info);
    herd_run_info_clear(&info);
    return st;
}

static const herd_coll_t kinds[] = {HERD_COLL_ALL_REDUCE, HERD_COLL_ALL_GATHER,
                                    HERD_COLL_REDUCE_SCATTER,
                                    HERD_COLL_BROADCAST, HERD_COLL_BARRIER};

START_TEST(results)
{
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (int p = 1; p <= MAXP; p++)
            for (size_t n = 1; n <= 9; n += 4) {
                job_t j = {.coll = kinds[k],
                           .algo = HERD_ALGO_GLOO,
                           .count = n,
                           .late_s = 1e-3 * (p % 2),
                           .skip = -1};
                ck_assert_int_eq(run(&j, p, 1), HERD_OK);
                for (int r = 0; r < p; r++) {
                    ck_assert_int_eq(j.st[r], HERD_OK);
                    ck_assert_msg(!j.bad[r], "%s p=%d n=%zu: rank %d wrong",
                                  herd_coll_name(kinds[k]), p, n, r);
                }
            }
}
END_TEST

/* Every schedule gloo's model lowers passes the symbolic verifier, as
 * herd's own algorithms do (tests/unit_sched_verify.c). */
START_TEST(schedules_verify)
{
    const herd_coll_t all[] = {
        HERD_COLL_ALL_REDUCE, HERD_COLL_ALL_GATHER, HERD_COLL_REDUCE_SCATTER,
        HERD_COLL_BROADCAST,  HERD_COLL_REDUCE,     HERD_COLL_GATHER,
        HERD_COLL_SCATTER,    HERD_COLL_ALL_TO_ALL, HERD_COLL_BARRIER};
    for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
        for (int p = 1; p <= 9; p++)
            for (uint64_t n = 1; n <= 13; n += 3) {
                core_sched_desc_t d = {.coll = all[k],
                                       .algo = HERD_ALGO_GLOO,
                                       .nranks = p,
                                       .root = p - 1,
                                       .count = n,
                                       .elem_size = 4,
                                       .channels = 1};
                char why[512] = "";
                ck_assert_msg(core_sched_verify(&d, sim_gloo_lower, why,
                                                sizeof(why)) == HERD_OK,
                              "%s p=%d n=%llu: %s", herd_coll_name(all[k]), p,
                              (unsigned long long)n, why);
            }
}
END_TEST

/* Time of the early rank (0) from its post, less the late rank's delay,
 * in units of the link time T of `bytes` each way. */
static double early_in_T(herd_coll_t coll, herd_algo_t algo, int p,
                         double late_s, double bytes_each_way)
{
    job_t j = {.coll = coll,
               .algo = algo,
               .count = 1 << 20,
               .late_s = late_s,
               .skip = -1};
    ck_assert_int_eq(run(&j, p, 0), HERD_OK);
    return (j.t[0] - late_s) / (bytes_each_way / BW);
}

START_TEST(all_gather_together)
{
    /* 4 MiB each way: both directions at once, one link time */
    double x =
        early_in_T(HERD_COLL_ALL_GATHER, HERD_ALGO_GLOO, 2, 0, 4.0 * (1 << 20));
    ck_assert_msg(x > 0.99 && x < 1.01, "all_gather together: %.3f T", x);
}
END_TEST

START_TEST(all_gather_late_rank)
{
    double x = early_in_T(HERD_COLL_ALL_GATHER, HERD_ALGO_GLOO, 2, 2e-3,
                          4.0 * (1 << 20));
    ck_assert_msg(x > 1.49 && x < 1.51, "all_gather, rank 1 late: %.3f T", x);
    /* herd's own ring moves at once whoever is late */
    double e = early_in_T(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 2, 2e-3,
                          4.0 * (1 << 20));
    ck_assert_msg(e > 0.99 && e < 1.01, "ring, rank 1 late: %.3f T", e);
}
END_TEST

START_TEST(all_reduce_late_rank)
{
    /* 4 MiB all_reduce on 2 ranks: 2 MiB each way per phase, 4 MiB in
     * all; receives posted first, so lateness costs nothing more */
    double x = early_in_T(HERD_COLL_ALL_REDUCE, HERD_ALGO_GLOO, 2, 2e-3,
                          4.0 * (1 << 20));
    double e = early_in_T(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 2, 2e-3,
                          4.0 * (1 << 20));
    ck_assert_msg(x > 0.99 && x < 1.03 && x < e * 1.03,
                  "all_reduce, rank 1 late: gloo %.3f T, ring %.3f T", x, e);
}
END_TEST

START_TEST(three_ranks_no_wait)
{
    /* the notice goes to the left neighbour, the data to the right */
    double x = early_in_T(HERD_COLL_ALL_GATHER, HERD_ALGO_GLOO, 3, 2e-3,
                          8.0 * (1 << 20));
    double e = early_in_T(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 3, 2e-3,
                          8.0 * (1 << 20));
    ck_assert_msg(x < e * 1.02, "3 ranks: gloo %.3f T, ring %.3f T", x, e);
}
END_TEST

/* gloo's ring cuts the buffer into segments of at most 1 MiB
 * (kMaxSegmentSize), at least two per rank, p S in all: rank r sends
 * to r - 1 and receives from r + 1, (p - 1) S of each per phase. */
START_TEST(all_reduce_segments)
{
    const struct {
        int p;
        uint64_t count; /* float32 */
        uint64_t per;   /* segments per rank */
    } c[] = {{2, 2u << 20, 4}, {3, (3u << 20) + 1, 5}, {4, 1000, 2}};
    for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++)
        for (int r = 0; r < c[k].p; r++) {
            core_sched_desc_t d = {.coll = HERD_COLL_ALL_REDUCE,
                                   .algo = HERD_ALGO_GLOO,
                                   .nranks = c[k].p,
                                   .rank = r,
                                   .count = c[k].count,
                                   .elem_size = 4,
                                   .channels = 1};
            core_sched_t s;
            memset(&s, 0, sizeof(s));
            ck_assert_int_eq(sim_gloo_lower(&d, &s), HERD_OK);
            uint64_t sends = 0, recvs = 0, most = 0;
            for (uint32_t i = 0; i < s.nsteps; i++) {
                const core_step_t *st = &s.steps[i];
                int send = st->kind == CORE_STEP_SEND;
                ck_assert_int_eq(st->peer,
                                 (r + (send ? c[k].p - 1 : 1)) % c[k].p);
                sends += send;
                recvs += !send;
                most = st->count > most ? st->count : most;
            }
            uint64_t want = 2 * (uint64_t)(c[k].p - 1) * c[k].per;
            ck_assert_uint_eq(sends, want);
            ck_assert_uint_eq(recvs, want);
            ck_assert_uint_le(most * 4, 1u << 20);
            ck_assert_uint_eq(most, (c[k].count + c[k].p * c[k].per - 1) /
                                        (c[k].p * c[k].per));
            core_sched_fini(&s);
        }
}
END_TEST

/* gloo's loop waits, before it posts, for everything it posted two
 * iterations before and earlier: every step has as ancestors all the
 * steps emitted before it but the previous iteration's two and its own
 * iteration's receive, whatever segments are empty. */
START_TEST(all_reduce_program_order)
{
    const uint64_t counts[] = {1, 7, 13, 117};
    for (int p = 2; p <= 5; p++)
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            for (int r = 0; r < p; r++) {
                core_sched_desc_t d = {.coll = HERD_COLL_ALL_REDUCE,
                                       .algo = HERD_ALGO_GLOO,
                                       .nranks = p,
                                       .rank = r,
                                       .count = counts[k],
                                       .elem_size = 4,
                                       .channels = 1};
                core_sched_t s;
                memset(&s, 0, sizeof(s));
                ck_assert_int_eq(sim_gloo_lower(&d, &s), HERD_OK);
                uint32_t n = s.nsteps;
                ck_assert_uint_le(n, 64);
                uint64_t anc[64] = {0};
                for (uint32_t j = 0; j < n; j++) {
                    const core_step_t *st = &s.steps[j];
                    for (uint32_t e = 0; e < st->ndeps; e++) {
                        uint32_t a = s.deps[st->dep_off + e];
                        anc[j] |= anc[a] | (1ull << a);
                    }
                    int missing = (int)j - __builtin_popcountll(anc[j]);
                    ck_assert_msg(missing <= 3,
                                  "p=%d n=%llu rank %d step %u: %d earlier "
                                  "steps not waited for",
                                  p, (unsigned long long)counts[k], r, j,
                                  missing);
                }
                core_sched_fini(&s);
            }
}
END_TEST

/* Collectives posted at once, each rank waiting for them in `order`;
 * end[i]: when op i was done, from the posts. */
typedef struct conc {
    int n;
    size_t count[3];
    int order[3];
    double end[3];
} conc_t;

static int conc_prog(herd_comm_t *c, void *arg)
{
    conc_t *j = arg;
    herd_req_t *req[3] = {NULL, NULL, NULL};
    float *buf[3] = {NULL, NULL, NULL};
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_GLOO);
    uint64_t t0 = herd_now(c);
    for (int i = 0; i < j->n; i++) {
        buf[i] = calloc(j->count[i], sizeof(float));
        ck_assert_ptr_nonnull(buf[i]);
        ck_assert_int_eq(herd_all_reduce(c, buf[i], buf[i], j->count[i],
                                         HERD_FLOAT32, HERD_SUM, &req[i]),
                         HERD_OK);
    }
    for (int k = 0; k < j->n; k++) {
        int i = j->order[k];
        ck_assert_int_eq(herd_req_wait(req[i]), HERD_OK);
        if (herd_comm_rank(c) == 0)
            j->end[i] = (double)(herd_now(c) - t0) * 1e-9;
        herd_req_free(req[i]);
        free(buf[i]);
    }
    return 0;
}

static void conc_run_prog(conc_t *j, herd_main_fn fn)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, 2, 0);
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, fn, j, &info), HERD_OK);
    herd_run_info_clear(&info);
}

static void conc_run(conc_t *j)
{
    conc_run_prog(j, conc_prog);
}

/* Three on a group destroyed while they run and wait for a worker: they
 * outlive it, the queued one starting at once. */
static int destroyed_prog(herd_comm_t *world, void *arg)
{
    conc_t *j = arg;
    const int ranks[2] = {0, 1};
    herd_comm_t *g = NULL;
    ck_assert_int_eq(herd_new_group(world, ranks, 2, &g), HERD_OK);
    herd_req_t *req[3] = {NULL, NULL, NULL};
    float *buf = calloc(j->count[0], sizeof(float));
    ck_assert_ptr_nonnull(buf);
    herd_comm_set_algo(g, HERD_COLL_ALL_REDUCE, HERD_ALGO_GLOO);
    uint64_t t0 = herd_now(world);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(herd_all_reduce(g, buf, buf, j->count[0], HERD_FLOAT32,
                                         HERD_SUM, &req[i]),
                         HERD_OK);
    ck_assert_int_eq(herd_comm_destroy(g), HERD_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(herd_req_wait(req[i]), HERD_OK);
        if (herd_comm_rank(world) == 0)
            j->end[i] = (double)(herd_now(world) - t0) * 1e-9;
        herd_req_free(req[i]);
    }
    free(buf);
    return 0;
}

/* Two all_reduces at once share the pair's connection segment by
 * segment, as gloo's two worker threads do. On 2 ranks the 8 MiB one
 * has 1 MiB segments, the 2 MiB one 512 KiB ones, and each direction
 * carries, in posting order: the big one's first two segments, the
 * small one's reduce-scatter (1 MiB), the big one's next two (posted as
 * its first two end), the small one's all-gather: it ends at 6 T (T:
 * 1 MiB's time), the big one when all 10 MiB have crossed. With whole
 * blocks queued on the connection the small one would end last. */
START_TEST(concurrent_take_turns)
{
    conc_t j = {.n = 2, .count = {2u << 20, 512u << 10}, .order = {1, 0}};
    conc_run(&j);
    double t = (double)(1u << 20) / BW; /* 1 MiB each way */
    ck_assert_msg(j.end[1] > 5.95 * t && j.end[1] < 6.1 * t, "2 MiB op: %.2f T",
                  j.end[1] / t);
    ck_assert_msg(j.end[0] > 9.9 * t && j.end[0] < 10.3 * t, "8 MiB op: %.2f T",
                  j.end[0] / t);
}
END_TEST

/* ProcessGroupGloo's two worker threads: of three all_reduces posted at
 * once the third starts when the first ends. */
START_TEST(two_workers)
{
    conc_t j = {
        .n = 3, .count = {1u << 20, 1u << 20, 1u << 20}, .order = {0, 1, 2}};
    conc_run(&j);
    double t = (double)(4u << 20) / BW; /* one op alone */
    ck_assert_msg(j.end[0] < 2.1 * t && j.end[1] < 2.1 * t,
                  "first two: %.2f, %.2f T", j.end[0] / t, j.end[1] / t);
    ck_assert_msg(j.end[2] > 2.95 * t && j.end[2] < 3.1 * t, "third: %.2f T",
                  j.end[2] / t);
    /* the group gone, nothing holds the third back: the three run at
     * once, each direction carrying their reduce-scatters (two 1 MiB
     * segments each, T/4 apiece), then their all-gathers in the same
     * order: they end at 2, 2.5 and 3 T (with the workers: 2, 2, 3) */
    conc_t d = {.n = 3, .count = {1u << 20}};
    conc_run_prog(&d, destroyed_prog);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(fabs(d.end[i] / t - (2.0 + 0.5 * i)) < 0.05,
                      "destroyed group, op %d: %.2f T", i, d.end[i] / t);
}
END_TEST

START_TEST(missing_rank_hangs)
{
    job_t j = {.coll = HERD_COLL_ALL_GATHER,
               .algo = HERD_ALGO_GLOO,
               .count = 64,
               .skip = 1};
    ck_assert_int_eq(run(&j, 2, 0), HERD_ERR_HANG);
}
END_TEST

START_TEST(scenario_spelling)
{
    char *out = NULL;
    int rc = tu_herd("perf --engine sim --algo gloo -b 1M -e 1M "
                     "--nodes 2 --gpus-per-node 1",
                     &out);
    ck_assert_msg(rc == 0, "herd perf --algo gloo: %d\n%s", rc, out);
    free(out);
    rc = tu_herd("schedule --algo gloo --coll reduce_scatter -p 3 --count 5 "
                 "--verify",
                 &out);
    ck_assert_msg(rc == 0 && strstr(out, "gloo reduce_scatter") &&
                      strstr(out, "# verify: ok"),
                  "herd schedule --algo gloo: %d\n%s", rc, out);
    free(out);
}
END_TEST

/* A 2-node FSDP scenario on gloo; `extra` is appended to it. */
static char *fsdp_scenario(const char *dir, const char *name,
                           const char *fsdp_extra, const char *extra)
{
    char *path = malloc(1024);
    snprintf(path, 1024, "%s/%s.yaml", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "name: %s\ncluster:\n  nodes: 2\n  gpus_per_node: 1\n"
            "  inter: {bandwidth: 50MB/s, latency: 50us}\n"
            "workload:\n  fsdp:\n    model: gpt2_small\n"
            "    backend: gloo\n    steps: 4\n%s%s",
            name, fsdp_extra, extra);
    fclose(f);
    return path;
}

/* `herd fsdp run` of a scenario: exit status, and from its JSON report
 * the steady step time and the number of units. */
static int fsdp_run(const char *path, const char *dir, double *step_s,
                    int *units, char **out)
{
    char args[4096], js[1024];
    snprintf(js, sizeof(js), "%s/r.json", dir);
    snprintf(args, sizeof(args), "fsdp run %s --json %s --quiet", path, js);
    int rc = tu_herd(args, out);
    if (rc != 0)
        return rc;
    char *j = tu_read_file(js);
    ck_assert_ptr_nonnull(j);
    char *a = strstr(j, "\"step_s\":"), *b = strstr(j, "\"units\":");
    ck_assert(a && b);
    *step_s = strtod(a + 9, NULL);
    *units = atoi(b + 8);
    free(j);
    return 0;
}

START_TEST(fsdp_gloo_default)
{
    char *dir = tu_tmpdir(), *out = NULL;
    const char *late = "stragglers:\n  ranks: [{rank: 1, compute: 1.3}]\n";
    char *g = fsdp_scenario(dir, "g", "", late);
    char *r = fsdp_scenario(dir, "r", "",
                            "collectives: {algorithm: ring}\nstragglers:\n"
                            "  ranks: [{rank: 1, compute: 1.3}]\n");
    double gs, rs;
    int n;
    ck_assert_msg(fsdp_run(g, dir, &gs, &n, &out) == 0, "%s", out);
    free(out);
    ck_assert_msg(fsdp_run(r, dir, &rs, &n, &out) == 0, "%s", out);
    free(out);
    /* rank 1 posts its all_gathers late: gloo's transport makes them
     * 1.5 link times, herd's ring does not */
    ck_assert_msg(gs > rs * 1.05, "gloo %g s, ring %g s", gs, rs);
    free(g);
    free(r);
    free(dir);
}
END_TEST

START_TEST(fsdp_hook_time)
{
    char *dir = tu_tmpdir(), *out = NULL;
    char *a = fsdp_scenario(dir, "a", "", "");
    char *b = fsdp_scenario(dir, "b", "    hook_s: 0.002\n", "");
    double as, bs;
    int n, m;
    ck_assert_msg(fsdp_run(a, dir, &as, &n, &out) == 0, "%s", out);
    free(out);
    ck_assert_msg(fsdp_run(b, dir, &bs, &m, &out) == 0, "%s", out);
    free(out);
    ck_assert_int_eq(n, m);
    ck_assert_msg(bs - as > 4 * n * 0.002 * 0.999 &&
                      bs - as < 4 * n * 0.002 * 1.001,
                  "%d units: %g s without hooks, %g s with", n, as, bs);
    /* hooks are CPU time: only where the CPU is the device */
    char *c = fsdp_scenario(dir, "c", "    hook_s: 0.002\n", "");
    char args[2048];
    snprintf(args, sizeof(args), "fsdp run %s --set fsdp.backend=nccl --quiet",
             c);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, "fsdp.hook_s: only with backend gloo"), "%s",
                  out);
    free(out);
    snprintf(args, sizeof(args), "fsdp run %s --set fsdp.hook_s=-1 --quiet", c);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, "fsdp.hook_s"), "%s", out);
    free(out);
    free(a);
    free(b);
    free(c);
    free(dir);
}
END_TEST

/* The duration (us) of the first timeline record labelled `label`. */
static double tl_dur(const char *tsv, const char *label)
{
    char want[128];
    snprintf(want, sizeof(want), "\t%s\t", label);
    const char *l = strstr(tsv, want);
    ck_assert_msg(l, "no '%s' in the timeline", label);
    while (l > tsv && l[-1] != '\n')
        l--;
    /* rank node group seq kind name algo bytes start end dur label */
    double v[12] = {0};
    int k = 0;
    for (const char *f = l; k < 11 && f; k++) {
        v[k] = strtod(f, NULL);
        f = strchr(f, '\t');
        f = f ? f + 1 : NULL;
    }
    return v[10];
}

/* Rank `rank`'s records labelled `label`, and the duration (µs) of the
 * last of them. */
static int tl_count(const char *tsv, int rank, const char *label,
                    double *last_us)
{
    char want[128];
    snprintf(want, sizeof(want), "\t%s\t", label);
    int n = 0;
    for (const char *l = tsv; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
        const char *e = strchr(l, '\n');
        const char *hit = strstr(l, want);
        if (hit && (!e || hit < e) && atoi(l) == rank && isdigit(*l)) {
            n++;
            *last_us = tl_dur(l, label);
        }
    }
    return n;
}

START_TEST(fsdp_gloo_copies)
{
    char *dir = tu_tmpdir(), *out = NULL, args[2048];
    char *a = fsdp_scenario(dir, "a", "", "");
    snprintf(args, sizeof(args), "fsdp run %s --timeline %s/t.tsv --quiet", a,
             dir);
    ck_assert_msg(tu_herd(args, &out) == 0, "%s", out);
    free(out);
    snprintf(args, sizeof(args), "%s/t.tsv", dir);
    char *tsv = tu_read_file(args);
    ck_assert_ptr_nonnull(tsv);
    /* gpt2_small's unit 1 (transformer.h.0): 7,087,872 parameters, float32,
     * 2 shards of 3,543,936; copies at the model's 750 GB/s */
    double ag = tl_dur(tsv, "gloo copies u1");
    ck_assert_msg(fabs(ag - 4 * 3543936.0 * 4 / 750e9 * 1e6) < 0.01,
                  "all_gather copies %g us", ag);
    /* FSDP divides the gradient by 2 (its predivide factor for 2 ranks)
     * before the reduction, by 1 (nothing) after it: one pass over the
     * unsharded gradient a step */
    double last = 0;
    ck_assert_int_eq(tl_count(tsv, 0, "grad divide u1", &last), 4);
    ck_assert_msg(fabs(last - 2 * 3543936.0 * 4 / 750e9 * 1e6) < 0.01,
                  "divide %g us", last);
    free(tsv);
    /* 4 ranks: by 2 before, by 2 after (on the 1,771,968-element shard) */
    snprintf(args, sizeof(args),
             "fsdp run %s --set cluster.nodes=4 --timeline %s/t4.tsv --quiet",
             a, dir);
    ck_assert_msg(tu_herd(args, &out) == 0, "%s", out);
    free(out);
    snprintf(args, sizeof(args), "%s/t4.tsv", dir);
    tsv = tu_read_file(args);
    ck_assert_ptr_nonnull(tsv);
    ck_assert_int_eq(tl_count(tsv, 0, "grad divide u1", &last), 8);
    ck_assert_msg(fabs(last - 1771968.0 * 4 / 750e9 * 1e6) < 0.01,
                  "divide after %g us", last);
    free(tsv);
    free(a);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_gloo");
    TCase *tc = tcase_create("gloo");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, results);
    tcase_add_test(tc, schedules_verify);
    tcase_add_test(tc, all_gather_together);
    tcase_add_test(tc, all_gather_late_rank);
    tcase_add_test(tc, all_reduce_late_rank);
    tcase_add_test(tc, three_ranks_no_wait);
    tcase_add_test(tc, all_reduce_segments);
    tcase_add_test(tc, all_reduce_program_order);
    tcase_add_test(tc, concurrent_take_turns);
    tcase_add_test(tc, two_workers);
    tcase_add_test(tc, missing_rank_hangs);
    tcase_add_test(tc, scenario_spelling);
    tcase_add_test(tc, fsdp_gloo_default);
    tcase_add_test(tc, fsdp_hook_time);
    tcase_add_test(tc, fsdp_gloo_copies);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
