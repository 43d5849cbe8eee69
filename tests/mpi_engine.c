/* tests/mpi_engine.c - the mpi engine under mpirun (4 ranks, loopback):
 * every collective with MPI's own implementation (algorithm auto) and
 * with every herd schedule that implements it over MPI point-to-point,
 * counts 0, 1 and a prime, both roots, in place and not, one and two
 * channels; every dtype x op; subgroups; send/recv; asynchronous calls
 * completed out of order; timeline records; a second herd_run in one
 * process; `herd perf --engine mpi` with checked results. Results are
 * compared with references computed from all ranks' inputs (small
 * integers: every reduction order gives the same bits). */
#include "mpi_harness.h"

static const herd_coll_t colls[] = {
    HERD_COLL_ALL_REDUCE,     HERD_COLL_BROADCAST,  HERD_COLL_REDUCE,
    HERD_COLL_ALL_GATHER,     HERD_COLL_GATHER,     HERD_COLL_SCATTER,
    HERD_COLL_REDUCE_SCATTER, HERD_COLL_ALL_TO_ALL, HERD_COLL_BARRIER};

static int rooted(herd_coll_t k)
{
    return k == HERD_COLL_BROADCAST || k == HERD_COLL_REDUCE ||
           k == HERD_COLL_GATHER || k == HERD_COLL_SCATTER;
}

/* rt_bufs_make knows herd's in-place layouts for these */
static int inplace_kind(herd_coll_t k)
{
    return k == HERD_COLL_ALL_REDUCE || k == HERD_COLL_REDUCE_SCATTER ||
           k == HERD_COLL_ALL_GATHER;
}

/* Algorithms to try: auto (MPI's own) and every herd schedule. */
static int algo_used(herd_algo_t a, herd_coll_t coll)
{
    return a == HERD_ALGO_AUTO ||
           (a != HERD_ALGO_NCCL && core_sched_supports(a, coll));
}

static int run_coll_algo(herd_comm_t *c, herd_coll_t coll, herd_algo_t algo,
                         herd_dtype_t dt, herd_op_t op)
{
    static const uint64_t counts[] = {0, 1, 1009};
    int p = herd_comm_size(c), bad = 0;
    int roots[2] = {0, p - 1};
    for (size_t i = 0; i < 3; i++)
        for (int ri = 0; ri < (rooted(coll) && p > 1 ? 2 : 1); ri++)
            for (int ip = 0; ip <= inplace_kind(coll); ip++) {
                rt_case_t k = {.coll = coll,
                               .algo = algo,
                               .dtype = dt,
                               .op = op,
                               .count = counts[i],
                               .root = roots[ri],
                               .inplace = ip};
                bad |= rt_run_case(c, &k);
                if (coll == HERD_COLL_BARRIER)
                    return bad;
            }
    return bad;
}

static int job_colls(herd_comm_t *c, void *arg)
{
    int bad = 0;
    for (int ch = 1; ch <= 2; ch++) {
        /* small chunks: the pipelined schedules take many steps */
        herd_comm_set_channels(c, ch, ch == 1 ? 4u << 20 : 1024);
        for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
            for (int a = 0; a < HERD_ALGO_COUNT; a++)
                if (algo_used((herd_algo_t)a, colls[i]))
                    bad |= run_coll_algo(c, colls[i], (herd_algo_t)a,
                                         HERD_FLOAT32, HERD_SUM);
    }
    return mh_verdict(c, arg, bad);
}

/* Every dtype x op on the reducing collectives, MPI's own (built-in ops,
 * herd's kernels for float16/bfloat16) and ring/tree. */
