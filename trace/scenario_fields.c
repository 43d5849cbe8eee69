/* trace/scenario_fields.c - what a scenario file may say: the key tables
 * of every section and the parsers of their values (integers, sizes,
 * bandwidths, times, enum names, lists of overrides and faults). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/sched.h"
#include "trace/scenario_int.h"
#include "trace/units.h"

/* The scalar text of n, or an error that says `form` was expected. */
static const char *scn_scalar(scn_ctx_t *c, struct fy_node *n, const char *form,
                              herd_status_t *st)
{
    const char *kind = "nothing";
    if (n && fy_node_is_scalar(n)) {
        const char *s = fy_node_get_scalar0(n);
        if (s && *s)
            return s;
        kind = "an empty value";
    } else if (n && fy_node_is_mapping(n)) {
        kind = "a mapping";
    } else if (n && fy_node_is_sequence(n)) {
        kind = "a sequence";
    }
    *st = scn_error(c, n, "expected %s, got %s", form, kind);
    return NULL;
}

#define SCN_DST(base, f, type) ((type *)((char *)(base) + (f)->off))

static herd_status_t scn_f_int(scn_ctx_t *c, struct fy_node *n, void *base,
                               const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, "an integer", &st);
    if (!s)
        return st;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return scn_error(c, n, "expected an integer, got '%s'", s);
    if (errno == ERANGE || v < f->lo || v > f->hi)
        return scn_error(c, n,
                         "%s is out of range; expected an integer in "
                         "[%.0f, %.0f]",
                         s, f->lo, f->hi);
    *SCN_DST(base, f, int) = (int)v;
    return HERD_OK;
}

static herd_status_t scn_f_long(scn_ctx_t *c, struct fy_node *n, void *base,
                                const scn_field_t *f)
{
    int v = 0;
    scn_field_t tmp = *f;
    tmp.off = 0;
    herd_status_t st = scn_f_int(c, n, &v, &tmp);
    if (!st)
        *SCN_DST(base, f, long) = v;
    return st;
}

static herd_status_t scn_f_u64(scn_ctx_t *c, struct fy_node *n, void *base,
                               const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, "a non-negative integer", &st);
    if (!s)
        return st;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || *s == '-')
        return scn_error(c, n, "expected a non-negative integer, got '%s'", s);
    if (errno == ERANGE)
        return scn_error(c, n,
                         "%s is out of range; expected an integer "
                         "below 2^64",
                         s);
    *SCN_DST(base, f, uint64_t) = v;
    return HERD_OK;
}

static herd_status_t scn_f_double(scn_ctx_t *c, struct fy_node *n, void *base,
                                  const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, "a number", &st);
    if (!s)
        return st;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v))
        return scn_error(c, n, "expected a number, got '%s'", s);
    if (v < f->lo || v > f->hi)
        return scn_error(c, n,
                         "%s is out of range; expected a number in "
                         "[%g, %g]",
                         s, f->lo, f->hi);
    *SCN_DST(base, f, double) = v;
    return HERD_OK;
}

/* Sizes, bandwidths and times share one shape: a unit parser and a form. */
static herd_status_t scn_unit_error(scn_ctx_t *c, struct fy_node *n,
                                    const char *s, herd_status_t st,
                                    const char *form)
{
    if (st == HERD_ERR_OVERFLOW)
        return scn_error(c, n, "'%s' is too large; expected %s", s, form);
    return scn_error(c, n, "bad value '%s'; expected %s", s, form);
}

static herd_status_t scn_f_bytes(scn_ctx_t *c, struct fy_node *n, void *base,
                                 const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, TRACE_FORM_BYTES, &st);
    if (!s)
        return st;
    uint64_t v;
    if ((st = trace_parse_bytes(s, &v)))
        return scn_unit_error(c, n, s, st, TRACE_FORM_BYTES);
    if (v < f->lo || (double)v > f->hi)
        return scn_error(c, n,
                         "%s is out of range; expected %s between "
                         "%.0fB and %.0fB",
                         s, TRACE_FORM_BYTES, f->lo, f->hi);
    *SCN_DST(base, f, uint64_t) = v;
    return HERD_OK;
}

