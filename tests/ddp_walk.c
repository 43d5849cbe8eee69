/* tests/ddp_walk.c - the calls the DDP program makes, engine-free: a fake
 * emitter records them in order with a compute clock, and the tests check
 * PyTorch's reducer behaviour: the single construction bucket, the rebuild
 * and its broadcasts, launch strictly in bucket-index order, the
 * used-parameter map, no_sync, compression hooks, buffer broadcasts,
 * unused parameters raising at the next forward, uneven data, rank-0
 * evaluation and checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "workload/ddp/job.h"

typedef struct ev {
    char kind; /* c compute, m mark, a all_reduce, b broadcast, B barrier,
                  w wait */
    char label[48];
    uint64_t count;
    herd_dtype_t dt;
    size_t slot;
    double t;
} ev_t;

typedef struct rec {
    ev_t ev[4096];
    size_t n;
    double now;
} rec_t;

static ev_t *push(rec_t *r, char kind, const char *label)
{
    ck_assert_uint_lt(r->n, 4096);
    ev_t *e = &r->ev[r->n++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->t = r->now;
    snprintf(e->label, sizeof(e->label), "%s", label ? label : "");
    return e;
}

static herd_status_t f_compute(void *c, double s, const char *l)
{
    rec_t *r = c;
    push(r, 'c', l);
    r->now += s;
    return HERD_OK;
}
static herd_status_t f_mark(void *c, const char *l)
{
    push(c, 'm', l);
    return HERD_OK;
}
static herd_status_t f_ar(void *c, uint64_t n, herd_dtype_t dt, size_t slot,
                          const char *l)
{
    ev_t *e = push(c, 'a', l);
    e->count = n, e->dt = dt, e->slot = slot;
    return HERD_OK;
}
static herd_status_t f_bc(void *c, uint64_t n, herd_dtype_t dt, int root,
                          size_t slot, const char *l)
{
    ev_t *e = push(c, 'b', l);
    e->count = n, e->dt = dt, e->slot = slot;
    return HERD_OK;
}
static herd_status_t f_barrier(void *c, size_t slot, const char *l)
{
    push(c, 'B', l)->slot = slot;
    return HERD_OK;
}
static herd_status_t f_wait(void *c, size_t slot)
{
    push(c, 'w', NULL)->slot = slot;
    return HERD_OK;
}
static const ddp_emit_ops_t fake = {f_compute, f_mark, f_ar, f_bc,
                                    f_barrier, f_wait, NULL};

/* Four 1 MiB float32 parameters, 1 ms of backward each, ready order
 * given; 0.5 MiB of buffers. */
static char *model_file(const char *ready)
{
    char *dir = tu_tmpdir(), *p = malloc(1024);
    snprintf(p, 1024, "%s/m.json", dir);
    free(dir);
    FILE *f = fopen(p, "w");
    fprintf(f,
            "{\"model\":\"four\",\"grad_ready_order\":%s,"
            "\"compute\":{\"forward_s\":0.002,\"optimizer_s\":0.001,"
            "\"buffer_bytes\":524288},\"params\":[",
            ready);
    for (int i = 0; i < 4; i++)
        fprintf(f, "%s{\"shape\":[262144],\"backward_s\":0.001}", i ? "," : "");
    fputs("]}", f);
    fclose(f);
    return p;
}

static ddp_job_t *make_job(ddp_cfg_t *cfg, const char *ready, int world)
{
    char *path = model_file(ready), err[512];
    snprintf(cfg->model, sizeof(cfg->model), "%s", path);
    ddp_job_t *job = NULL;
    ck_assert_msg(ddp_job_create(cfg, NULL, world, &job, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    remove(path);
    free(path);
    return job;
}

static void walk(const ddp_job_t *job, int rank, rec_t *r, int *raised,
                 char *msg)
{
    memset(r, 0, sizeof(*r));
    ck_assert_int_eq(ddp_job_walk(job, rank, &fake, r, raised, msg), HERD_OK);
}

/* Index of the n-th event of `kind` with `label` (prefix match). */
static long find(const rec_t *r, char kind, const char *label, int nth)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->ev[i].kind == kind &&
            !strncmp(r->ev[i].label, label, strlen(label)) && nth-- == 0)
            return (long)i;
    return -1;
}

static int count(const rec_t *r, char kind, const char *label)
{
    int n = 0;
    while (find(r, kind, label, n) >= 0)
        n++;
    return n;
}

START_TEST(test_single_bucket_then_rebuild)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    cfg.steps = 3;
    cfg.bucket_cap_mb = 1;
    ddp_job_t *job = make_job(&cfg, "[3,2,1,0]", 2);
    ck_assert_uint_eq(job->initial.n, 1);
    ck_assert_uint_eq(job->rebuilt.n, 4); /* 1 MiB each: every one closes */
    rec_t *r = malloc(sizeof(rec_t));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    walk(job, 0, r, &raised, msg);
    ck_assert_int_eq(raised, 0);
    /* iteration 0: one bucket of all 4 MiB, launched after all backward */
    long a0 = find(r, 'a', "bucket 0", 0);
    ck_assert_int_ge(a0, 0);
    ck_assert_uint_eq(r->ev[a0].count, 4 * 262144);
    ck_assert_double_eq_tol(r->ev[a0].t, 0.002 + 0.004, 1e-12);
    /* rebuild broadcasts at iteration 1 only, before its forward */
    ck_assert_int_eq(count(r, 'b', "rebuild_buckets"), 2);
    long rb = find(r, 'b', "rebuild_buckets", 0);
    ck_assert_int_gt(rb, find(r, 'm', "step", 1));
    ck_assert_int_lt(rb, find(r, 'c', "forward", 1));
    /* iteration 1: four buckets, each launched as its gradient is ready */
    long b3 = find(r, 'a', "bucket 3", 0);
    ck_assert_int_gt(b3, find(r, 'm', "step", 1));
    ck_assert_int_eq(count(r, 'a', "bucket"), 1 + 4 + 4);
    ck_assert_uint_eq(r->ev[b3].count, 262144);
    /* finalize waits on every bucket before the optimizer */
    long fin = find(r, 'm', "finalize", 1);
    ck_assert_int_lt(find(r, 'w', "", 4), fin);
    ck_assert_int_lt(fin, find(r, 'c', "optimizer", 1));
    /* the constructor's state broadcast comes before the first step */
    ck_assert_int_eq(count(r, 'b', "init_sync"), 1);
    ck_assert_int_lt(find(r, 'b', "init_sync", 0), find(r, 'm', "step", 0));
    ck_assert_uint_eq(r->ev[find(r, 'b', "init_sync", 0)].count,
                      4 * 1048576 + 524288);
    /* buffers broadcast at every forward after a synchronising step */
    ck_assert_int_eq(count(r, 'b', "buffers"), 3);
    free(r);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_static_graph_rebuilds_later)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    cfg.steps = 4;
    cfg.bucket_cap_mb = 1;
    cfg.static_graph = 1; /* one bucket at construction, rebuilt later */
    ddp_job_t *job = make_job(&cfg, "[3,2,1,0]", 2);
    ck_assert_uint_eq(job->initial.n, 1);
    ck_assert_ptr_eq(ddp_job_layout(job, 1), &job->initial);
    ck_assert_ptr_eq(ddp_job_layout(job, 2), &job->rebuilt);
    rec_t *r = malloc(sizeof(rec_t));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    walk(job, 0, r, &raised, msg);
    /* the rebuild comes at the third forward, once */
    ck_assert_int_eq(count(r, 'b', "rebuild_buckets"), 2);
    ck_assert_int_gt(find(r, 'b', "rebuild_buckets", 0),
                     find(r, 'm', "step", 2));
    ck_assert_int_lt(find(r, 'b', "rebuild_buckets", 0),
                     find(r, 'c', "forward", 2));
    /* static_graph: the used-parameter map only in the first iteration */
    ck_assert_int_eq(count(r, 'a', "unused_map"), 1);
    free(r);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_launch_in_index_order)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    cfg.steps = 1;
    cfg.bucket_cap_mb = 1;
    cfg.find_unused = 1; /* keeps the [1 MiB, cap] construction buckets */
    ddp_job_t *job = make_job(&cfg, "[2,3,1,0]", 2);
    ck_assert_uint_eq(job->initial.n, 4); /* b0={3} b1={2} b2={1} b3={0} */
    ck_assert_uint_eq(job->initial.b[0].params[0], 3);
    rec_t *r = malloc(sizeof(rec_t));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    walk(job, 0, r, &raised, msg);
    /* bucket 1 fills first but waits for bucket 0 */
    long rb1 = find(r, 'm', "ready b1", 0), rb0 = find(r, 'm', "ready b0", 0);
    ck_assert_int_lt(rb1, rb0);
    long l0 = find(r, 'a', "bucket 0", 0), l1 = find(r, 'a', "bucket 1", 0);
    ck_assert_int_gt(l0, rb0);
    ck_assert_int_eq(l1, l0 + 2); /* right after it (and its launch mark) */
    ck_assert_int_eq(find(r, 'm', "launch bucket 1", 0), l1 - 1);
    ck_assert_double_eq_tol(r->ev[l1].t, 0.002 + 0.002, 1e-12);
    /* the used-parameter map follows the last bucket */
    long map = find(r, 'a', "unused_map", 0);
    ck_assert_int_gt(map, find(r, 'a', "bucket 3", 0));
    ck_assert_uint_eq(r->ev[map].count, 4);
    ck_assert_int_eq(r->ev[map].dt, HERD_INT32);
    /* never rebuilt with find_unused_parameters=True */
    ck_assert_int_eq(count(r, 'b', "rebuild_buckets"), 0);
    free(r);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_unused_parameter_raises)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    cfg.steps = 3;
    cfg.bucket_cap_mb = 1;
    cfg.unused_params.v[0] = 1, cfg.unused_params.n = 1;
    cfg.unused_ranks.v[0] = 1, cfg.unused_ranks.n = 1;
    ddp_job_t *job = make_job(&cfg, "[3,2,1,0]", 2);
    rec_t *r = malloc(sizeof(rec_t));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    /* rank 1: iteration 0's single bucket never fills; iteration 1 raises
     * at its forward */
    walk(job, 1, r, &raised, msg);
    ck_assert_int_eq(raised, 1);
    ck_assert_int_eq(count(r, 'a', "bucket"), 0);
    ck_assert_int_eq(count(r, 'c', "forward"), 1);
    ck_assert_ptr_nonnull(strstr(msg, "Expected to have finished reduction"));
    ck_assert_ptr_nonnull(strstr(msg, "rank 1: 1 "));
    /* rank 0 used everything: it launched the bucket and waits for it */
    walk(job, 0, r, &raised, msg);
    ck_assert_int_eq(raised, 0);
    ck_assert_int_ge(find(r, 'a', "bucket 0", 0), 0);
    /* with find_unused_parameters the unused bucket is ready at once */
    cfg.find_unused = 1;
    ddp_job_t *j2 = make_job(&cfg, "[3,2,1,0]", 2);
    walk(j2, 1, r, &raised, msg);
    ck_assert_int_eq(raised, 0);
    ck_assert_int_eq(count(r, 'a', "bucket"), 3 * 4);
    /* ...but launches behind buckets 0 and 1 (index order) */
    ck_assert_double_eq_tol(r->ev[find(r, 'm', "ready b2", 0)].t, 0.002, 1e-12);
    ck_assert_double_eq_tol(r->ev[find(r, 'a', "bucket 2", 0)].t, 0.004, 1e-12);
    free(r);
    ddp_job_destroy(j2);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_no_sync_and_hooks)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    cfg.steps = 4;
    cfg.grad_accum = 2;
    cfg.hook = DDP_HOOK_FP16;
    ddp_job_t *job = make_job(&cfg, "[3,2,1,0]", 2);
    rec_t *r = malloc(sizeof(rec_t));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    walk(job, 0, r, &raised, msg);
    /* iterations 0 and 2 run under no_sync: no reduction, no optimizer */
    ck_assert_int_eq(count(r, 'c', "optimizer"), 2);
    long first = find(r, 'a', "bucket 0", 0);
    ck_assert_int_gt(first, find(r, 'm', "step", 1));
    ck_assert_int_eq(r->ev[first].dt, HERD_FLOAT16);
    ck_assert_uint_eq(r->ev[first].count, 4 * 262144);
    ck_assert_uint_eq(ddp_job_wire_bytes(job, &job->initial.b[0]),
                      job->initial.b[0].bytes / 2);
    /* buffers: only at forwards after a synchronising step (0 and 2) */
    ck_assert_int_eq(count(r, 'b', "buffers"), 2);
    /* the rebuild comes after the first synchronising backward */
    ck_assert_int_gt(find(r, 'b', "rebuild", 0), find(r, 'm', "step", 2));
    free(r);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_uneven_data_and_rank0_extras)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    cfg.shards = 1;
    cfg.dataset_size = 10;
    cfg.batch_size = 3;
    cfg.eval_every = 1;
    cfg.eval_collective = 1;
    cfg.ckpt_every = 1;
    cfg.ckpt_s = 5;
    cfg.ckpt_barrier = DDP_CKPT_RANK0_BARRIER;
    ddp_job_t *job = make_job(&cfg, "[3,2,1,0]", 3);
    ck_assert_int_eq(job->rank_iters[0], 2);
    ck_assert_int_eq(job->rank_iters[1], 1);
    rec_t *r = malloc(sizeof(rec_t));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    walk(job, 0, r, &raised, msg);
    ck_assert_int_eq(count(r, 'a', "eval metric"), 2);
    ck_assert_int_eq(count(r, 'B', "checkpoint barrier"), 2);
    walk(job, 1, r, &raised, msg);
    ck_assert_int_eq(count(r, 'a', "eval metric"), 0);
    ck_assert_int_eq(count(r, 'B', "checkpoint barrier"), 0);
    ck_assert_int_eq(count(r, 'c', "checkpoint"), 0);
    free(r);
    ddp_job_destroy(job);
    /* DistributedSampler pads: everyone runs ceil(ceil(10/3)/3) = 2 */
    ddp_cfg_init(&cfg);
    cfg.dataset_size = 10;
    cfg.batch_size = 3;
    job = make_job(&cfg, "[3,2,1,0]", 3);
    ck_assert_int_eq(job->rank_iters[1], 2);
    ck_assert_int_eq(job->rank_iters[2], 2);
    ddp_job_destroy(job);
}
END_TEST