static int job_dtypes(herd_comm_t *c, void *arg)
{
    static const herd_coll_t red[] = {HERD_COLL_ALL_REDUCE, HERD_COLL_REDUCE,
                                      HERD_COLL_REDUCE_SCATTER};
    static const herd_algo_t algos[] = {HERD_ALGO_AUTO, HERD_ALGO_RING,
                                        HERD_ALGO_TREE};
    int bad = 0;
    for (int d = 0; d < HERD_DTYPE_COUNT; d++)
        for (int o = 0; o < HERD_OP_COUNT; o++) {
            if (!core_reduce_valid((herd_dtype_t)d, (herd_op_t)o))
                continue;
            for (size_t i = 0; i < 3; i++)
                for (size_t a = 0; a < 3; a++) {
                    if (!algo_used(algos[a], red[i]))
                        continue;
                    rt_case_t k = {.coll = red[i],
                                   .algo = algos[a],
                                   .dtype = (herd_dtype_t)d,
                                   .op = (herd_op_t)o,
                                   .count = 37,
                                   .root = 1};
                    bad |= rt_run_case(c, &k);
                }
        }
    /* 8-bit sums wrap as in C and torch, also where Open MPI's AVX
     * kernels (64 elements) would saturate */
    for (int d = HERD_INT8; d <= HERD_UINT8; d++) {
        uint8_t v[64], s[64];
        memset(v, 100 + herd_comm_rank(c), sizeof(v));
        bad |= herd_all_reduce(c, v, s, 64, (herd_dtype_t)d, HERD_SUM, NULL) !=
               HERD_OK;
        uint8_t want = 0;
        for (int q = 0; q < herd_comm_size(c); q++)
            want = (uint8_t)(want + 100 + q);
        for (int i = 0; i < 64; i++)
            bad |= s[i] != want;
    }
    /* data movers carry every dtype's bits unchanged */
    for (int d = 0; d < HERD_DTYPE_COUNT; d++) {
        rt_case_t k = {.coll = HERD_COLL_ALL_GATHER,
                       .dtype = (herd_dtype_t)d,
                       .op = HERD_SUM,
                       .count = 5};
        bad |= rt_run_case(c, &k);
        k.coll = HERD_COLL_ALL_TO_ALL;
        k.algo = HERD_ALGO_DIRECT;
        bad |= rt_run_case(c, &k);
    }
    return mh_verdict(c, arg, bad);
}

/* Subgroups: members only, in the listed order, both collective paths,
 * a group of a group; non-members get NULL. */
static int job_groups(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), bad = 0;
    static const int odd[] = {3, 1}, even[] = {2, 0}, three[] = {3, 0, 2};
    herd_comm_t *g1 = NULL, *g2 = NULL, *g3 = NULL, *sub = NULL;
    bad |= herd_new_group(c, odd, 2, &g1) != HERD_OK;
    bad |= herd_new_group(c, even, 2, &g2) != HERD_OK;
    bad |= herd_new_group(c, three, 3, &g3) != HERD_OK;
    herd_comm_t *mine = r % 2 ? g1 : g2;
    bad |= !mine || (r % 2 ? g2 : g1) != NULL;
    bad |= herd_comm_rank(mine) != (r == 3 || r == 2 ? 0 : 1);
    bad |= herd_comm_world_rank(mine, 0) != (r % 2 ? 3 : 2);
    bad |= (g3 != NULL) != (r != 1);
    for (int a = 0; a < 3 && !bad; a++) {
        herd_algo_t algo = a == 0   ? HERD_ALGO_AUTO
                           : a == 1 ? HERD_ALGO_RING
                                    : HERD_ALGO_TREE;
        for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
            if (!algo_used(algo, colls[i]))
                continue;
            bad |= run_coll_algo(mine, colls[i], algo, HERD_INT32, HERD_SUM);
            if (g3)
                bad |= run_coll_algo(g3, colls[i], algo, HERD_INT32, HERD_SUM);
        }
    }
    /* {3, 0} of g3 (group ranks 0, 1): world ranks 3 and 0 */
    static const int pair[] = {0, 1};
    if (g3) {
        bad |= herd_new_group(g3, pair, 2, &sub) != HERD_OK;
        bad |= (sub != NULL) != (r == 3 || r == 0);
    }
    if (sub) {
        int32_t v = r, sum = 0;
        bad |= herd_all_reduce(sub, &v, &sum, 1, HERD_INT32, HERD_SUM, NULL) !=
               HERD_OK;
        bad |= sum != 3;
        bad |= herd_comm_world_rank(sub, 1) != 0;
        herd_comm_destroy(sub);
    }
    if (g3)
        herd_comm_destroy(g3);
    herd_comm_destroy(mine);
    bad |= herd_barrier(c, NULL) != HERD_OK;
    return mh_verdict(c, arg, bad);
}