static herd_status_t scn_f_double_unit(scn_ctx_t *c, struct fy_node *n,
                                       void *base, const scn_field_t *f,
                                       int is_time)
{
    const char *form = is_time ? TRACE_FORM_TIME : TRACE_FORM_BW;
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, form, &st);
    if (!s)
        return st;
    double v;
    st = is_time ? trace_parse_time(s, &v) : trace_parse_bandwidth(s, &v);
    if (st)
        return scn_unit_error(c, n, s, st, form);
    if (v < f->lo || v > f->hi) {
        char lo[32], hi[32];
        if (is_time) {
            trace_format_time(f->lo, lo, sizeof(lo));
            trace_format_time(f->hi, hi, sizeof(hi));
        } else {
            snprintf(lo, sizeof(lo), "%gB/s", f->lo);
            snprintf(hi, sizeof(hi), "%gB/s", f->hi);
        }
        return scn_error(c, n,
                         "%s is out of range; expected %s between %s "
                         "and %s",
                         s, is_time ? "a time" : "a bandwidth", lo, hi);
    }
    *SCN_DST(base, f, double) = v;
    return HERD_OK;
}

static herd_status_t scn_f_bw(scn_ctx_t *c, struct fy_node *n, void *base,
                              const scn_field_t *f)
{
    return scn_f_double_unit(c, n, base, f, 0);
}

static herd_status_t scn_f_time(scn_ctx_t *c, struct fy_node *n, void *base,
                                const scn_field_t *f)
{
    return scn_f_double_unit(c, n, base, f, 1);
}

static herd_status_t scn_f_bool(scn_ctx_t *c, struct fy_node *n, void *base,
                                const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, "true or false", &st);
    if (!s)
        return st;
    if (strcmp(s, "true") && strcmp(s, "false"))
        return scn_error(c, n, "expected true or false, got '%s'", s);
    *SCN_DST(base, f, int) = !strcmp(s, "true");
    return HERD_OK;
}

static herd_status_t scn_f_string(scn_ctx_t *c, struct fy_node *n, void *base,
                                  const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, "a string", &st);
    if (!s)
        return st;
    /* names end up in titles, folder names and terminal output */
    if (core_escape_needed(s))
        return scn_error(c, n,
                         "'%s' holds a control character; expected "
                         "printable text",
                         s);
    char *copy = strdup(s);
    if (!copy)
        return HERD_ERR_NO_MEMORY;
    char **dst = SCN_DST(base, f, char *);
    free(*dst);
    *dst = copy;
    return HERD_OK;
}

/* Enum names: parse with herd's own tables so files and flags agree. */
typedef herd_status_t (*scn_enum_parse_fn)(const char *, int *);

static herd_status_t scn_topo_parse(const char *s, int *out)
{
    static const char *names[] = {"nonblocking", "fattree", "rail"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return HERD_OK;
        }
    return HERD_ERR_PARSE;
}

static herd_status_t scn_jitter_parse(const char *s, int *out)
{
    static const char *names[] = {"none", "normal", "lognormal"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return HERD_OK;
        }
    return HERD_ERR_PARSE;
}

#define SCN_ENUM_WRAP(fn, type, parse)                                         \
    static herd_status_t fn(const char *s, int *out)                           \
    {                                                                          \
        type v;                                                                \
        herd_status_t st = parse(s, &v);                                       \
        if (!st)                                                               \
            *out = (int)v;                                                     \
        return st;                                                             \
    }
SCN_ENUM_WRAP(scn_algo_parse, herd_algo_t, herd_algo_parse)
SCN_ENUM_WRAP(scn_coll_parse, herd_coll_t, herd_coll_parse)
SCN_ENUM_WRAP(scn_dtype_parse, herd_dtype_t, herd_dtype_parse)
SCN_ENUM_WRAP(scn_op_parse, herd_op_t, herd_op_parse)

static herd_status_t scn_enum(scn_ctx_t *c, struct fy_node *n,
                              scn_enum_parse_fn parse, const char *form,
                              int *out)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, form, &st);
    if (!s)
        return st;
    if (parse(s, out))
        return scn_error(c, n, "unknown value '%s'; expected %s", s, form);
    return HERD_OK;
}

#define SCN_FORM_ALGO                                                          \
    "an algorithm: auto, ring, tree, rhd, direct, binomial, "                  \
    "hier, rd or nccl"
