/* tests/unit_sched_run.c - core/sched_run.c, the transport-agnostic
 * schedule executor (the mpi engine's), without MPI: p ranks run in one
 * process over an in-memory transport that keeps each (sender, receiver,
 * channel) connection FIFO, as MPI does per tag, and reports completions
 * in a seeded random order. Every collective x every herd algorithm x
 * world sizes 1..5 x counts 0, 1, 37, in place, two channels with tiny
 * chunks; AVG on float16; a transport error fails the run. Results are
 * compared with the tcp suites' references. */
#include "core/sched_run.h"
#include "real_tcp_harness.h"
#include "support/testutil.h"

#define MAXP 5
#define MAXCH 2

typedef struct msg {
    struct msg *next;
    char *data;
    size_t bytes;
} msg_t;

typedef struct rx {
    struct rx *next;
    int rank;
    uint32_t step;
    char *buf;
    size_t bytes;
} rx_t;

typedef struct conn {
    msg_t *mh, **mt;
    rx_t *rh, **rt;
} conn_t;

typedef struct mem_world mem_world_t;

typedef struct mem_rank {
    mem_world_t *w;
    int rank;
} mem_rank_t;

struct mem_world {
    int p;
    conn_t conn[MAXP * MAXP * MAXCH];
    mem_rank_t ranks[MAXP];
    core_run_t run[MAXP];
    int (*done)[2]; /* completions not yet reported: rank, step */
    size_t ndone, cap;
    uint64_t rng;
    int fail_sends;
};

static conn_t *conn_of(mem_world_t *w, int src, int dst, int ch)
{
    return &w->conn[(src * w->p + dst) * MAXCH + ch];
}

static void complete_later(mem_world_t *w, int rank, uint32_t step)
{
    if (w->ndone == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->done = realloc(w->done, w->cap * sizeof(*w->done));
    }
    w->done[w->ndone][0] = rank;
    w->done[w->ndone++][1] = (int)step;
}

static herd_status_t t_send(void *ctx, uint32_t step, const core_step_t *st,
                            const void *buf, size_t bytes)
{
    mem_rank_t *me = ctx;
    mem_world_t *w = me->w;
    if (w->fail_sends)
        return HERD_ERR_IO;
    msg_t *m = calloc(1, sizeof(*m));
    m->data = malloc(bytes + 1);
    memcpy(m->data, buf, bytes); /* the data leaves now */
    m->bytes = bytes;
    conn_t *c = conn_of(w, me->rank, st->peer, st->channel);
    *c->mt = m;
    c->mt = &m->next;
    complete_later(w, me->rank, step);
    return HERD_OK;
}

static herd_status_t t_recv(void *ctx, uint32_t step, const core_step_t *st,
                            void *buf, size_t bytes)
{
    mem_rank_t *me = ctx;
    rx_t *r = calloc(1, sizeof(*r));
    *r = (rx_t){.rank = me->rank, .step = step, .buf = buf, .bytes = bytes};
    conn_t *c = conn_of(me->w, st->peer, me->rank, st->channel);
    *c->rt = r;
    c->rt = &r->next;
    return HERD_OK;
}

static const core_run_ops_t mem_ops = {.send = t_send, .recv = t_recv};

/* Deliver matched messages; 1 if anything moved. */
static int deliver(mem_world_t *w, int *bad)
{
    int moved = 0;
    for (size_t i = 0; i < sizeof(w->conn) / sizeof(w->conn[0]); i++) {
        conn_t *c = &w->conn[i];
        while (c->mh && c->rh) {
            msg_t *m = c->mh;
            rx_t *r = c->rh;
            if (!(c->mh = m->next))
                c->mt = &c->mh;
            if (!(c->rh = r->next))
                c->rt = &c->rh;
            *bad |= m->bytes != r->bytes;
            memcpy(r->buf, m->data, m->bytes < r->bytes ? m->bytes : r->bytes);
            complete_later(w, r->rank, r->step);
            free(m->data);
            free(m);
            free(r);
            moved = 1;
        }
    }
    return moved;
}

