/* trace/trace_json.c - read traces from JSON (jansson). The JSON tree is
 * converted op by op into the compact in-memory trace and freed, so the
 * file is never held twice. Every field is checked; errors name the file
 * and the place ("ops[12].count"), and the expected form. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/escape.h"
#include "trace/trace.h"

#define TJ_MAX_COUNT (1ull << 50)
#define TJ_MAX_DUR_NS (1ull << 60)

typedef struct tj_ctx {
    const char *file;
    char *err;
    size_t errlen;
    trace_t *t;
    char where[96]; /* "ops[12]" or "rank_ops.3[4]" */
} tj_ctx_t;

static herd_status_t tj_fail(tj_ctx_t *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static herd_status_t tj_fail(tj_ctx_t *c, const char *key, const char *fmt, ...)
{
    /* the top level has no field path: say so rather than print ": :" */
    const char *where = c->where[0] || key ? c->where : "(top level)";
    int k = snprintf(c->err, c->errlen, "%s: %s%s%s: ", c->file, where,
                     c->where[0] && key ? "." : "", key ? key : "");
    if (k >= 0 && (size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    core_escape_msg(c->err, c->errlen); /* keys and values from the file */
    return HERD_ERR_PARSE;
}

/* A string that herd prints (names, labels, async ids): no control
 * characters, which would reach terminals, plots and TSV columns. */
static int tj_printable(json_t *v)
{
    return json_is_string(v) && !core_escape_needed(json_string_value(v)) &&
           strlen(json_string_value(v)) == json_string_length(v);
}

/* An integer field in [lo, hi]; absent: *out unchanged, *present 0. */
static herd_status_t tj_int(tj_ctx_t *c, json_t *o, const char *key,
                            long long lo, long long hi, long long *out,
                            int *present)
{
    json_t *v = json_object_get(o, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return HERD_OK;
    if (!json_is_integer(v))
        return tj_fail(c, key, "expected an integer in [%lld, %lld]", lo, hi);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return tj_fail(c, key, "%lld is out of range [%lld, %lld]", x, lo, hi);
    *out = x;
    return HERD_OK;
}

typedef herd_status_t (*tj_enum_fn)(const char *, int *);

static herd_status_t tj_name(tj_ctx_t *c, json_t *o, const char *key,
                             tj_enum_fn parse, const char *form, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return HERD_OK;
    if (!json_is_string(v) || parse(json_string_value(v), out))
        return tj_fail(c, key, "expected %s", form);
    return HERD_OK;
}

#define TJ_WRAP(fn, type, parse)                                               \
    static herd_status_t fn(const char *s, int *out)                           \
    {                                                                          \
        type v;                                                                \
        herd_status_t st = parse(s, &v);                                       \
        if (!st)                                                               \
            *out = (int)v;                                                     \
        return st;                                                             \
    }
TJ_WRAP(tj_dtype_parse, herd_dtype_t, herd_dtype_parse)
TJ_WRAP(tj_op_parse, herd_op_t, herd_op_parse)
TJ_WRAP(tj_algo_parse, herd_algo_t, herd_algo_parse)

#define TJ_FORM_DTYPE                                                          \
    "a dtype (int8, uint8, int32, int64, float16, "                            \
    "bfloat16, float32, float64)"

/* Op names: collectives plus the trace's own kinds. */
static herd_status_t tj_kind_parse(const char *s, int *out)
{
    static const char *own[] = {"compute", "", "wait", "wait_all", "mark"};
    for (int i = 0; i < 5; i++)
        if (own[i][0] && !strcmp(s, own[i])) {
            *out = 100 + i;
            return HERD_OK;
        }
    herd_coll_t coll;
    if (herd_coll_parse(s, &coll))
        return HERD_ERR_PARSE;
    *out = (int)coll;
    return HERD_OK;
}

#define TJ_FORM_OP                                                             \
    "an op: compute, wait, wait_all, mark, a collective "                      \
    "(all_reduce, broadcast, ..., barrier), send or recv"

static int tj_is_rooted(int coll)
{
    return coll == HERD_COLL_BROADCAST || coll == HERD_COLL_REDUCE ||
           coll == HERD_COLL_GATHER || coll == HERD_COLL_SCATTER;
}

static int tj_is_p2p(int coll)
{
    return coll == HERD_COLL_SEND || coll == HERD_COLL_RECV;
}

/* Keys each kind of op may have. */
static herd_status_t tj_check_keys(tj_ctx_t *c, json_t *o, int kind)
{
    static const char *common = " op label ranks per_rank ";
    static const char *coll = " count bytes dtype reduce root peer tag group "
                              "async algo counts splits timeout_s "
                              "wait_all_ranks ";
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        char pat[64];
        snprintf(pat, sizeof(pat), " %s ", key);
        int ok = strstr(common, pat) != NULL;
        if (kind == 100 + TRACE_OP_COMPUTE)
            ok |= !strcmp(key, "dur_ns") || !strcmp(key, "dur_us");
        else if (kind == 100 + TRACE_OP_WAIT)
            ok |= !strcmp(key, "async");
        else if (kind < 100)
            ok |= strstr(coll, pat) != NULL;
        if (!ok)
            return tj_fail(c, key, "unknown key for this op");
    }
    return HERD_OK;
}

static herd_status_t tj_dur(tj_ctx_t *c, json_t *o, uint64_t *out, int *present)
{
    long long ns = 0;
    int have_ns = 0;
    herd_status_t st =
        tj_int(c, o, "dur_ns", 0, (long long)TJ_MAX_DUR_NS, &ns, &have_ns);
    if (st)
        return st;
    json_t *us = json_object_get(o, "dur_us");
    if (us && have_ns)
        return tj_fail(c, "dur_us", "give dur_ns or dur_us, not both");
    if (us) {
        double d = json_number_value(us);
        if (!json_is_number(us) || !(d >= 0) || d * 1e3 > TJ_MAX_DUR_NS)
            return tj_fail(c, "dur_us",
                           "expected a non-negative number of "
                           "microseconds");
        ns = llround(d * 1e3);
    }
    *present = have_ns || us;
    if (*present)
        *out = (uint64_t)ns;
    return HERD_OK;
}

/* count or bytes (bytes must hold whole elements of the dtype). */
static herd_status_t tj_count(tj_ctx_t *c, json_t *o, int dtype, uint64_t *out,
                              int *present)
{
    long long n = 0, b = 0;
    int hc = 0, hb = 0;
    herd_status_t st;
    if ((st = tj_int(c, o, "count", 0, (long long)TJ_MAX_COUNT, &n, &hc)) ||
        (st = tj_int(c, o, "bytes", 0, (long long)TJ_MAX_COUNT, &b, &hb)))
        return st;
    if (hc && hb)
        return tj_fail(c, "bytes", "give count or bytes, not both");
    size_t es = herd_dtype_size((herd_dtype_t)dtype);
    if (hb && (uint64_t)b % es)
        return tj_fail(c, "bytes",
                       "%lld is not a multiple of the %s size "
                       "(%zu)",
                       b, herd_dtype_name((herd_dtype_t)dtype), es);
    *present = hc || hb;
    if (*present)
        *out = hc ? (uint64_t)n : (uint64_t)b / es;
    return HERD_OK;
}

/* peer: a rank, or "+k" / "-k" relative to the rank. */
static herd_status_t tj_peer(tj_ctx_t *c, json_t *o, const char *key,
                             int32_t *peer, uint8_t *rel, int *present)
{
    json_t *v = json_object_get(o, key);
    *present = v != NULL;
    if (!v)
        return HERD_OK;
    int world = c->t->world_size;
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) < world) {
        *peer = (int32_t)json_integer_value(v);
        *rel = 0;
        return HERD_OK;
    }
    const char *s = json_string_value(v);
    char *end;
    long k = s && (s[0] == '+' || s[0] == '-') ? strtol(s, &end, 10) : 0;
    if (!s || (s[0] != '+' && s[0] != '-') || *end || end == s + 1 ||
        labs(k) >= world || !strcmp(key, "root"))
        return tj_fail(c, key, "expected a rank in [0, %d)%s", world,
                       strcmp(key, "root") ? " or a relative peer such as "
                                             "\"+1\" or \"-1\""
                                           : "");
    *peer = (int32_t)k;
    *rel = 1;
    return HERD_OK;
}

static int tj_is_v(int coll)
{
    return coll == HERD_COLL_ALL_GATHER_V ||
           coll == HERD_COLL_REDUCE_SCATTER_V || coll == HERD_COLL_ALL_TO_ALL_V;
}

/* One array of n counts into v (a row of splits when row >= 0). */
static herd_status_t tj_counts_row(tj_ctx_t *c, json_t *a, const char *key,
                                   long row, uint64_t n, uint64_t *v)
{
    char what[48] = "";
    if (row >= 0)
        snprintf(what, sizeof(what), "row %ld: ", row);
    if (!json_is_array(a) || json_array_size(a) != n)
        return tj_fail(c, key,
                       "%sexpected an array of %llu counts (one per "
                       "rank of the op's group)",
                       what, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            (unsigned long long)json_integer_value(x) > TJ_MAX_COUNT)
            return tj_fail(c, key,
                           "%sitem %llu: expected a count in [0, "
                           "2^50]",
                           what, (unsigned long long)i);
        v[i] = (uint64_t)json_integer_value(x);
    }
    return HERD_OK;
}