#define SCN_FORM_COLL                                                          \
    "a collective: all_reduce, broadcast, reduce, "                            \
    "all_gather, gather, scatter, reduce_scatter, "                            \
    "all_to_all or barrier"
#define SCN_FORM_DTYPE                                                         \
    "a dtype: int8, uint8, int32, int64, float16, "                            \
    "bfloat16, float32 or float64"
#define SCN_FORM_OP "a reduce op: sum, avg, prod, min, max, band, bor or bxor"

#define SCN_ENUM_FIELD(fn, type, parse, form)                                  \
    static herd_status_t fn(scn_ctx_t *c, struct fy_node *n, void *base,       \
                            const scn_field_t *f)                              \
    {                                                                          \
        int v = 0;                                                             \
        herd_status_t st = scn_enum(c, n, parse, form, &v);                    \
        if (!st)                                                               \
            *SCN_DST(base, f, type) = (type)v;                                 \
        return st;                                                             \
    }
SCN_ENUM_FIELD(scn_f_topo, herd_topo_t, scn_topo_parse,
               "a topology: nonblocking, fattree or rail")
SCN_ENUM_FIELD(scn_f_jitter, herd_jitter_t, scn_jitter_parse,
               "a jitter kind: none, normal or lognormal")
SCN_ENUM_FIELD(scn_f_coll, herd_coll_t, scn_coll_parse, SCN_FORM_COLL)
SCN_ENUM_FIELD(scn_f_dtype, herd_dtype_t, scn_dtype_parse, SCN_FORM_DTYPE)
SCN_ENUM_FIELD(scn_f_op, herd_op_t, scn_op_parse, SCN_FORM_OP)

/* collectives.algorithm: the algorithm of every collective it implements
 * (the others keep auto; send/recv have none). AUTO and the libraries'
 * own implementations (nccl, gloo) apply to all. */
static herd_status_t scn_f_algo_all(scn_ctx_t *c, struct fy_node *n, void *base,
                                    const scn_field_t *f)
{
    int v = 0, k = 0;
    herd_status_t st = scn_enum(c, n, scn_algo_parse, SCN_FORM_ALGO, &v);
    if (st)
        return st;
    herd_algo_t *algo = SCN_DST(base, f, herd_algo_t);
    for (int i = 0; i < HERD_COLL_COUNT; i++) {
        if (i == HERD_COLL_SEND || i == HERD_COLL_RECV)
            continue;
        if (v == HERD_ALGO_AUTO || core_sched_is_library((herd_algo_t)v) ||
            core_sched_supports((herd_algo_t)v, (herd_coll_t)i)) {
            algo[i] = (herd_algo_t)v;
            k++;
        }
    }
    if (k == 0)
        return scn_error(c, n,
                         "algorithm '%s' implements no collective in "
                         "this build",
                         herd_algo_name((herd_algo_t)v));
    return HERD_OK;
}

/* collectives.algorithms: {all_reduce: ring, broadcast: tree}. */
static herd_status_t scn_f_algo_map(scn_ctx_t *c, struct fy_node *n, void *base,
                                    const scn_field_t *f)
{
    if (!n || !fy_node_is_mapping(n))
        return scn_error(c, n,
                         "expected a mapping of collective to "
                         "algorithm, e.g. {all_reduce: ring}");
    herd_algo_t *algo = SCN_DST(base, f, herd_algo_t);
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        int coll = 0, a = 0;
        herd_status_t st = scn_enum(c, fy_node_pair_key(p), scn_coll_parse,
                                    SCN_FORM_COLL, &coll);
        if (!st)
            st = scn_enum(c, fy_node_pair_value(p), scn_algo_parse,
                          SCN_FORM_ALGO, &a);
        if (st)
            return st;
        algo[coll] = (herd_algo_t)a;
    }
    return HERD_OK;
}