/* send/recv: a ring exchange per tag, asynchronous, in order per tag;
 * a receive that expects more than was sent is a size mismatch; a tag
 * beyond MPI's range is refused. */
static int job_p2p(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), p = herd_comm_size(c), bad = 0;
    int to = (r + 1) % p, from = (r + p - 1) % p;
    double out[3][64], in[3][64];
    herd_req_t *sq[3], *rq[3];
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 64; i++)
            out[t][i] = r * 1000 + t * 100 + i;
    for (int t = 2; t >= 0; t--)
        bad |=
            herd_recv(c, in[t], 64, HERD_FLOAT64, from, t, &rq[t]) != HERD_OK;
    for (int t = 0; t < 3; t++)
        bad |= herd_send(c, out[t], 64, HERD_FLOAT64, to, t, &sq[t]) != HERD_OK;
    for (int t = 0; t < 3 && !bad; t++) {
        bad |= herd_req_wait(rq[t]) != HERD_OK;
        bad |= herd_req_wait(sq[t]) != HERD_OK;
        herd_req_free(rq[t]);
        herd_req_free(sq[t]);
        for (int i = 0; i < 64; i++)
            bad |= in[t][i] != from * 1000 + t * 100 + i;
    }
    /* rank 0 sends 4 elements, rank 1 expects 8 */
    int32_t small[8] = {1, 2, 3, 4};
    if (r == 0)
        bad |= herd_send(c, small, 4, HERD_INT32, 1, 7, NULL) != HERD_OK;
    if (r == 1) {
        herd_status_t st = herd_recv(c, small, 8, HERD_INT32, 0, 7, NULL);
        bad |= st != HERD_ERR_MISMATCH ||
               !strstr(herd_last_error(c), "size mismatch");
    }
    bad |= herd_send(c, small, 1, HERD_INT32, to, -1, NULL) !=
           HERD_ERR_INVALID_ARG;
    bad |= !strstr(herd_last_error(c), "out of MPI's range");
    bad |= herd_barrier(c, NULL) != HERD_OK;
    return mh_verdict(c, arg, bad);
}

/* Async: a schedule and MPI's own collectives in flight together, waited
 * in reverse order; test polls; compute overlaps communication. */
static int job_async(herd_comm_t *c, void *arg)
{
    int p = herd_comm_size(c), bad = 0;
    enum { N = 4096 };
    static float a[N], b[N], d[N];
    for (int i = 0; i < N; i++)
        a[i] = b[i] = d[i] = (float)(i % 7);
    herd_req_t *qa, *qb, *qd;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    herd_comm_set_channels(c, 2, 1024);
    bad |= herd_all_reduce(c, a, a, N, HERD_FLOAT32, HERD_SUM, &qa) != HERD_OK;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_AUTO);
    bad |= herd_all_reduce(c, b, b, N, HERD_FLOAT32, HERD_MAX, &qb) != HERD_OK;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD);
    bad |= herd_all_reduce(c, d, d, N, HERD_FLOAT32, HERD_AVG, &qd) != HERD_OK;
    if (bad)
        return mh_verdict(c, arg, bad);
    double got = 0;
    bad |= herd_compute_until(c, 5.0, qd, "overlap", &got) != HERD_OK;
    bad |= !(got < 5.0);
    int done = 0;
    while (!done && !bad)
        bad |= herd_req_test(qb, &done) != HERD_OK;
    bad |= herd_req_wait(qa) != HERD_OK;
    herd_req_free(qd);
    herd_req_free(qb);
    herd_req_free(qa);
    for (int i = 0; i < N; i++)
        bad |= a[i] != (float)(i % 7) * p || b[i] != (float)(i % 7) ||
               d[i] != (float)(i % 7);
    return mh_verdict(c, arg, bad);
}