/* all_gather_v / reduce_scatter_v: "counts": [one per rank of the
 * group]; all_to_all_v: "splits": [[what rank i sends rank j]]. */
static herd_status_t tj_vcounts(tj_ctx_t *c, json_t *o, trace_op_t *op)
{
    int a2a = op->coll == HERD_COLL_ALL_TO_ALL_V;
    const char *key = a2a ? "splits" : "counts";
    const char *other = a2a ? "counts" : "splits";
    if (json_object_get(o, other))
        return tj_fail(c, other, "%s takes \"%s\"",
                       herd_coll_name((herd_coll_t)op->coll), key);
    if (json_object_get(o, "count") || json_object_get(o, "bytes"))
        return tj_fail(c, json_object_get(o, "count") ? "count" : "bytes",
                       "%s takes \"%s\" (per rank), not a count",
                       herd_coll_name((herd_coll_t)op->coll), key);
    json_t *a = json_object_get(o, key);
    if (!a)
        return tj_fail(c, key, "missing; %s needs %s",
                       herd_coll_name((herd_coll_t)op->coll),
                       a2a ? "a matrix of split sizes" : "a count per rank");
    uint64_t p = (uint64_t)trace_op_group_size(c->t, op), n = a2a ? p * p : p;
    uint64_t *v = malloc((size_t)(n ? n : 1) * sizeof(*v));
    if (!v)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    if (!a2a) {
        st = tj_counts_row(c, a, key, -1, p, v);
    } else if (!json_is_array(a) || json_array_size(a) != p) {
        st = tj_fail(c, key,
                     "expected %llu rows (one per rank of the op's "
                     "group)",
                     (unsigned long long)p);
    } else {
        for (uint64_t i = 0; i < p && !st; i++)
            st = tj_counts_row(c, json_array_get(a, i), key, (long)i, p,
                               v + i * p);
    }
    if (!st)
        st = trace_add_counts(c->t, v, (uint32_t)n, &op->vcounts);
    free(v);
    return st;
}