/* workload.sweep.algorithms: one name or a list. */
static herd_status_t scn_f_sweep_algos(scn_ctx_t *c, struct fy_node *n,
                                       void *base, const scn_field_t *f)
{
    trace_sweep_t *sw = SCN_DST(base, f, trace_sweep_t);
    int a = 0, k = 0;
    herd_algo_t algos[HERD_ALGO_COUNT];
    if (n && fy_node_is_sequence(n)) {
        void *it = NULL;
        struct fy_node *item;
        while ((item = fy_node_sequence_iterate(n, &it))) {
            herd_status_t st =
                scn_enum(c, item, scn_algo_parse, SCN_FORM_ALGO, &a);
            if (st)
                return st;
            if (k == HERD_ALGO_COUNT)
                return scn_error(c, item, "too many algorithms (at most %d)",
                                 HERD_ALGO_COUNT);
            algos[k++] = (herd_algo_t)a;
        }
        if (k == 0)
            return scn_error(c, n, "expected at least one algorithm");
    } else {
        herd_status_t st = scn_enum(c, n, scn_algo_parse, SCN_FORM_ALGO, &a);
        if (st)
            return st;
        algos[k++] = (herd_algo_t)a;
    }
    memcpy(sw->algos, algos, sizeof(algos[0]) * (size_t)k);
    sw->nalgos = k;
    return HERD_OK;
}

/* A sequence of mappings into a growable array owned by the scenario. */
static herd_status_t scn_f_seq(scn_ctx_t *c, struct fy_node *n, void *base,
                               const scn_field_t *f)
{
    if (!n || !fy_node_is_sequence(n))
        return scn_error(c, n,
                         "expected a sequence of mappings, e.g. "
                         "[{rank: 3, ...}]");
    int count = fy_node_sequence_item_count(n);
    char *arr = count ? calloc((size_t)count, f->item_size) : NULL;
    if (count && !arr)
        return HERD_ERR_NO_MEMORY;
    void *it = NULL;
    struct fy_node *item;
    for (int i = 0; (item = fy_node_sequence_iterate(n, &it)); i++) {
        void *elem = arr + (size_t)i * f->item_size;
        if (f->item_init)
            f->item_init(elem);
        herd_status_t st = scn_map(c, item, elem, f->sub);
        if (st) {
            free(arr);
            return st;
        }
    }
    void **dst = SCN_DST(base, f, void *);
    free(*dst);
    *dst = arr;
    *(size_t *)((char *)base + f->count_off) = (size_t)count;
    return HERD_OK;
}

/* workload.trace: a path, relative to the scenario's directory. */
static herd_status_t scn_f_wl_trace(scn_ctx_t *c, struct fy_node *n, void *base,
                                    const scn_field_t *f)
{
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, "a trace file path", &st);
    if (!s)
        return st;
    size_t need = strlen(s) + (c->base_dir ? strlen(c->base_dir) : 0) + 2;
    char *path = malloc(need);
    if (!path)
        return HERD_ERR_NO_MEMORY;
    if (s[0] != '/' && c->base_dir && *c->base_dir)
        snprintf(path, need, "%s/%s", c->base_dir, s);
    else
        snprintf(path, need, "%s", s);
    st = scn_workload_kind(c, n, TRACE_WL_TRACE);
    if (st) {
        free(path);
        return st;
    }
    free(c->sc->trace_path);
    c->sc->trace_path = path;
    return HERD_OK;
}

static herd_status_t scn_f_wl_sweep(scn_ctx_t *c, struct fy_node *n, void *base,
                                    const scn_field_t *f)
{
    herd_status_t st = scn_workload_kind(c, n, TRACE_WL_SWEEP);
    return st ? st : scn_f_map(c, n, base, f);
}

static void scn_fault_init(void *item)
{
    herd_fault_t *ft = item;
    ft->at_time = -1;
    ft->at_step = -1;
}

#define SC(member) offsetof(trace_scenario_t, member)
#define LINK(member) offsetof(herd_link_t, member)
#define NUM(lo, hi) NULL, (lo), (hi), 0, 0, NULL
#define NOARG NUM(0, 0)
#define BIG 1e300

static const scn_field_t scn_link_fields[] = {
    {"bandwidth", scn_f_bw, LINK(bandwidth), NUM(1, BIG)},
    {"latency", scn_f_time, LINK(latency), NUM(0, 3600)},
    {"burst", scn_f_bytes, LINK(burst), NUM(0, 1e12)},
    {NULL, NULL, 0, NOARG}};

