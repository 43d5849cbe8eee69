/* trace/kineto.c - read one PyTorch profiler trace (Chrome/Kineto JSON,
 * plain or gzip) into the events herd needs (see kineto.h). zlib's gzread
 * reads plain files as they are, so one path serves both. */
#include "trace/kineto.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/escape.h"

/* A trace larger than this is refused rather than read into memory. */
#define KINETO_MAX_BYTES ((size_t)4 << 30)

static herd_status_t kfail(char *err, size_t errlen, herd_status_t st,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static herd_status_t kfail(char *err, size_t errlen, herd_status_t st,
                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    core_escape_msg(err, errlen); /* names and keys from the file */
    return st;
}

static herd_status_t slurp(const char *path, char **buf, size_t *len, char *err,
                           size_t errlen)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return kfail(err, errlen, HERD_ERR_IO, "%s: cannot open", path);
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    herd_status_t st = HERD_OK;
    while (b) {
        if (cap - n < (1 << 16)) {
            if (cap >= KINETO_MAX_BYTES) {
                st = kfail(err, errlen, HERD_ERR_PARSE,
                           "%s: larger than %zu GiB uncompressed", path,
                           KINETO_MAX_BYTES >> 30);
                break;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb)
                break;
            b = nb;
            cap *= 2;
        }
        int got = gzread(f, b + n, (unsigned)(cap - n - 1));
        if (got < 0) {
            int zerr;
            const char *m = gzerror(f, &zerr);
            st = kfail(err, errlen, HERD_ERR_IO,
                       "%s: cannot read (%s): expected a JSON or gzipped "
                       "JSON PyTorch profiler trace",
                       path, m);
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    gzclose(f);
    if (st == HERD_OK && !b)
        st = HERD_ERR_NO_MEMORY;
    if (st != HERD_OK) {
        free(b);
        return st;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return HERD_OK;
}

/* Elements of the first tensor (or tensor list) of "Input Dims". Also
 * fills shape when it is a single tensor. */
static int dims_count(json_t *dims, kineto_ev_t *e)
{
    json_t *first = json_array_get(dims, 0);
    if (!json_is_array(first) || !json_array_size(first))
        return 0;
    json_t *inner = json_array_get(first, 0);
    uint64_t total = 0;
    if (json_is_array(inner)) { /* TensorList: [[d..], [d..]] */
        size_t i;
        json_t *t;
        json_array_foreach(first, i, t)
        {
            uint64_t p = 1;
            size_t j;
            json_t *d;
            json_array_foreach(t, j, d) p *= (uint64_t)json_integer_value(d);
            total += p;
        }
        e->count = total;
        return 1;
    }
    uint64_t p = 1;
    size_t j;
    json_t *d;
    e->ndim = 0;
    json_array_foreach(first, j, d)
    {
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return 0;
        p *= (uint64_t)json_integer_value(d);
        if (j < KINETO_MAX_DIMS)
            e->shape[e->ndim++] = json_integer_value(d);
    }
    e->count = p;
    return 1;
}

static const char *arg_str(json_t *args, const char *key)
{
    return json_string_value(json_object_get(args, key));
}

static int find_group(kineto_rank_t *r, const char *name)
{
    for (int g = 0; name && g < r->ngroups; g++)
        if (!strcmp(r->groups[g].name, name))
            return g;
    return -1;
}

static herd_status_t add_group(kineto_rank_t *r, const char *name,
                               json_t *ranks)
{
    if (!json_is_array(ranks) || find_group(r, name) >= 0)
        return HERD_OK;
    kineto_group_t *g =
        realloc(r->groups, (size_t)(r->ngroups + 1) * sizeof(*g));
    if (!g)
        return HERD_ERR_NO_MEMORY;
    r->groups = g;
    g = &g[r->ngroups];
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", name ? name : "");
    g->ranks = calloc(json_array_size(ranks) + 1, sizeof(int));
    if (!g->ranks)
        return HERD_ERR_NO_MEMORY;
    size_t i;
    json_t *v;
    json_array_foreach(ranks, i, v) g->ranks[g->n++] =
        (int)json_integer_value(v);
    r->ngroups++;
    return HERD_OK;
}

/* Group of a record_param_comms: by name, else by its rank list; -1 for
 * the world (every rank) or unknown. */
static int16_t comm_group(kineto_rank_t *r, json_t *args)
{
    const char *name = arg_str(args, "Process Group Name");
    json_t *ranks = json_object_get(args, "Process Group Ranks");
    if (json_is_string(ranks)) /* some versions write the list as text */
        ranks = json_loads(json_string_value(ranks), JSON_DECODE_ANY, NULL);
    else
        json_incref(ranks);
    int g = find_group(r, name);
    if (g < 0 && json_is_array(ranks) && add_group(r, name, ranks) == HERD_OK)
        g = find_group(r, name);
    json_decref(ranks);
    if (g >= 0 && r->world_size > 0 && r->groups[g].n == r->world_size)
        g = -1;
    return (int16_t)g;
}

static int64_t num_i(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return -1;
}

/* record_param_comms (CPU op or kernel args): collective, sizes, dtype. */
static int comm_args(kineto_rank_t *r, json_t *args, kineto_ev_t *e)
{
    herd_coll_t c;
    herd_dtype_t dt;
    const char *cname = arg_str(args, "Collective name");
    if (!cname || !kineto_coll(cname, &c))
        return 0;
    e->coll = (uint8_t)c;
    int64_t in = num_i(json_object_get(args, "In msg nelems"));
    int64_t outn = num_i(json_object_get(args, "Out msg nelems"));
    int64_t gsz = num_i(json_object_get(args, "Group size"));
    if (kineto_dtype(arg_str(args, "dtype"), &dt)) {
        e->dtype = (uint8_t)dt;
        e->has_dtype = 1;
    }
    /* herd's count is per rank as in its API: all_gather's send block,
     * reduce_scatter's receive block, all_to_all's block per peer */
    int64_t cnt = in;
    if (c == HERD_COLL_REDUCE_SCATTER)
        cnt = outn;
    else if (c == HERD_COLL_ALL_TO_ALL && gsz > 0 && in >= 0)
        cnt = in / gsz;
    if (cnt >= 0 && c != HERD_COLL_BARRIER) {
        e->count = (uint64_t)cnt;
        e->has_count = 1;
    }
    e->group = comm_group(r, args);
    return 1;
}

static herd_status_t dist_info(json_t *root, kineto_rank_t *r)
{
    json_t *di = json_object_get(root, "distributedInfo");
    if (!json_is_object(di))
        return HERD_OK;
    r->has_dist_info = 1;
    const char *be = arg_str(di, "backend");
    snprintf(r->backend, sizeof(r->backend), "%s", be ? be : "");
    if (json_is_integer(json_object_get(di, "rank")))
        r->rank = (int)json_integer_value(json_object_get(di, "rank"));
    if (json_is_integer(json_object_get(di, "world_size")))
        r->world_size =
            (int)json_integer_value(json_object_get(di, "world_size"));
    const char *nv = arg_str(di, "nccl_version");
    snprintf(r->nccl_version, sizeof(r->nccl_version), "%s", nv ? nv : "");
    json_t *pgs = json_object_get(di, "pg_config"), *pg;
    herd_status_t st = HERD_OK;
    if (json_is_array(pgs)) {
        size_t i;
        json_array_foreach(pgs, i, pg) if (st == HERD_OK) st =
            add_group(r, arg_str(pg, "pg_name"), json_object_get(pg, "ranks"));
    } else if (json_is_object(pgs)) { /* {"0": {...}} in some versions */
        const char *k;
        json_object_foreach(pgs, k, pg) if (st == HERD_OK) st =
            add_group(r, k, json_object_get(pg, "ranks"));
    }
    return st;
}

static int ev_cmp(const void *a, const void *b)
{
    const kineto_ev_t *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    /* an enclosing event first */
    return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns;
}

static int64_t tid_of(json_t *e)
{
    json_t *t = json_object_get(e, "tid");
    if (json_is_integer(t))
        return json_integer_value(t);
    if (json_is_string(t)) { /* "stream 7" / "7" */
        const char *s = json_string_value(t);
        while (*s && (*s < '0' || *s > '9'))
            s++;
        return strtoll(s, NULL, 10);
    }
    return 0;
}

/* A GPU event (kernel): its tid is a stream, which may share a number
 * with a CPU thread (PyTorch 1.13 numbers threads from 1). */
static int gpu_event(json_t *j)
{
    const char *cat = json_string_value(json_object_get(j, "cat"));
    return cat && (!strcmp(cat, "kernel") || !strcmp(cat, "Kernel"));
}

/* Classify one "X" event; returns 1 with *e filled when herd keeps it. */
static int classify(kineto_rank_t *r, json_t *j, kineto_ev_t *e)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    json_t *args = json_object_get(j, "args");
    herd_coll_t c;
    herd_dtype_t dt;
    memset(e, 0, sizeof(*e));
    e->group = -1;
    if (!name)
        return 0;
    json_t *corr = json_object_get(args, "correlation");
    e->corr = json_is_integer(corr) ? json_integer_value(corr) : 0;
    const char *cat = json_string_value(json_object_get(j, "cat"));
    if (cat && (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver") ||
                !strcmp(cat, "Runtime"))) {
        e->kind = KINETO_EV_RUNTIME;
        return e->corr > 0 && strstr(name, "LaunchKernel") != NULL;
    }
    if (gpu_event(j)) {
        r->gpu = 1;
        if (!kineto_is_nccl_kernel(name)) {
            e->kind = KINETO_EV_KERNEL;
            return 1;
        }
        e->kind = KINETO_EV_WORK;
        if (!comm_args(r, args, e) && !kineto_nccl_kernel_coll(name, &c))
            return 0;
        if (!json_object_get(args, "Collective name"))
            e->coll = (uint8_t)c;
        return 1;
    }
    if (!strncmp(name, "ProfilerStep#", 13)) {
        e->kind = KINETO_EV_STEP;
        e->number = strtol(name + 13, NULL, 10);
    } else if (!strcmp(name, "DistributedDataParallel.forward")) {
        e->kind = KINETO_EV_FORWARD;
    } else if (!strncmp(name, "Optimizer.step#", 15)) {
        e->kind = KINETO_EV_OPT;
    } else if (!strcmp(name, "autograd::engine::evaluate_function: "
                             "torch::autograd::AccumulateGrad")) {
        e->kind = KINETO_EV_GRAD;
    } else if (!strncmp(name, "autograd::engine::evaluate_function: ", 37)) {
        e->kind = KINETO_EV_BWD;
    } else if (!strcmp(name, "torch::autograd::AccumulateGrad")) {
        /* the child that carries the parameter's shape: kept as a GRAD
         * with dur 0 marker, merged into its parent below */
        e->kind = KINETO_EV_GRAD;
        e->number = -1;
        json_t *dims = json_object_get(args, "Input Dims");
        if (dims_count(dims, e))
            e->has_count = 1;
        json_t *types = json_object_get(args, "Input type");
        if (kineto_dtype(json_string_value(json_array_get(types, 0)), &dt)) {
            e->dtype = (uint8_t)dt;
            e->has_dtype = 1;
        }
    } else if (!strcmp(name,
                       "torch.distributed.ddp.reducer::copy_bucket_to_grad")) {
        e->kind = KINETO_EV_COPY_OUT;
    } else if (!strcmp(name, "record_param_comms")) {
        e->kind = KINETO_EV_LAUNCH;
        e->number = 1; /* from record_param_comms */
        if (!comm_args(r, args, e))
            return 0;
    } else if (!strncmp(name, "c10d::", 6) && kineto_coll(name, &c)) {
        e->kind = KINETO_EV_LAUNCH;
        e->coll = (uint8_t)c;
        if (dims_count(json_object_get(args, "Input Dims"), e))
            e->has_count = 1;
        e->ndim = 0;
    } else if (!strncmp(name, "gloo:", 5) && kineto_coll(name, &c)) {
        e->kind = KINETO_EV_WORK;
        e->coll = (uint8_t)c;
        if (dims_count(json_object_get(args, "Input Dims"), e))
            e->has_count = 1;
        e->ndim = 0;
        json_t *types = json_object_get(args, "Input type");
        if (kineto_dtype(json_string_value(json_array_get(types, 0)), &dt)) {
            e->dtype = (uint8_t)dt;
            e->has_dtype = 1;
        }
    } else {
        return 0;
    }
    return 1;
}

#define TID_TABLE 256

/* The thread that runs the training loop: the one with the most steps,
 * else with DDP's forwards, else with the most gradients and launches.
 * Counted per thread in one pass (traces have few threads). */
static int64_t main_thread(const kineto_rank_t *r)
{
    int64_t tid[TID_TABLE];
    size_t cnt[TID_TABLE][3], nt = 0;
    for (size_t i = 0; i < r->nev; i++) {
        const kineto_ev_t *e = &r->ev[i];
        int c = e->kind == KINETO_EV_STEP                                  ? 0
                : e->kind == KINETO_EV_FORWARD                             ? 1
                : e->kind == KINETO_EV_GRAD || e->kind == KINETO_EV_LAUNCH ? 2
                                                                           : -1;
        if (c < 0)
            continue;
        size_t k = 0;
        while (k < nt && tid[k] != e->tid)
            k++;
        if (k == nt) {
            if (nt == TID_TABLE)
                continue;
            tid[nt] = e->tid;
            memset(cnt[nt], 0, sizeof(cnt[nt]));
            nt++;
        }
        cnt[k][c]++;
    }
    for (int c = 0; c < 3; c++) {
        size_t best = 0, best_n = 0;
        for (size_t k = 0; k < nt; k++)
            if (cnt[k][c] > best_n)
                best_n = cnt[k][c], best = k;
        if (best_n)
            return tid[best];
    }
    return 0;
}

/* Put each AccumulateGrad child's shape on its evaluate_function parent
 * and drop the children; prefer record_param_comms over c10d:: launches
 * when a trace has both (NCCL jobs: the former is nested in the latter). */
static void merge(kineto_rank_t *r)
{
    int have_rpc = 0;
    for (size_t i = 0; i < r->nev; i++)
        have_rpc |= r->ev[i].kind == KINETO_EV_LAUNCH && r->ev[i].number == 1;
    size_t w = 0;
    kineto_ev_t *parent = NULL;
    for (size_t i = 0; i < r->nev; i++) {
        kineto_ev_t e = r->ev[i];
        if (e.kind == KINETO_EV_GRAD && e.number == -1) {
            if (parent && parent->tid == e.tid && e.ts_ns >= parent->ts_ns &&
                e.ts_ns <= parent->ts_ns + parent->dur_ns && e.has_count) {
                parent->has_count = 1;
                parent->count = e.count;
                parent->ndim = e.ndim;
                memcpy(parent->shape, e.shape, sizeof(e.shape));
                parent->has_dtype = e.has_dtype;
                parent->dtype = e.dtype;
            }
            continue;
        }
        if (e.kind == KINETO_EV_LAUNCH && have_rpc && e.number != 1)
            continue;
        r->ev[w] = e;
        if (e.kind == KINETO_EV_GRAD)
            parent = &r->ev[w];
        w++;
    }
    r->nev = w;
    /* workers: distinct threads (gloo) or streams (NCCL) doing the work */
    for (size_t i = 0; i < r->nev; i++)
        if (r->ev[i].kind == KINETO_EV_WORK &&
            !kineto_is_worker(r, r->ev[i].tid) && r->nworkers < 64)
            r->workers[r->nworkers++] = r->ev[i].tid;
}

int kineto_is_worker(const kineto_rank_t *r, int64_t tid)
{
    for (size_t k = 0; k < r->nworkers; k++)
        if (r->workers[k] == tid)
            return 1;
    return 0;
}

static const char *json_kind(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    default:
        return "a literal";
    }
}

typedef struct corr_ts {
    int64_t corr;
    uint64_t ts;
} corr_ts_t;

static int corr_cmp(const void *a, const void *b)
{
    const corr_ts_t *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int launch_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* pairs (launch, end) */
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* GPU jobs: give each compute kernel the CPU time of its launch (by
 * correlation id), build the launch-ordered index kineto_gpu_pos uses,
 * and drop the launch events. */
static herd_status_t link_launches(kineto_rank_t *r)
{
    size_t nrt = 0, nk = 0, w = 0;
    for (size_t i = 0; i < r->nev; i++)
        nrt += r->ev[i].kind == KINETO_EV_RUNTIME;
    corr_ts_t *rt = calloc(nrt + 1, sizeof(*rt));
    uint64_t *pairs = calloc(2 * (r->nev + 1), sizeof(uint64_t));
    if (!rt || !pairs) {
        free(rt);
        free(pairs);
        return HERD_ERR_NO_MEMORY;
    }
    nrt = 0;
    for (size_t i = 0; i < r->nev; i++)
        if (r->ev[i].kind == KINETO_EV_RUNTIME)
            rt[nrt++] = (corr_ts_t){r->ev[i].corr, r->ev[i].ts_ns};
    qsort(rt, nrt, sizeof(*rt), corr_cmp);
    for (size_t i = 0; i < r->nev; i++) {
        kineto_ev_t *e = &r->ev[i];
        if (e->kind == KINETO_EV_RUNTIME)
            continue;
        if (e->kind == KINETO_EV_KERNEL && e->corr > 0 && nrt) {
            corr_ts_t key = {e->corr, 0};
            corr_ts_t *hit = bsearch(&key, rt, nrt, sizeof(*rt), corr_cmp);
            if (hit) {
                e->cpu_ns = hit->ts;
                pairs[2 * nk] = hit->ts;
                pairs[2 * nk + 1] = e->ts_ns + e->dur_ns;
                nk++;
            }
        }
        r->ev[w++] = *e;
    }
    r->nev = w;
    free(rt);
    qsort(pairs, nk, 2 * sizeof(uint64_t), launch_cmp);
    r->gpu_launch = calloc(nk + 1, sizeof(uint64_t));
    r->gpu_done = calloc(nk + 1, sizeof(uint64_t));
    if (!r->gpu_launch || !r->gpu_done) {
        free(pairs);
        return HERD_ERR_NO_MEMORY;
    }
    uint64_t done = 0;
    for (size_t k = 0; k < nk; k++) {
        done = pairs[2 * k + 1] > done ? pairs[2 * k + 1] : done;
        r->gpu_launch[k] = pairs[2 * k];
        r->gpu_done[k] = done;
    }
    r->ngpu = nk;
    free(pairs);
    return HERD_OK;
}

uint64_t kineto_gpu_pos(const kineto_rank_t *r, uint64_t cpu_ns)
{
    size_t lo = 0, hi = r->ngpu;
    while (lo < hi) { /* first launch after cpu_ns */
        size_t mid = (lo + hi) / 2;
        if (r->gpu_launch[mid] <= cpu_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t done = lo ? r->gpu_done[lo - 1] : 0;
    return done > cpu_ns ? done : cpu_ns;
}

static herd_status_t read_events(kineto_rank_t *r, json_t *evs, char *err,
                                 size_t errlen)
{
    size_t n = json_array_size(evs), i;
    json_t *j;
    r->ev = calloc(n ? n : 1, sizeof(kineto_ev_t));
    if (!r->ev)
        return HERD_ERR_NO_MEMORY;
    size_t nx = 0;
    json_array_foreach(evs, i, j)
    {
        const char *ph = json_string_value(json_object_get(j, "ph"));
        if (!ph || strcmp(ph, "X"))
            continue;
        json_t *ts = json_object_get(j, "ts"), *dur = json_object_get(j, "dur");
        if (!json_is_number(ts) || !json_is_number(dur))
            return kfail(err, errlen, HERD_ERR_PARSE,
                         "%s: traceEvents[%zu]: an \"X\" event without "
                         "numeric \"ts\" and \"dur\" (microseconds)",
                         r->path, i);
        nx++;
        kineto_ev_t *e = &r->ev[r->nev];
        if (!classify(r, j, e))
            continue;
        double t = json_number_value(ts), d = json_number_value(dur);
        /* epoch microseconds fit (1e16 us is the year 2286) */
        if (!(t >= 0) || !(d >= 0) || t > 1e16 || d > 1e16)
            return kfail(err, errlen, HERD_ERR_PARSE,
                         "%s: traceEvents[%zu]: ts %g / dur %g out of range",
                         r->path, i, t, d);
        e->ts_ns = (uint64_t)llround(t * 1000.0);
        e->dur_ns = (uint64_t)llround(d * 1000.0);
        e->tid = tid_of(j);
        if (gpu_event(j)) { /* streams apart from CPU threads, per device */
            json_t *pid = json_object_get(j, "pid");
            int64_t dev = json_is_integer(pid) ? json_integer_value(pid) : 0;
            e->tid = -1 - (dev * 1000000 + e->tid);
        }
        r->nev++;
    }
    qsort(r->ev, r->nev, sizeof(kineto_ev_t), ev_cmp);
    herd_status_t st = link_launches(r);
    if (st != HERD_OK)
        return st;
    merge(r);
    size_t useful = 0;
    for (size_t k = 0; k < r->nev; k++)
        useful += r->ev[k].kind != KINETO_EV_KERNEL;
    if (!useful)
        return kfail(err, errlen, HERD_ERR_PARSE,
                     "%s: %zu duration events but none of a training job "
                     "(expected ProfilerStep#N, autograd AccumulateGrad, "
                     "c10d:: / gloo: / record_param_comms / ncclKernel "
                     "events)",
                     r->path, nx);
    r->main_tid = main_thread(r);
    return HERD_OK;
}

/* "..._rank3..." / "rank3." in a file name -> 3; -1 otherwise. */
static int rank_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *p = strstr(base, "rank");
    if (!p)
        return -1;
    p += 4;
    while (*p == '_' || *p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    return (int)strtol(p, NULL, 10);
}

herd_status_t kineto_read(const char *path, int rank_hint, kineto_rank_t *out,
                          char *err, size_t errlen)
{
    kineto_rank_t r = {.rank = -1};
    char *buf = NULL;
    size_t len = 0;
    json_t *root = NULL;
    json_error_t je;
    herd_status_t st = slurp(path, &buf, &len, err, errlen);
    if (st != HERD_OK)
        return st;
    r.path = strdup(path);
    if (!r.path) {
        st = HERD_ERR_NO_MEMORY;
        goto cleanup;
    }
    root = json_loadb(buf, len, JSON_DECODE_ANY, &je);
    if (!root) {
        st = kfail(err, errlen, HERD_ERR_PARSE,
                   "%s:%d:%d: not JSON (%s): expected a PyTorch profiler "
                   "trace (Chrome trace JSON, plain or gzipped)",
                   path, je.line, je.column, je.text);
        goto cleanup;
    }
    json_t *evs = root;
    if (json_is_object(root)) {
        json_t *od = json_object_get(root, "otherData");
        const char *fmt = json_string_value(json_object_get(od, "format"));
        if (fmt && !strcmp(fmt, "herd-timeline")) {
            st = kfail(err, errlen, HERD_ERR_PARSE,
                       "%s: a herd timeline, not a PyTorch profiler trace "
                       "(give it to herd compare / herd ddp report)",
                       path);
            goto cleanup;
        }
        evs = json_object_get(root, "traceEvents");
        if (!json_is_array(evs)) {
            char keys[256] = "";
            const char *k;
            json_t *v;
            size_t kl = 0;
            json_object_foreach(root, k, v) if (kl < sizeof(keys) - 40) kl +=
                (size_t)snprintf(keys + kl, sizeof(keys) - kl, "%s%s",
                                 kl ? ", " : "", k);
            st = kfail(err, errlen, HERD_ERR_PARSE,
                       "%s: expected a PyTorch profiler trace (an object "
                       "with a \"traceEvents\" list, or a list of events); "
                       "found an object with keys: %s",
                       path, kl ? keys : "(none)");
            goto cleanup;
        }
        if ((st = dist_info(root, &r)) != HERD_OK)
            goto cleanup;
    } else if (!json_is_array(root)) {
        st = kfail(err, errlen, HERD_ERR_PARSE,
                   "%s: expected a PyTorch profiler trace (an object with "
                   "\"traceEvents\", or a list of events); found %s",
                   path, json_kind(root));
        goto cleanup;
    }
    const char *host = json_string_value(json_object_get(root, "host_name"));
    snprintf(r.host, sizeof(r.host), "%s", host ? host : "");
    if ((st = read_events(&r, evs, err, errlen)) != HERD_OK)
        goto cleanup;
    if (r.rank < 0)
        r.rank = rank_from_name(path);
    if (r.rank < 0)
        r.rank = rank_hint;
    *out = r;
    memset(&r, 0, sizeof(r));
cleanup:
    json_decref(root);
    free(buf);
    kineto_rank_fini(&r);
    return st;
}

void kineto_rank_fini(kineto_rank_t *r)
{
    if (!r)
        return;
    for (int g = 0; g < r->ngroups; g++)
        free(r->groups[g].ranks);
    free(r->groups);
    free(r->ev);
    free(r->path);
    free(r->gpu_launch);
    free(r->gpu_done);
    memset(r, 0, sizeof(*r));
}