/* monitored_barrier: "timeout_s" (0 or absent: the comm's) and
 * "wait_all_ranks". */
static herd_status_t tj_monitored(tj_ctx_t *c, json_t *o, trace_op_t *op)
{
    json_t *t = json_object_get(o, "timeout_s");
    json_t *w = json_object_get(o, "wait_all_ranks");
    if (t && (!json_is_number(t) || !(json_number_value(t) >= 0) ||
              json_number_value(t) * 1e9 > TJ_MAX_DUR_NS))
        return tj_fail(c, "timeout_s",
                       "expected a non-negative number of "
                       "seconds");
    if (w && !json_is_boolean(w))
        return tj_fail(c, "wait_all_ranks", "expected true or false");
    op->dur_ns = t ? (uint64_t)llround(json_number_value(t) * 1e9) : 0;
    op->tag = json_is_true(w);
    return HERD_OK;
}

static herd_status_t tj_coll(tj_ctx_t *c, json_t *o, trace_op_t *op)
{
    int dtype = op->dtype, redop = op->redop, algo = op->algo, have;
    long long tag = 0, group = 0;
    herd_status_t st;
    if ((st = tj_name(c, o, "dtype", tj_dtype_parse, TJ_FORM_DTYPE, &dtype)) ||
        (st = tj_name(c, o, "reduce", tj_op_parse,
                      "a reduce op (sum, avg, prod, min, max, band, bor, "
                      "bxor)",
                      &redop)) ||
        (st = tj_name(c, o, "algo", tj_algo_parse,
                      "an algorithm (auto, ring, tree, rhd, direct, "
                      "binomial, hier, rd, nccl)",
                      &algo)) ||
        (st = tj_int(c, o, "tag", 0, INT32_MAX, &tag, NULL)) ||
        (st = tj_int(c, o, "group", 0, c->t->ngroups, &group, NULL)))
        return st;
    op->dtype = (uint8_t)dtype;
    op->redop = (uint8_t)redop;
    op->algo = (uint8_t)algo;
    op->tag = (int32_t)tag;
    op->group = (uint16_t)group;
    int mb = op->coll == HERD_COLL_MONITORED_BARRIER;
    if (!tj_is_v(op->coll) &&
        (json_object_get(o, "counts") || json_object_get(o, "splits")))
        return tj_fail(c, json_object_get(o, "counts") ? "counts" : "splits",
                       "only the *_v collectives take per-rank counts");
    if (!mb && (json_object_get(o, "timeout_s") ||
                json_object_get(o, "wait_all_ranks")))
        return tj_fail(
            c, json_object_get(o, "timeout_s") ? "timeout_s" : "wait_all_ranks",
            "only monitored_barrier takes it");
    if (mb && json_object_get(o, "tag"))
        return tj_fail(c, "tag", "monitored_barrier takes no tag");
    if (tj_is_v(op->coll) && (st = tj_vcounts(c, o, op)))
        return st;
    if (mb && (st = tj_monitored(c, o, op)))
        return st;
    if ((st = tj_count(c, o, dtype, &op->count, &have)))
        return st;
    if (!have && op->coll != HERD_COLL_BARRIER && !mb && !tj_is_v(op->coll))
        return tj_fail(c, "count",
                       "missing; expected the element count "
                       "(or bytes)");
    if (herd_dtype_is_integer((herd_dtype_t)dtype) == 0 && redop >= HERD_BAND)
        return tj_fail(c, "reduce", "bitwise ops need an integer dtype");
    int need_peer = tj_is_rooted(op->coll) || tj_is_p2p(op->coll);
    const char *pk = tj_is_p2p(op->coll) ? "peer" : "root";
    if ((st = tj_peer(c, o, pk, &op->peer, &op->peer_rel, &have)))
        return st;
    if (need_peer && !have)
        return tj_fail(c, pk, "missing; %s needs a %s",
                       herd_coll_name((herd_coll_t)op->coll), pk);
    if (!need_peer &&
        (json_object_get(o, "root") || json_object_get(o, "peer")))
        return tj_fail(c, json_object_get(o, "root") ? "root" : "peer",
                       "%s takes no root or peer",
                       herd_coll_name((herd_coll_t)op->coll));
    json_t *a = json_object_get(o, "async");
    if (a && (!tj_printable(a) || !*json_string_value(a)))
        return tj_fail(c, "async", "expected a non-empty id string");
    if (a)
        return trace_async_slot(c->t, json_string_value(a), &op->async);
    return HERD_OK;
}