static const scn_field_t scn_cluster_fields[] = {
    {"nodes", scn_f_int, SC(sim.cluster.nodes), NUM(1, 65536)},
    {"gpus_per_node", scn_f_int, SC(sim.cluster.gpus_per_node), NUM(1, 1024)},
    {"world_size", scn_f_int, SC(sim.world_size), NUM(0, 1 << 20)},
    {"intra", scn_f_map, SC(sim.cluster.intra), scn_link_fields, 0, 0, 0, 0,
     NULL},
    {"inter", scn_f_map, SC(sim.cluster.inter), scn_link_fields, 0, 0, 0, 0,
     NULL},
    {"nics_per_node", scn_f_int, SC(sim.cluster.nics_per_node), NUM(0, 1024)},
    {"topology", scn_f_topo, SC(sim.cluster.topo), NOARG},
    {"oversubscription", scn_f_double, SC(sim.cluster.oversub), NUM(1, 1e6)},
    {"nodes_per_leaf", scn_f_int, SC(sim.cluster.nodes_per_leaf),
     NUM(1, 65536)},
    {"spine_latency", scn_f_time, SC(sim.cluster.spine_latency), NUM(0, 3600)},
    {"comm_cpu_slowdown", scn_f_double, SC(sim.cluster.comm_cpu_slowdown),
     NUM(0, 100)},
    {"compute_comm_slowdown", scn_f_double,
     SC(sim.cluster.compute_comm_slowdown), NUM(0, 100)},
    {NULL, NULL, 0, NOARG}};

static const scn_field_t scn_coll_fields[] = {
    {"algorithm", scn_f_algo_all, SC(algo), NOARG},
    {"algorithms", scn_f_algo_map, SC(algo), NOARG},
    {"channels", scn_f_int, SC(channels), NUM(1, 64)},
    {"chunk", scn_f_bytes, SC(chunk_bytes), NUM(1, 1e12)},
    {"reduce_bandwidth", scn_f_bw, SC(sim.cluster.reduce_bw), NUM(1, BIG)},
    {"nccl_model", scn_f_bool, SC(sim.nccl_model), NOARG},
    {NULL, NULL, 0, NOARG}};

#define SW(member) offsetof(trace_sweep_t, member)
static const scn_field_t scn_sweep_fields[] = {
    {"collective", scn_f_coll, SW(coll), NOARG},
    {"algorithms", scn_f_sweep_algos, 0, NOARG},
    {"min", scn_f_bytes, SW(min_bytes), NUM(0, 1e13)},
    {"max", scn_f_bytes, SW(max_bytes), NUM(0, 1e13)},
    {"factor", scn_f_double, SW(factor), NUM(1.0001, 1024)},
    {"dtype", scn_f_dtype, SW(dtype), NOARG},
    {"op", scn_f_op, SW(op), NOARG},
    {"iters", scn_f_int, SW(iters), NUM(1, 100000)},
    {"warmup", scn_f_int, SW(warmup), NUM(0, 100000)},
    {NULL, NULL, 0, NOARG}};

static const scn_field_t scn_workload_fields[] = {
    {"trace", scn_f_wl_trace, 0, NOARG},
    {"sweep", scn_f_wl_sweep, SC(sweep), scn_sweep_fields, 0, 0, 0, 0, NULL},
    {"ddp", scn_f_ddp, 0, NOARG},
    {"fsdp", scn_f_fsdp, 0, NOARG},
    {"parallel", scn_f_parallel, 0, NOARG},
    {"steps", scn_f_int, SC(steps), NUM(0, 1000000)},
    {NULL, NULL, 0, NOARG}};

#define RO(member) offsetof(herd_rank_override_t, member)
static const scn_field_t scn_rank_ovr_fields[] = {
    {"rank", scn_f_int, RO(rank), NUM(0, 1 << 20)},
    {"compute", scn_f_double, RO(compute_factor), NUM(0, 1e6)},
    {"nic", scn_f_double, RO(nic_factor), NUM(0, 1e6)},
    {"intra", scn_f_double, RO(intra_factor), NUM(0, 1e6)},
    {NULL, NULL, 0, NOARG}};

#define LO(member) offsetof(herd_link_override_t, member)
static const scn_field_t scn_link_ovr_fields[] = {
    {"a", scn_f_int, LO(a), NUM(0, 1 << 20)},
    {"b", scn_f_int, LO(b), NUM(0, 1 << 20)},
    {"bandwidth", scn_f_double, LO(bw_factor), NUM(0, 1e6)},
    {"latency", scn_f_time, LO(extra_latency), NUM(0, 3600)},
    {NULL, NULL, 0, NOARG}};

