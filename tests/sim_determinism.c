/* tests/sim_determinism.c - the same inputs and seed give byte-identical
 * timelines; another seed changes a jittered run; stragglers slow exactly
 * the ranks they name; every op leaves a timeline record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

typedef struct tl {
    char *text;
    size_t len, cap;
    int ncoll, ncompute, nmark, nwait;
    uint64_t compute_ns[8];
} tl_t;

static void on_rec(const herd_tl_rec_t *r, void *arg)
{
    tl_t *t = arg;
    char line[256];
    int n = snprintf(
        line, sizeof(line),
        "%d %d %d %d %llu %d %d %d %llu %d %llu %llu %s %d\n", r->kind, r->rank,
        r->node, r->group, (unsigned long long)r->seq, r->coll, r->algo,
        r->dtype, (unsigned long long)r->count, r->peer,
        (unsigned long long)r->start_ns, (unsigned long long)r->end_ns,
        r->label ? r->label : "-", r->status);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->text = realloc(t->text, t->cap);
    }
    memcpy(t->text + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
    t->ncoll += r->kind == HERD_TL_COLL;
    t->nmark += r->kind == HERD_TL_MARK;
    t->nwait += r->kind == HERD_TL_WAIT;
    if (r->kind == HERD_TL_COMPUTE) {
        t->ncompute++;
        if (r->rank < 8)
            t->compute_ns[r->rank] += r->end_ns - r->start_ns;
    }
}

static int prog(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), p = herd_comm_size(c);
    void *buf;
    herd_alloc(c, 1 << 20, &buf);
    for (int s = 0; s < 3; s++) {
        herd_mark(c, "step");
        herd_comm_set_label(c, "bucket0");
        herd_compute(c, 1e-3, "backward");
        herd_req_t *req;
        if (herd_all_reduce(c, buf, buf, 1 << 18, HERD_FLOAT32, HERD_SUM, &req))
            return 1;
        herd_compute(c, 2e-4, "backward");
        if (herd_req_wait(req))
            return 2;
        herd_req_free(req);
        herd_comm_set_label(c, NULL);
    }
    int evens[4] = {0, 2, 4, 6};
    herd_comm_t *g = NULL;
    if (herd_new_group(c, evens, 4, &g))
        return 3;
    if (g && herd_broadcast(g, buf, 1000, HERD_UINT8, 1, NULL))
        return 4;
    if (g)
        herd_comm_destroy(g);
    if (herd_send(c, buf, 10, HERD_UINT8, (r + 1) % p, 0, &(herd_req_t *){0}))
        return 5;
    return herd_recv(c, buf, 10, HERD_UINT8, (r + p - 1) % p, 0, NULL) ? 6 : 0;
}

static void run(uint64_t seed, herd_jitter_t j, double factor1, tl_t *t)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.seed = seed;
    o.jitter = j;
    o.jitter_sigma = 0.2;
    herd_rank_override_t ov = {.rank = 1, .compute_factor = factor1};
    o.ranks = &ov;
    o.nranks_overrides = factor1 > 0 ? 1 : 0;
    memset(t, 0, sizeof(*t));
    herd_init_t init = {.backend = "sim",
                        .engine_opts = &o,
                        .timeline_cb = on_rec,
                        .timeline_arg = t};
    ck_assert_int_eq(herd_run(&init, prog, NULL, NULL), HERD_OK);
}

START_TEST(same_seed_same_bytes)
{
    tl_t a, b;
    run(7, HERD_JITTER_LOGNORMAL, 0, &a);
    run(7, HERD_JITTER_LOGNORMAL, 0, &b);
    ck_assert_uint_gt(a.len, 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.text, b.text, a.len), 0);
    free(a.text);
    free(b.text);
}
END_TEST

START_TEST(other_seed_other_run)
{
    tl_t a, b, c, d;
    run(7, HERD_JITTER_NORMAL, 0, &a);
    run(8, HERD_JITTER_NORMAL, 0, &b);
    ck_assert(a.len != b.len || memcmp(a.text, b.text, a.len) != 0);
    /* without jitter the seed does not matter */
    run(7, HERD_JITTER_NONE, 0, &c);
    run(8, HERD_JITTER_NONE, 0, &d);
    ck_assert_uint_eq(c.len, d.len);
    ck_assert_int_eq(memcmp(c.text, d.text, c.len), 0);
    free(a.text);
    free(b.text);
    free(c.text);
    free(d.text);
}
END_TEST

START_TEST(every_op_recorded)
{
    tl_t t;
    run(1, HERD_JITTER_NONE, 0, &t);
    /* 8 ranks: 3 all_reduce + 2 p2p each, 4 broadcast members */
    ck_assert_int_eq(t.ncoll, 8 * 5 + 4);
    ck_assert_int_eq(t.ncompute, 8 * 6);
    ck_assert_int_eq(t.nmark, 8 * 3);
    ck_assert_uint_eq(t.compute_ns[0], 3 * 1200000u);
    ck_assert_ptr_nonnull(strstr(t.text, "bucket0"));
    free(t.text);
}
END_TEST

START_TEST(straggler_factor)
{
    tl_t t;
    run(1, HERD_JITTER_NONE, 2.5, &t);
    ck_assert_uint_eq(t.compute_ns[0], 3 * 1200000u);
    ck_assert_uint_eq(t.compute_ns[1], 3 * 3000000u);
    free(t.text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_determinism");
    TCase *t = tcase_create("determinism");
    tcase_add_test(t, same_seed_same_bytes);
    tcase_add_test(t, other_seed_other_run);
    tcase_add_test(t, every_op_recorded);
    tcase_add_test(t, straggler_factor);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