/* "ranks": [0, 2, 4]: only these ranks do the op. */
static herd_status_t tj_ranks(tj_ctx_t *c, json_t *o, trace_op_t *op)
{
    json_t *v = json_object_get(o, "ranks");
    if (!v)
        return HERD_OK;
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n == 0)
        return tj_fail(c, "ranks", "expected a non-empty array of ranks");
    int32_t *r = malloc(n * sizeof(*r));
    if (!r)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    for (size_t i = 0; i < n && !st; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) >= c->t->world_size)
            st = tj_fail(c, "ranks", "item %zu: expected a rank in [0, %d)", i,
                         c->t->world_size);
        else
            r[i] = (int32_t)json_integer_value(x);
    }
    if (!st)
        st = trace_add_rankset(c->t, r, (uint32_t)n, &op->ranks);
    free(r);
    return st;
}

static herd_status_t tj_label(tj_ctx_t *c, json_t *o, uint32_t *out)
{
    json_t *v = json_object_get(o, "label");
    if (!v)
        return HERD_OK;
    if (!tj_printable(v))
        return tj_fail(c, "label", "expected a string of printable text");
    return trace_intern(c->t, json_string_value(v), out);
}

/* One entry of per_rank: {"dur_ns": ..., "count": ..., "skip": true}. */
static herd_status_t tj_variant(tj_ctx_t *c, json_t *o, const trace_op_t *op,
                                trace_variant_t *v)
{
    static const char *keys = " dur_ns dur_us count bytes peer root label op "
                              "dtype skip ";
    const char *key;
    json_t *x;
    json_object_foreach(o, key, x)
    {
        char pat[64];
        snprintf(pat, sizeof(pat), " %s ", key);
        if (!strstr(keys, pat))
            return tj_fail(c, key,
                           "unknown key in per_rank (expected one "
                           "of:%s)",
                           keys);
    }
    int have, dtype = op->dtype, coll = op->coll;
    uint8_t rel = 0;
    herd_status_t st;
    if ((st = tj_dur(c, o, &v->dur_ns, &have)))
        return st;
    v->fields |= have ? TRACE_VAR_DUR : 0;
    if ((st = tj_name(c, o, "dtype", tj_dtype_parse, TJ_FORM_DTYPE, &dtype)))
        return st;
    v->dtype = (uint8_t)dtype;
    v->fields |= json_object_get(o, "dtype") ? TRACE_VAR_DTYPE : 0;
    if ((st = tj_count(c, o, dtype, &v->count, &have)))
        return st;
    v->fields |= have ? TRACE_VAR_COUNT : 0;
    const char *pk = json_object_get(o, "root") ? "root" : "peer";
    if ((st = tj_peer(c, o, pk, &v->peer, &rel, &have)))
        return st;
    if (rel)
        return tj_fail(c, pk, "per_rank peers are absolute ranks");
    v->fields |= have ? TRACE_VAR_PEER : 0;
    if ((st = tj_name(c, o, "op", tj_kind_parse, TJ_FORM_OP, &coll)))
        return st;
    if (json_object_get(o, "op") && (coll >= 100 || op->kind != TRACE_OP_COLL))
        return tj_fail(c, "op",
                       "a variant may only change one collective "
                       "into another");
    v->coll = (uint8_t)coll;
    v->fields |= json_object_get(o, "op") ? TRACE_VAR_COLL : 0;
    int special = tj_is_v(op->coll) || tj_is_v(coll) ||
                  op->coll == HERD_COLL_MONITORED_BARRIER ||
                  coll == HERD_COLL_MONITORED_BARRIER;
    if (special && (v->fields & (TRACE_VAR_COUNT | TRACE_VAR_COLL)))
        return tj_fail(c, v->fields & TRACE_VAR_COUNT ? "count" : "op",
                       "a per_rank change cannot touch the counts of the "
                       "*_v collectives or monitored_barrier (their counts "
                       "are per rank already)");
    v->label = TRACE_NONE;
    if ((st = tj_label(c, o, &v->label)))
        return st;
    v->fields |= v->label != TRACE_NONE ? TRACE_VAR_LABEL : 0;
    json_t *skip = json_object_get(o, "skip");
    if (skip && !json_is_boolean(skip))
        return tj_fail(c, "skip", "expected true or false");
    v->fields |= json_is_true(skip) ? TRACE_VAR_SKIP : 0;
    return HERD_OK;
}