static const scn_field_t scn_jitter_fields[] = {
    {"kind", scn_f_jitter, SC(sim.jitter), NOARG},
    {"sigma", scn_f_double, SC(sim.jitter_sigma), NUM(0, 10)},
    {NULL, NULL, 0, NOARG}};

/* A time in seconds written bare (`load_s: 0.05`) or with a unit
 * (`50ms`). */
static herd_status_t scn_f_secs(scn_ctx_t *c, struct fy_node *n, void *base,
                                const scn_field_t *f)
{
    const char *s = n && fy_node_is_scalar(n) ? fy_node_get_scalar0(n) : NULL;
    char *end = NULL;
    if (s && *s)
        (void)strtod(s, &end);
    if (s && *s && end && !*end)
        return scn_f_double(c, n, base, f);
    return scn_f_time(c, n, base, f);
}

#define DS(member) offsetof(trace_data_straggler_t, member)
static const scn_field_t scn_data_slow_fields[] = {
    {"rank", scn_f_int, DS(rank), NUM(0, 1 << 20)},
    {"factor", scn_f_double, DS(factor), NUM(1e-6, 1e6)},
    {NULL, NULL, 0, NOARG}};

/* data: the DataLoader before each forward (docs/ddp.md, "Data loading");
 * one batch takes at most an hour on a worker; the loader keeps
 * prefetch_factor x num_workers times per rank (at most 2048). */
#define DT(member) offsetof(trace_scenario_t, data.member)
static const scn_field_t scn_data_fields[] = {
    {"load_s", scn_f_secs, DT(load_s), NUM(0, 3600)},
    {"num_workers", scn_f_int, DT(num_workers), NUM(0, 128)},
    {"prefetch_factor", scn_f_int, DT(prefetch_factor), NUM(1, 16)},
    {"jitter", scn_f_double, DT(jitter), NUM(0, 10)},
    {NULL, NULL, 0, NOARG}};

/* stragglers.grads items. `param` keeps its place, so the model's
 * "no such parameter" names the file, line and column. */
static herd_status_t scn_f_grad_param(scn_ctx_t *c, struct fy_node *n,
                                      void *base, const scn_field_t *f)
{
    herd_status_t st = scn_f_string(c, n, base, f);
    trace_grad_straggler_t *g = base;
    if (!st && !c->from_set)
        scn_node_mark(n, &g->line, &g->column, 0);
    return st;
}

static herd_status_t scn_f_grad_affects(scn_ctx_t *c, struct fy_node *n,
                                        void *base, const scn_field_t *f)
{
    static const char form[] = "backward (this gradient and the rest of "
                               "backward wait) or grad (only this "
                               "gradient's ready instant moves)";
    herd_status_t st = HERD_OK;
    const char *s = scn_scalar(c, n, form, &st);
    if (!s)
        return st;
    if (strcmp(s, "backward") && strcmp(s, "grad"))
        return scn_error(c, n, "unknown value '%s'; expected %s", s, form);
    *SCN_DST(base, f, int) = !strcmp(s, "grad");
    return HERD_OK;
}

#define GS(member) offsetof(trace_grad_straggler_t, member)
static const scn_field_t scn_grad_fields[] = {
    {"rank", scn_f_int, GS(rank), NUM(0, 1 << 20)},
    {"param", scn_f_grad_param, GS(param), NOARG},
    {"delay", scn_f_time, GS(delay_s), NUM(0, 3600)},
    {"affects", scn_f_grad_affects, GS(only_grad), NOARG},
    {NULL, NULL, 0, NOARG}};

/* More than this many delayed gradients is a mistake, not a scenario. */
#define SCN_MAX_GRADS 1024

void scn_grads_free(trace_grad_straggler_t *g, size_t n)
{
    for (size_t i = 0; g && i < n; i++)
        free(g[i].param);
    free(g);
}

/* stragglers.grads: [{rank: 1, param: conv1.weight, delay: 200ms}]; every
 * item needs rank, param and delay. Replaces the earlier list whole. */
