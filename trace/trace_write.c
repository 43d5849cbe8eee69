/* trace/trace_write.c - write traces as JSON: a small header, then one op
 * per line (each op dumped with jansson, so strings are escaped right),
 * only the fields that differ from their defaults. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

static int tw_is_p2p(int coll)
{
    return coll == HERD_COLL_SEND || coll == HERD_COLL_RECV;
}

static int tw_has_reduce(int coll)
{
    return coll == HERD_COLL_ALL_REDUCE || coll == HERD_COLL_REDUCE ||
           coll == HERD_COLL_REDUCE_SCATTER ||
           coll == HERD_COLL_REDUCE_SCATTER_V;
}

/* The *_v kinds' per-rank counts: "counts" (one per rank) or "splits"
 * (a row per rank). */
static void tw_vcounts(const trace_t *t, const trace_op_t *op, json_t *o)
{
    uint64_t p = (uint64_t)trace_op_group_size(t, op);
    const uint64_t *v = t->vpool + op->vcounts;
    int a2a = op->coll == HERD_COLL_ALL_TO_ALL_V;
    json_t *a = json_array();
    for (uint64_t i = 0; i < p; i++) {
        json_t *row = a2a ? json_array() : a;
        for (uint64_t j = 0; j < (a2a ? p : 1); j++)
            json_array_append_new(
                row, json_integer((json_int_t)v[a2a ? i * p + j : i]));
        if (a2a)
            json_array_append_new(a, row);
    }
    json_object_set_new(o, a2a ? "splits" : "counts", a);
}

static json_t *tw_peer(int32_t peer, int rel)
{
    if (!rel)
        return json_integer(peer);
    char buf[24];
    snprintf(buf, sizeof(buf), "%+d", peer);
    return json_string(buf);
}

static const char *tw_kind_name(const trace_op_t *op)
{
    static const char *names[] = {"compute", "", "wait", "wait_all", "mark"};
    if (op->kind == TRACE_OP_COLL)
        return herd_coll_name((herd_coll_t)op->coll);
    return names[op->kind];
}

static void tw_coll_fields(const trace_t *t, const trace_op_t *op, json_t *o)
{
    int mb = op->coll == HERD_COLL_MONITORED_BARRIER;
    if (op->vcounts != TRACE_NONE) {
        tw_vcounts(t, op, o);
        json_object_set_new(
            o, "dtype", json_string(herd_dtype_name((herd_dtype_t)op->dtype)));
    } else if (op->coll != HERD_COLL_BARRIER && !mb) {
        json_object_set_new(o, "count", json_integer((json_int_t)op->count));
        json_object_set_new(
            o, "dtype", json_string(herd_dtype_name((herd_dtype_t)op->dtype)));
    }
    if (mb && op->dur_ns)
        json_object_set_new(o, "timeout_s",
                            json_real((double)op->dur_ns / 1e9));
    if (mb && op->tag)
        json_object_set_new(o, "wait_all_ranks", json_true());
    if (tw_has_reduce(op->coll))
        json_object_set_new(o, "reduce",
                            json_string(herd_op_name((herd_op_t)op->redop)));
    if (op->peer >= 0 || op->peer_rel)
        json_object_set_new(o, tw_is_p2p(op->coll) ? "peer" : "root",
                            tw_peer(op->peer, op->peer_rel));
    if (op->tag && !mb)
        json_object_set_new(o, "tag", json_integer(op->tag));
    if (op->group)
        json_object_set_new(o, "group", json_integer(op->group));
    if (op->async != TRACE_NONE)
        json_object_set_new(o, "async", json_string(t->async_names[op->async]));
    if (op->algo != HERD_ALGO_AUTO)
        json_object_set_new(o, "algo",
                            json_string(herd_algo_name((herd_algo_t)op->algo)));
}

static json_t *tw_variant(const trace_t *t, const trace_op_t *op,
                          const trace_variant_t *v)
{
    json_t *o = json_object();
    if (v->fields & TRACE_VAR_COLL)
        json_object_set_new(o, "op", json_string(herd_coll_name(v->coll)));
    if (v->fields & TRACE_VAR_DUR)
        json_object_set_new(o, "dur_ns", json_integer((json_int_t)v->dur_ns));
    if (v->fields & TRACE_VAR_COUNT)
        json_object_set_new(o, "count", json_integer((json_int_t)v->count));
    if (v->fields & TRACE_VAR_DTYPE)
        json_object_set_new(o, "dtype", json_string(herd_dtype_name(v->dtype)));
    if (v->fields & TRACE_VAR_PEER)
        json_object_set_new(o, tw_is_p2p(op->coll) ? "peer" : "root",
                            json_integer(v->peer));
    if (v->fields & TRACE_VAR_LABEL)
        json_object_set_new(o, "label", json_string(trace_string(t, v->label)));
    if (v->fields & TRACE_VAR_SKIP)
        json_object_set_new(o, "skip", json_true());
    return o;
}