static herd_status_t tj_per_rank(tj_ctx_t *c, json_t *o, uint32_t index)
{
    json_t *pr = json_object_get(o, "per_rank");
    if (!pr)
        return HERD_OK;
    if (!json_is_object(pr))
        return tj_fail(c, "per_rank",
                       "expected an object {\"<rank>\": "
                       "{changes}}");
    const char *key;
    json_t *x;
    size_t base = strlen(c->where);
    json_object_foreach(pr, key, x)
    {
        char *end;
        long r = strtol(key, &end, 10);
        if (!*key || *end || r < 0 || r >= c->t->world_size)
            return tj_fail(c, "per_rank",
                           "key '%s': expected a rank in "
                           "[0, %d)",
                           key, c->t->world_size);
        if (!json_is_object(x))
            return tj_fail(c, "per_rank", "rank %ld: expected an object", r);
        snprintf(c->where + base, sizeof(c->where) - base, ".per_rank.%ld", r);
        trace_variant_t v = {.rank = (int32_t)r};
        herd_status_t st = tj_variant(c, x, &c->t->ops[index], &v);
        if (!st)
            st = trace_add_variant(c->t, index, &v);
        if (st)
            return st;
        c->where[base] = '\0';
    }
    return HERD_OK;
}

static herd_status_t tj_op_body(tj_ctx_t *c, json_t *o, int kind,
                                trace_op_t *op)
{
    int have = 0;
    herd_status_t st;
    if (kind < 100) {
        *op = trace_op_default(TRACE_OP_COLL);
        op->coll = (uint8_t)kind;
        st = tj_coll(c, o, op);
    } else {
        *op = trace_op_default((trace_op_kind_t)(kind - 100));
        st = HERD_OK;
    }
    if (st)
        return st;
    if (op->kind == TRACE_OP_COMPUTE) {
        if ((st = tj_dur(c, o, &op->dur_ns, &have)))
            return st;
        if (!have)
            return tj_fail(c, "dur_ns",
                           "missing; compute needs dur_ns or "
                           "dur_us");
    }
    if (op->kind == TRACE_OP_WAIT) {
        json_t *a = json_object_get(o, "async");
        if (!tj_printable(a) || !*json_string_value(a))
            return tj_fail(c, "async",
                           "wait needs the async id it waits "
                           "for");
        if ((st = trace_async_slot(c->t, json_string_value(a), &op->async)))
            return st;
    }
    if ((st = tj_label(c, o, &op->label)))
        return st;
    return tj_ranks(c, o, op);
}