typedef struct tl_seen {
    int coll, wait, compute, mark, bad;
    uint64_t last_seq;
} tl_seen_t;

static tl_seen_t tl;

static void tl_cb(const herd_tl_rec_t *rec, void *arg)
{
    (void)arg;
    switch (rec->kind) {
    case HERD_TL_COLL:
        tl.coll++;
        tl.bad |= rec->end_ns < rec->start_ns || rec->status != HERD_OK;
        if (rec->coll == HERD_COLL_ALL_REDUCE) {
            tl.bad |= rec->seq <= tl.last_seq || rec->count != 256 ||
                      rec->bytes != 1024 || !rec->label ||
                      strcmp(rec->label, "bucket0") != 0;
            tl.last_seq = rec->seq;
        }
        break;
    case HERD_TL_WAIT:
        tl.wait++;
        break;
    case HERD_TL_COMPUTE:
        tl.compute++;
        tl.bad |= rec->end_ns - rec->start_ns < 2000000u;
        break;
    default:
        tl.mark++;
    }
}

/* The timeline: one COLL record per op with its sequence number, bytes
 * and label, WAIT records, COMPUTE at least as long as asked, marks. */
static int job_timeline(herd_comm_t *c, void *arg)
{
    c->tl_cb = tl_cb; /* herd_run's init has none: set it on the world */
    int bad = 0;
    float v[256] = {0};
    herd_comm_set_label(c, "bucket0");
    for (int i = 0; i < 3; i++) {
        herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE,
                           i == 1 ? HERD_ALGO_RING : HERD_ALGO_AUTO);
        bad |= herd_all_reduce(c, v, v, 256, HERD_FLOAT32, HERD_SUM, NULL) !=
               HERD_OK;
    }
    herd_comm_set_label(c, NULL);
    bad |= herd_mark(c, "step") != HERD_OK;
    bad |= herd_compute(c, 0.002, "fwd") != HERD_OK;
    bad |= herd_barrier(c, NULL) != HERD_OK;
    c->tl_cb = NULL;
    bad |= tl.bad || tl.coll != 4 || tl.wait < 1 || tl.compute != 1 ||
           tl.mark != 1;
    if (bad)
        fprintf(stderr, "timeline: coll %d wait %d compute %d mark %d bad %d\n",
                tl.coll, tl.wait, tl.compute, tl.mark, tl.bad);
    bad |= strcmp(herd_comm_backend(c), "mpi") != 0;
    return mh_verdict(c, arg, bad);
}

static int noop(herd_comm_t *c, void *arg)
{
    (void)c;
    (void)arg;
    return 0;
}

/* MPI starts once per process: a second herd_run says so. */
static int job_once(herd_comm_t *c, void *arg)
{
    return mh_verdict(c, arg, herd_barrier(c, NULL) != HERD_OK);
}

static const mh_job_t jobs[] = {
    {"colls", job_colls, 0},   {"dtypes", job_dtypes, 0},
    {"groups", job_groups, 0}, {"p2p", job_p2p, 0},
    {"async", job_async, 0},   {"timeline", job_timeline, 0},
    {"once", job_once, 0}};

START_TEST(test_colls)
{
    MH_JOB_OK(4, NULL, "colls");
}
END_TEST

START_TEST(test_colls_3)
{
    MH_JOB_OK(3, NULL, "colls");
}
END_TEST

START_TEST(test_dtypes)
{
    MH_JOB_OK(4, NULL, "dtypes");
}
END_TEST

START_TEST(test_groups)
{
    MH_JOB_OK(4, NULL, "groups");
}
END_TEST

START_TEST(test_p2p)
{
    MH_JOB_OK(4, NULL, "p2p");
}
END_TEST

START_TEST(test_async)
{
    MH_JOB_OK(4, NULL, "async");
}
END_TEST