static herd_status_t load_text(const char *text, ddp_model_t *m, char *err)
{
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    herd_status_t st = ddp_model_load(path, m, err, 512);
    remove(path);
    remove(dir);
    free(dir);
    return st;
}

START_TEST(test_model_compute)
{
    ddp_model_t m;
    char err[512];
    /* a layer's time is shared by size; the rest of backward_s is spread
     * over the other parameters; FLOPs need a device throughput */
    ck_assert_msg(
        load_text("{\"compute\":{\"backward_s\":0.010,\"device_tflops\":1,"
                  "\"forward_flops\":2e9},\"layers\":[{\"params\":[0,1],"
                  "\"backward_s\":0.004}],\"params\":[{\"shape\":[300]},"
                  "{\"shape\":[100]},{\"shape\":[50]},{\"shape\":[150]}]}",
                  &m, err) == HERD_OK,
        "%s", err);
    ck_assert_double_eq_tol(m.params[0].bwd_s, 0.003, 1e-12);
    ck_assert_double_eq_tol(m.params[1].bwd_s, 0.001, 1e-12);
    ck_assert_double_eq_tol(m.params[2].bwd_s, 0.0015, 1e-12);
    ck_assert_double_eq_tol(m.params[3].bwd_s, 0.0045, 1e-12);
    ck_assert_double_eq_tol(m.fwd_s, 0.002, 1e-12);
    ddp_model_fini(&m);
    ck_assert_int_ne(load_text("{\"layers\":[{\"params\":[5],"
                               "\"backward_s\":1}],\"params\":[{\"shape\":"
                               "[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "layers[0].params[0]"));
    ck_assert_int_ne(load_text("{\"compute\":{\"forward_flops\":1},"
                               "\"params\":[{\"shape\":[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "device_tflops"));
}
END_TEST

/* Measured inputs, taken as measured: ready offsets give the order and the
 * gaps, the tail is backward after the last gradient, the copy rate's
 * names are in bytes. */
START_TEST(test_model_measured)
{
    ddp_model_t m;
    char err[512];
    ck_assert_msg(
        load_text("{\"compute\":{\"backward_tail_s\":0.002,"
                  "\"copy_GBps\":2},\"grad_ready_offsets_s\":[0.009,"
                  "0.004,null,0.001],\"params\":[{\"shape\":[3]},"
                  "{\"shape\":[3]},{\"shape\":[3]},{\"shape\":[3]}]}",
                  &m, err) == HERD_OK,
        "%s", err);
    ck_assert_uint_eq(m.nready, 4);
    size_t want[] = {3, 1, 0, 2}; /* by offset; the unused one last */
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(m.ready_order[i], want[i]);
    ck_assert_double_eq_tol(m.params[3].bwd_s, 0.001, 1e-12);
    ck_assert_double_eq_tol(m.params[1].bwd_s, 0.003, 1e-12);
    ck_assert_double_eq_tol(m.params[0].bwd_s, 0.005, 1e-12);
    ck_assert_double_eq_tol(m.params[2].bwd_s, 0, 1e-12);
    ck_assert_double_eq_tol(m.bwd_tail_s, 0.002, 1e-12);
    ck_assert_double_eq_tol(m.copy_bw, 2e9, 1);
    ck_assert_double_eq_tol(ddp_model_bwd_total(&m), 0.011, 1e-12);
    ddp_model_fini(&m);
    /* a grad_ready_order that disagrees, a time given twice, two rates */
    ck_assert_int_ne(load_text("{\"grad_ready_offsets_s\":[0.2,0.1],"
                               "\"grad_ready_order\":[0,1],\"params\":"
                               "[{\"shape\":[3]},{\"shape\":[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "grad_ready_offsets_s puts"));
    ck_assert_int_ne(load_text("{\"grad_ready_offsets_s\":[0.2,0.1],"
                               "\"params\":[{\"shape\":[3],"
                               "\"backward_s\":1},{\"shape\":[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "give one or the other"));
    ck_assert_int_ne(load_text("{\"grad_ready_offsets_s\":[0.2],"
                               "\"params\":[{\"shape\":[3]},"
                               "{\"shape\":[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "one per parameter"));
    ck_assert_int_ne(load_text("{\"compute\":{\"copy_GBps\":1,"
                               "\"copy_gbps\":1},\"params\":[{\"shape\":"
                               "[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "copy rate once"));
    /* the old name still loads, as gigabytes */
    ck_assert_int_eq(load_text("{\"compute\":{\"copy_gbps\":3},"
                               "\"params\":[{\"shape\":[3]}]}",
                               &m, err),
                     HERD_OK);
    ck_assert_double_eq_tol(m.copy_bw, 3e9, 1);
    ddp_model_fini(&m);
    /* the walk computes the tail after the last gradient: a step's
     * backward is 4 x 1 ms + 2.5 ms, the optimizer starts after it */
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    ddp_job_t *job = NULL;
    char *dir = tu_tmpdir();
    snprintf(cfg.model, sizeof(cfg.model), "%s/tail.json", dir);
    FILE *f = fopen(cfg.model, "w");
    fputs("{\"compute\":{\"forward_s\":0.002,\"optimizer_s\":0.001,"
          "\"backward_tail_s\":0.0025},\"params\":[{\"shape\":[262144],"
          "\"backward_s\":0.001},{\"shape\":[262144],\"backward_s\":0.001},"
          "{\"shape\":[262144],\"backward_s\":0.001},{\"shape\":[262144],"
          "\"backward_s\":0.001}]}", f);
    fclose(f);
    ck_assert_msg(ddp_job_create(&cfg, NULL, 2, &job, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    remove(cfg.model);
    remove(dir);
    free(dir);
    rec_t *r = malloc(sizeof(*r));
    int raised;
    char msg[DDP_ERR_MSG_MAX];
    walk(job, 0, r, &raised, msg);
    long opt = find(r, 'c', "optimizer", 0), fwd = find(r, 'c', "forward", 0);
    ck_assert_int_ge(opt, 0);
    ck_assert_int_ge(fwd, 0);
    /* forward 2 ms, then backward 4 ms + 2.5 ms before the optimizer */
    ck_assert_double_eq_tol(r->ev[opt].t - r->ev[fwd].t, 0.0085, 1e-9);
    free(r);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_cfg_parsing)
{
    ddp_cfg_t c;
    char err[256];
    ddp_cfg_init(&c);
    ck_assert_int_eq(ddp_cfg_set(&c, "ddp.bucket_cap_mb", "5", err, 256), 0);
    ck_assert_double_eq(c.bucket_cap_mb, 5);
    ck_assert_int_eq(ddp_cfg_set(&c, "unused_params", "[3, 7]", err, 256), 0);
    ck_assert_uint_eq(c.unused_params.n, 2);
    ck_assert_int_eq(c.unused_params.v[1], 7);
    ck_assert_int_eq(ddp_cfg_set(&c, "comm_hook", "bf16_compress", err, 256),
                     0);
    ck_assert_int_eq(c.hook, DDP_HOOK_BF16);
    ck_assert_int_eq(
        ddp_cfg_set(&c, "find_unused_parameters", "true", err, 256), 0);
    ck_assert_int_eq(c.find_unused, 1);
    ck_assert_int_ne(ddp_cfg_set(&c, "bucket_cap_mb", "-1", err, 256), 0);
    ck_assert_ptr_nonnull(strstr(err, "bucket_cap_mb"));
    ck_assert_int_ne(ddp_cfg_set(&c, "nope", "1", err, 256), 0);
    ck_assert_ptr_nonnull(strstr(err, "unknown DDP option"));
    ck_assert_int_ne(ddp_cfg_set(&c, "unused_params", "[1, x]", err, 256), 0);
    ck_assert_int_ne(ddp_cfg_set(&c, "steps", "2.5", err, 256), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_walk");
    TCase *tc = tcase_create("walk");
    tcase_add_test(tc, test_single_bucket_then_rebuild);
    tcase_add_test(tc, test_static_graph_rebuilds_later);
    tcase_add_test(tc, test_launch_in_index_order);
    tcase_add_test(tc, test_unused_parameter_raises);
    tcase_add_test(tc, test_no_sync_and_hooks);
    tcase_add_test(tc, test_uneven_data_and_rank0_extras);
    tcase_add_test(tc, test_model_compute);
    tcase_add_test(tc, test_model_measured);
    tcase_add_test(tc, test_cfg_parsing);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