static json_t *tw_op(const trace_t *t, const trace_op_t *op)
{
    json_t *o = json_object();
    json_object_set_new(o, "op", json_string(tw_kind_name(op)));
    if (op->label != TRACE_NONE)
        json_object_set_new(o, "label",
                            json_string(trace_string(t, op->label)));
    if (op->kind == TRACE_OP_COLL)
        tw_coll_fields(t, op, o);
    if (op->kind == TRACE_OP_COMPUTE)
        json_object_set_new(o, "dur_ns", json_integer((json_int_t)op->dur_ns));
    if (op->kind == TRACE_OP_WAIT)
        json_object_set_new(o, "async", json_string(t->async_names[op->async]));
    if (op->ranks != TRACE_NONE) {
        json_t *r = json_array();
        trace_span_t s = t->ranksets[op->ranks];
        for (uint32_t k = 0; k < s.n; k++)
            json_array_append_new(r, json_integer(t->rank_pool[s.off + k]));
        json_object_set_new(o, "ranks", r);
    }
    if (op->nvar) {
        json_t *pr = json_object();
        for (uint32_t k = 0; k < op->nvar; k++) {
            const trace_variant_t *v = &t->variants[op->var_off + k];
            char key[16];
            snprintf(key, sizeof(key), "%d", v->rank);
            json_object_set_new(pr, key, tw_variant(t, op, v));
        }
        json_object_set_new(o, "per_rank", pr);
    }
    return o;
}

static int tw_ops(const trace_t *t, FILE *f, trace_span_t span,
                  const char *indent)
{
    fputc('[', f);
    for (uint32_t i = 0; i < span.n; i++) {
        json_t *o = tw_op(t, &t->ops[span.off + i]);
        char *s = o ? json_dumps(o, JSON_ENSURE_ASCII) : NULL;
        json_decref(o);
        if (!s)
            return -1;
        fprintf(f, "%s\n%s%s", i ? "," : "", indent, s);
        free(s);
    }
    /* the closing bracket lines up with the key, one level out */
    if (span.n)
        fprintf(f, "\n%.*s", (int)strlen(indent) - 2, indent);
    fputc(']', f);
    return 0;
}

static void tw_groups(const trace_t *t, FILE *f)
{
    fprintf(f, "  \"groups\": [");
    for (uint32_t g = 0; g < t->ngroups; g++) {
        fprintf(f, "%s[", g ? ", " : "");
        for (uint32_t k = 0; k < t->groups[g].n; k++)
            fprintf(f, "%s%d", k ? ", " : "",
                    t->rank_pool[t->groups[g].off + k]);
        fputc(']', f);
    }
    fprintf(f, "],\n");
}

static int tw_write(const trace_t *t, FILE *f)
{
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n",
            TRACE_FORMAT_NAME, TRACE_FORMAT_VERSION);
    if (t->name) {
        json_t *n = json_string(t->name);
        char *s = n ? json_dumps(n, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
        json_decref(n);
        if (!s)
            return -1;
        fprintf(f, "  \"name\": %s,\n", s);
        free(s);
    }
    fprintf(f, "  \"world_size\": %d,\n", t->world_size);
    if (t->ranks_per_node)
        fprintf(f, "  \"ranks_per_node\": %d,\n", t->ranks_per_node);
    if (t->ngroups)
        tw_groups(t, f);
    fprintf(f, "  \"ops\": ");
    if (tw_ops(t, f, (trace_span_t){0, t->nspmd}, "    "))
        return -1;
    if (t->nrank_lists) {
        fprintf(f, ",\n  \"rank_ops\": {");
        for (uint32_t l = 0; l < t->nrank_lists; l++) {
            fprintf(f, "%s\n    \"%d\": ", l ? "," : "", t->rank_lists[l].rank);
            if (tw_ops(t, f, t->rank_lists[l].span, "      "))
                return -1;
        }
        fprintf(f, "\n  }");
    }
    fprintf(f, "\n}\n");
    return ferror(f) ? -1 : 0;
}

char *trace_dumps(const trace_t *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    int rc = tw_write(t, f);
    fclose(f);
    if (rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

herd_status_t trace_write_json(const trace_t *t, const char *path, char *err,
                               size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return HERD_ERR_IO;
    }
    int rc = tw_write(t, f);
    if (fclose(f) || rc) {
        snprintf(err, errlen, "%s: write failed", path);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}