static herd_status_t tj_op(tj_ctx_t *c, json_t *o)
{
    if (!json_is_object(o))
        return tj_fail(c, NULL, "expected an op object {\"op\": ...}");
    int kind = 0;
    json_t *name = json_object_get(o, "op");
    if (!name)
        return tj_fail(c, "op", "missing; expected %s", TJ_FORM_OP);
    herd_status_t st = tj_name(c, o, "op", tj_kind_parse, TJ_FORM_OP, &kind);
    if (!st)
        st = tj_check_keys(c, o, kind);
    trace_op_t op;
    if (!st)
        st = tj_op_body(c, o, kind, &op);
    if (!st)
        st = trace_add_op(c->t, &op);
    if (!st)
        st = tj_per_rank(c, o, c->t->nops - 1);
    return st;
}

static herd_status_t tj_ops(tj_ctx_t *c, json_t *arr, const char *name)
{
    if (!json_is_array(arr))
        return tj_fail(c, NULL, "%s: expected an array of ops", name);
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        snprintf(c->where, sizeof(c->where), "%s[%zu]", name, i);
        herd_status_t st = tj_op(c, o);
        if (st)
            return st;
    }
    c->where[0] = '\0';
    return HERD_OK;
}

static herd_status_t tj_rank_ops(tj_ctx_t *c, json_t *ro)
{
    if (!ro)
        return HERD_OK;
    if (!json_is_object(ro))
        return tj_fail(c, "rank_ops",
                       "expected an object {\"<rank>\": "
                       "[ops]}");
    const char *key;
    json_t *arr;
    json_object_foreach(ro, key, arr)
    {
        char *end, name[48];
        long r = strtol(key, &end, 10);
        if (!*key || *end || r < 0 || r >= c->t->world_size)
            return tj_fail(c, "rank_ops",
                           "key '%s': expected a rank in "
                           "[0, %d)",
                           key, c->t->world_size);
        for (uint32_t i = 0; i < c->t->nrank_lists; i++)
            if (c->t->rank_lists[i].rank == r)
                return tj_fail(c, "rank_ops", "rank %ld listed twice", r);
        herd_status_t st = trace_begin_rank_list(c->t, (int)r);
        snprintf(name, sizeof(name), "rank_ops.%ld", r);
        if (!st)
            st = tj_ops(c, arr, name);
        if (st)
            return st;
    }
    return HERD_OK;
}

static herd_status_t tj_groups(tj_ctx_t *c, json_t *g)
{
    if (!g)
        return HERD_OK;
    if (!json_is_array(g) || json_array_size(g) > 65535)
        return tj_fail(c, "groups", "expected an array of rank arrays");
    size_t i;
    json_t *ranks;
    json_array_foreach(g, i, ranks)
    {
        size_t n = json_array_size(ranks);
        if (!json_is_array(ranks) || n == 0 || n > (size_t)c->t->world_size)
            return tj_fail(c, "groups",
                           "[%zu]: expected a non-empty array "
                           "of distinct ranks",
                           i);
        int32_t *r = malloc(n * sizeof(*r));
        if (!r)
            return HERD_ERR_NO_MEMORY;
        herd_status_t st = HERD_OK;
        for (size_t k = 0; k < n && !st; k++) {
            json_t *x = json_array_get(ranks, k);
            long long v = json_integer_value(x);
            int dup = 0;
            for (size_t j = 0; j < k; j++)
                dup |= r[j] == v;
            if (!json_is_integer(x) || v < 0 || v >= c->t->world_size || dup)
                st = tj_fail(c, "groups",
                             "[%zu][%zu]: expected a distinct "
                             "rank in [0, %d)",
                             i, k, c->t->world_size);
            else
                r[k] = (int32_t)v;
        }
        if (!st)
            st = trace_add_group(c->t, r, (uint32_t)n);
        free(r);
        if (st)
            return st;
    }
    return HERD_OK;
}