/* Run one case on p in-memory ranks; 0 when every output is right. */
static int run_case(int p, const rt_case_t *k, int channels, size_t chunk,
                    uint64_t seed)
{
    mem_world_t *w = calloc(1, sizeof(*w));
    herd_comm_t comm[MAXP];
    rt_bufs_t b[MAXP];
    int bad = 0;
    w->p = p;
    w->rng = seed | 1;
    for (size_t i = 0; i < sizeof(w->conn) / sizeof(w->conn[0]); i++) {
        w->conn[i].mt = &w->conn[i].mh;
        w->conn[i].rt = &w->conn[i].rh;
    }
    for (int r = 0; r < p; r++) {
        core_comm_init(&comm[r], NULL, r, p, r, r, 0, NULL, NULL);
        rt_bufs_make(&comm[r], k, &b[r]);
        core_coll_args_t a = {.coll = k->coll,
                              .sendbuf = b[r].in,
                              .recvbuf = b[r].out,
                              .count = k->count,
                              .dtype = k->dtype,
                              .op = k->op,
                              .root = k->root,
                              .channels = channels,
                              .chunk_bytes = chunk,
                              .seq = 1};
        w->ranks[r] = (mem_rank_t){.w = w, .rank = r};
        herd_status_t st =
            core_run_init(&w->run[r], &comm[r], &a, k->algo, p % 2 == 0 ? 2 : p,
                          &mem_ops, &w->ranks[r]);
        ck_assert_msg(st == HERD_OK, "init: %s", comm[r].last_error);
    }
    for (int r = 0; r < p; r++)
        ck_assert_int_eq(core_run_start(&w->run[r]), HERD_OK);
    for (;;) {
        int moved = deliver(w, &bad);
        if (w->ndone) { /* one completion, in random order */
            w->rng ^= w->rng << 13;
            w->rng ^= w->rng >> 7;
            w->rng ^= w->rng << 17;
            size_t i = (size_t)(w->rng % w->ndone);
            int rank = w->done[i][0];
            uint32_t step = (uint32_t)w->done[i][1];
            w->done[i][0] = w->done[w->ndone - 1][0];
            w->done[i][1] = w->done[--w->ndone][1];
            ck_assert_int_eq(core_run_step_done(&w->run[rank], step), HERD_OK);
            moved = 1;
        }
        if (!moved)
            break;
    }
    for (int r = 0; r < p; r++) {
        if (!w->run[r].finished) {
            char name[160];
            rt_case_name(k, name, sizeof(name));
            fprintf(stderr, "%s p=%d: rank %d did not finish\n", name, p, r);
            bad = 1;
        } else {
            bad |= rt_check(&comm[r], k, &b[r]);
        }
        core_run_fini(&w->run[r]);
        rt_bufs_free(&b[r]);
    }
    free(w->done);
    free(w);
    return bad;
}

static const herd_coll_t colls[] = {
    HERD_COLL_ALL_REDUCE,     HERD_COLL_BROADCAST,  HERD_COLL_REDUCE,
    HERD_COLL_ALL_GATHER,     HERD_COLL_GATHER,     HERD_COLL_SCATTER,
    HERD_COLL_REDUCE_SCATTER, HERD_COLL_ALL_TO_ALL, HERD_COLL_BARRIER};

START_TEST(every_algorithm)
{
    static const uint64_t counts[] = {0, 1, 37};
    int p = _i + 1, bad = 0;
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++)
        for (int a = HERD_ALGO_RING; a < HERD_ALGO_NCCL; a++) {
            if (!core_sched_supports((herd_algo_t)a, colls[c]))
                continue;
            for (size_t n = 0; n < 3; n++)
                for (int ip = 0; ip < 2; ip++)
                    for (int ch = 1; ch <= 2; ch++) {
                        int inplace_ok = colls[c] == HERD_COLL_ALL_REDUCE ||
                                         colls[c] == HERD_COLL_ALL_GATHER ||
                                         colls[c] == HERD_COLL_REDUCE_SCATTER;
                        if (ip && !inplace_ok)
                            continue;
                        rt_case_t k = {.coll = colls[c],
                                       .algo = (herd_algo_t)a,
                                       .dtype = HERD_INT32,
                                       .op = HERD_SUM,
                                       .count = counts[n],
                                       .root = p - 1,
                                       .inplace = ip};
                        bad |= run_case(p, &k, ch, ch == 2 ? 16 : 4u << 20,
                                        0x9e37 + (uint64_t)(c * 131 + n));
                    }
        }
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* AVG divides at the end; float16 reduces through herd's kernels. */
START_TEST(avg_float16)
{
    rt_case_t k = {.coll = HERD_COLL_ALL_REDUCE,
                   .algo = HERD_ALGO_RING,
                   .dtype = HERD_FLOAT16,
                   .op = HERD_AVG,
                   .count = 41};
    ck_assert_int_eq(run_case(4, &k, 2, 8, 7), 0);
    k.coll = HERD_COLL_REDUCE;
    k.algo = HERD_ALGO_BINOMIAL;
    k.root = 2;
    ck_assert_int_eq(run_case(4, &k, 1, 0, 11), 0);
}
END_TEST

/* A transport that cannot send fails the run with its status. */
START_TEST(transport_error)
{
    mem_world_t *w = calloc(1, sizeof(*w));
    herd_comm_t comm;
    int32_t in[8] = {0}, out[8];
    w->p = 2;
    w->fail_sends = 1;
    w->ranks[0] = (mem_rank_t){.w = w, .rank = 0};
    core_comm_init(&comm, NULL, 0, 2, 0, 0, 0, NULL, NULL);
    core_coll_args_t a = {.coll = HERD_COLL_ALL_REDUCE,
                          .sendbuf = in,
                          .recvbuf = out,
                          .count = 8,
                          .dtype = HERD_INT32,
                          .op = HERD_SUM,
                          .root = -1,
                          .channels = 1};
    ck_assert_int_eq(core_run_init(&w->run[0], &comm, &a, HERD_ALGO_RING, 0,
                                   &mem_ops, &w->ranks[0]),
                     HERD_OK);
    ck_assert_int_eq(core_run_start(&w->run[0]), HERD_ERR_IO);
    ck_assert(!w->run[0].finished);
    core_run_fini(&w->run[0]);
    /* an algorithm that does not implement the collective says so */
    a.coll = HERD_COLL_ALL_TO_ALL;
    ck_assert_int_eq(core_run_init(&w->run[0], &comm, &a, HERD_ALGO_TREE, 0,
                                   &mem_ops, &w->ranks[0]),
                     HERD_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(comm.last_error, "does not implement"));
    free(w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unit_sched_run");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, every_algorithm, 0, MAXP);
    tcase_add_test(tc, avg_float16);
    tcase_add_test(tc, transport_error);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