START_TEST(test_timeline)
{
    MH_JOB_OK(2, NULL, "timeline");
}
END_TEST

/* The once job's ranks then try herd_run again (see main). */
START_TEST(test_once)
{
    MH_JOB_OK(2, NULL, "once");
}
END_TEST

/* herd perf --engine mpi under mpirun: the nccl-tests table with every
 * result checked, MPI's own and herd's ring. */
START_TEST(test_perf)
{
    const char *algos[] = {"auto", "ring"};
    for (int i = 0; i < 2; i++) {
        char cmd[2048], *out = NULL;
        snprintf(cmd, sizeof(cmd),
                 "%s perf --engine mpi --algo %s -b 8 -e 64K -f 8 -n 3 -c 1",
                 tu_herd_binary(), algos[i]);
        int rc = mh_mpirun(2, NULL, cmd, &out);
        ck_assert_msg(rc == 0, "%s", out);
        ck_assert_msg(mh_count(out, "float32     sum") == 5, "%s", out);
        ck_assert_msg(strstr(out, "# Out of bounds values : 0 OK"), "%s", out);
        free(out);
    }
}
END_TEST

/* Processes of `herd launch` are MPI singletons: said, not run alone. */
START_TEST(test_not_launch)
{
    char cmd[1200], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "WORLD_SIZE=2 RANK=0 %s perf --engine mpi -b 8 -e 8 "
             "</dev/null 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 1);
    ck_assert_msg(strstr(out, "WORLD_SIZE is 2 but MPI started a world of 1: "
                              "start the mpi engine with mpirun or srun"),
                  "%s", out);
    free(out);
}
END_TEST

/* herd replay --engine mpi under mpirun: each rank writes its own
 * timeline (rank from OMPI_COMM_WORLD_RANK), with the trace's ops. */
START_TEST(test_replay)
{
    char *dir = tu_tmpdir(), path[600], cmd[2048], *out = NULL;
    snprintf(path, sizeof(path), "%s/t.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2,\n"
          " \"ops\": [{\"op\": \"compute\", \"dur_us\": 1000},\n"
          "         {\"op\": \"all_reduce\", \"count\": 4096},\n"
          "         {\"op\": \"broadcast\", \"count\": 16, \"root\": 1}]}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s replay %s --engine mpi -o %s/out",
             tu_herd_binary(), path, dir);
    ck_assert_msg(mh_mpirun(2, NULL, cmd, &out) == 0, "%s", out);
    free(out);
    for (int r = 0; r < 2; r++) {
        snprintf(path, sizeof(path), "%s/out/timeline-rank%d.json", dir, r);
        char *tl = tu_read_file(path);
        ck_assert_msg(tl && strstr(tl, "all_reduce") && strstr(tl, "broadcast"),
                      "%s: %s", path, tl ? tl : "missing");
        free(tl);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

static Suite *make(void)
{
    Suite *s = suite_create("mpi_engine");
    TCase *tc = tcase_create("mpi");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_colls);
    tcase_add_test(tc, test_colls_3);
    tcase_add_test(tc, test_dtypes);
    tcase_add_test(tc, test_groups);
    tcase_add_test(tc, test_p2p);
    tcase_add_test(tc, test_async);
    tcase_add_test(tc, test_timeline);
    tcase_add_test(tc, test_once);
    tcase_add_test(tc, test_perf);
    tcase_add_test(tc, test_replay);
    tcase_add_test(tc, test_not_launch);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--job") && !strcmp(argv[2], "once")) {
        int rc = mh_worker(jobs, sizeof(jobs) / sizeof(jobs[0]), "once");
        herd_init_t init = {.backend = "mpi", .rank = -1, .local_rank = -1};
        herd_status_t st = herd_run(&init, noop, NULL, NULL);
        if (st != HERD_ERR_UNSUPPORTED) {
            printf("second herd_run: %s\n", herd_status_string(st));
            return 1;
        }
        return rc;
    }
    return mh_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), make);
}