static herd_status_t tj_header(tj_ctx_t *c, json_t *root, long long *world,
                               long long *rpn)
{
    static const char *keys = " format version world_size ranks_per_node "
                              "name groups ops rank_ops ";
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        char pat[64];
        snprintf(pat, sizeof(pat), " %s ", key);
        if (!strstr(keys, pat))
            return tj_fail(c, key,
                           "unknown top-level key (expected one "
                           "of:%s)",
                           keys);
    }
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) ||
        strcmp(json_string_value(fmt), TRACE_FORMAT_NAME))
        return tj_fail(c, "format", "expected \"%s\"", TRACE_FORMAT_NAME);
    long long version = 0;
    int have;
    herd_status_t st = tj_int(c, root, "version", 1, 1000000, &version, &have);
    if (st || !have)
        return st ? st : tj_fail(c, "version", "missing");
    if (version > TRACE_FORMAT_VERSION)
        return tj_fail(c, "version",
                       "%lld is newer than this herd reads "
                       "(%d)",
                       version, TRACE_FORMAT_VERSION);
    if ((st = tj_int(c, root, "world_size", 1, TRACE_MAX_WORLD, world, &have)))
        return st;
    if (!have)
        return tj_fail(c, "world_size",
                       "missing; expected the number of "
                       "ranks");
    return tj_int(c, root, "ranks_per_node", 0, TRACE_MAX_WORLD, rpn, NULL);
}

static herd_status_t tj_convert(tj_ctx_t *c, json_t *root, trace_t **out)
{
    if (!json_is_object(root))
        return tj_fail(c, NULL,
                       "expected a JSON object with format, "
                       "version, world_size and ops");
    long long world = 0, rpn = 0;
    herd_status_t st = tj_header(c, root, &world, &rpn);
    if (st || (st = trace_create((int)world, &c->t)))
        return st;
    c->t->ranks_per_node = (int)rpn;
    json_t *name = json_object_get(root, "name");
    if (name && !tj_printable(name))
        st = tj_fail(c, "name", "expected a string of printable text");
    else if (name && !(c->t->name = strdup(json_string_value(name))))
        st = HERD_ERR_NO_MEMORY;
    if (!st)
        st = tj_groups(c, json_object_get(root, "groups"));
    json_t *ops = json_object_get(root, "ops");
    if (!st && !ops)
        st = tj_fail(c, "ops", "missing; expected an array of ops");
    if (!st)
        st = tj_ops(c, ops, "ops");
    if (!st)
        st = tj_rank_ops(c, json_object_get(root, "rank_ops"));
    if (!st)
        st = trace_validate(c->t, c->err, c->errlen);
    if (st) {
        trace_destroy(c->t);
        return st;
    }
    *out = c->t;
    return HERD_OK;
}

static herd_status_t tj_read(json_t *root, const json_error_t *jerr,
                             const char *name, trace_t **out, char *err,
                             size_t errlen)
{
    if (!root) {
        if (jerr->line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", name, jerr->line,
                     jerr->column, jerr->text);
        else
            snprintf(err, errlen, "%s", jerr->text);
        core_escape_msg(err, errlen); /* jansson quotes the bad text */
        return json_error_code(jerr) == json_error_cannot_open_file
                   ? HERD_ERR_IO
                   : HERD_ERR_PARSE;
    }
    tj_ctx_t c = {.file = name, .err = err, .errlen = errlen};
    herd_status_t st = tj_convert(&c, root, out);
    json_decref(root);
    return st;
}

herd_status_t trace_read_json(const char *path, trace_t **out, char *err,
                              size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: cannot open: is a directory", path);
        return HERD_ERR_IO;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    return tj_read(root, &jerr, path, out, err, errlen);
}

herd_status_t trace_read_json_string(const char *text, const char *name,
                                     trace_t **out, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    return tj_read(root, &jerr, name, out, err, errlen);
}