static herd_status_t scn_f_grads(scn_ctx_t *c, struct fy_node *n, void *base,
                                 const scn_field_t *f)
{
    (void)base;
    (void)f;
    if (!n || !fy_node_is_sequence(n))
        return scn_error(c, n,
                         "expected a sequence of mappings, e.g. [{rank: 1, "
                         "param: conv1.weight, delay: 200ms}]");
    int count = fy_node_sequence_item_count(n);
    if (count > SCN_MAX_GRADS)
        return scn_error(c, n, "%d delayed gradients; the limit is %d", count,
                         SCN_MAX_GRADS);
    trace_grad_straggler_t *arr =
        count ? calloc((size_t)count, sizeof(*arr)) : NULL;
    if (count && !arr)
        return HERD_ERR_NO_MEMORY;
    void *it = NULL;
    struct fy_node *item;
    herd_status_t st = HERD_OK;
    for (int i = 0; !st && (item = fy_node_sequence_iterate(n, &it)); i++) {
        arr[i].rank = -1;
        arr[i].delay_s = -1;
        size_t old = strlen(c->path); /* "stragglers.grads[i].delay" */
        snprintf(c->path + old, sizeof(c->path) - old, "[%d]", i);
        st = scn_map(c, item, &arr[i], scn_grad_fields);
        if (!st)
            c->path[old] = '\0';
        if (!st && (arr[i].rank < 0 || !arr[i].param || arr[i].delay_s < 0))
            st = scn_error(c, item,
                           "expected rank, param and delay in item %d, e.g. "
                           "{rank: 1, param: conv1.weight, delay: 200ms}",
                           i);
    }
    if (st) {
        scn_grads_free(arr, (size_t)count);
        return st;
    }
    scn_grads_free(c->sc->grads, c->sc->ngrads);
    c->sc->grads = arr;
    c->sc->ngrads = (size_t)count;
    return HERD_OK;
}

static const scn_field_t scn_straggler_fields[] = {
    {"ranks", scn_f_seq, SC(rank_ovr), scn_rank_ovr_fields, 0, 0, SC(nrank_ovr),
     sizeof(herd_rank_override_t), NULL},
    {"links", scn_f_seq, SC(link_ovr), scn_link_ovr_fields, 0, 0, SC(nlink_ovr),
     sizeof(herd_link_override_t), NULL},
    {"jitter", scn_f_map, 0, scn_jitter_fields, 0, 0, 0, 0, NULL},
    {"grads", scn_f_grads, 0, NOARG},
    {"data", scn_f_seq, SC(data_slow), scn_data_slow_fields, 0, 0,
     SC(ndata_slow), sizeof(trace_data_straggler_t), NULL},
    {NULL, NULL, 0, NOARG}};

/* stragglers: a mapping of the kinds above, or (the short form) a
 * sequence of delayed gradients, as stragglers.grads. */
static herd_status_t scn_f_stragglers(scn_ctx_t *c, struct fy_node *n,
                                      void *base, const scn_field_t *f)
{
    if (n && fy_node_is_sequence(n))
        return scn_f_grads(c, n, base, f);
    return scn_f_map(c, n, base, f);
}

#define FT(member) offsetof(herd_fault_t, member)
static const scn_field_t scn_fault_fields[] = {
    {"rank", scn_f_int, FT(rank), NUM(0, 1 << 20)},
    {"at", scn_f_time, FT(at_time), NUM(0, 1e9)},
    {"at_step", scn_f_long, FT(at_step), NUM(0, 1e9)},
    {NULL, NULL, 0, NOARG}};

const scn_field_t scn_top_fields[] = {
    {"name", scn_f_string, SC(name), NOARG},
    {"cluster", scn_f_map, 0, scn_cluster_fields, 0, 0, 0, 0, NULL},
    {"collectives", scn_f_map, 0, scn_coll_fields, 0, 0, 0, 0, NULL},
    {"workload", scn_f_map, 0, scn_workload_fields, 0, 0, 0, 0, NULL},
    {"stragglers", scn_f_stragglers, 0, scn_straggler_fields, 0, 0, 0, 0, NULL},
    {"faults", scn_f_seq, SC(faults), scn_fault_fields, 0, 0, SC(nfaults),
     sizeof(herd_fault_t), scn_fault_init},
    {"timeout", scn_f_time, SC(timeout_s), NUM(0, 1e9)},
    {"data", scn_f_map, 0, scn_data_fields, 0, 0, 0, 0, NULL},
    {"seed", scn_f_u64, SC(sim.seed), NOARG},
    {NULL, NULL, 0, NOARG}};
