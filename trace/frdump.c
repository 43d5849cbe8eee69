/* trace/frdump.c - PyTorch Flight Recorder dumps into herd's flight-record
 * form. What PyTorch records per collective: the process group (pg_id and
 * its name), collective_seq_id (p2p ops count separately in p2p_seq_id),
 * profiling_name ("nccl:all_reduce", "gloo:broadcast", ...), input and
 * output sizes and dtypes, state (scheduled / started / completed; gloo
 * leaves "scheduled") and retired (the work finished and left the active
 * list). herd's diagnosis compares (group, seq) across ranks, so those
 * become herd's fields; the counts are element totals of the inputs.
 * An op counts as completed when its state says so, when it is retired, or
 * when pg_status's last_completed_collective has passed it: each of the
 * three lags on some backend (gloo never leaves "scheduled", retirement
 * waits for the watchdog, the status line for the next progress check). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/frdump.h"

#define FR_MAX_WORLD 1048576

int trace_frdump_is_pytorch(const json_t *root)
{
    return json_is_object(root) &&
           json_is_array(json_object_get(root, "entries")) &&
           !json_object_get(root, "rank") &&
           (json_object_get(root, "version") ||
            json_object_get(root, "pg_config"));
}

int trace_frdump_rank_from_name(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".json"))
        n -= 5;
    size_t end = n;
    while (n > 0 && isdigit((unsigned char)base[n - 1]))
        n--;
    if (n == end || end - n > 7)
        return -1;
    return atoi(base + n);
}

/* "nccl:_allgather_base" -> "all_gather": PyTorch's op names (their
 * coalesced and tensor forms) in herd's words; others kept as they are. */
static void fr_coll_name(const char *prof, char *out, size_t len)
{
    const char *colon = strchr(prof, ':');
    const char *op = colon ? colon + 1 : prof;
    static const struct {
        const char *stem, *name;
    } map[] = {{"allreduce", "all_reduce"},
               {"all_reduce", "all_reduce"},
               {"_allgather", "all_gather"},
               {"allgather", "all_gather"},
               {"all_gather", "all_gather"},
               {"_reduce_scatter", "reduce_scatter"},
               {"reduce_scatter", "reduce_scatter"},
               {"alltoall", "all_to_all"},
               {"all_to_all", "all_to_all"},
               {"broadcast", "broadcast"},
               {"reduce", "reduce"},
               {"barrier", "barrier"},
               {"gather", "gather"},
               {"scatter", "scatter"},
               {"send", "send"},
               {"recv", "recv"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strncmp(op, map[i].stem, strlen(map[i].stem))) {
            snprintf(out, len, "%s", map[i].name);
            return;
        }
    snprintf(out, len, "%s", op);
}

/* PyTorch's ScalarType names in herd's dtype words. */
static const char *fr_dtype(const char *t)
{
    static const struct {
        const char *pt, *herd;
    } map[] = {{"Float", "float32"},     {"Half", "float16"},
               {"BFloat16", "bfloat16"}, {"Double", "float64"},
               {"Int", "int32"},         {"Long", "int64"},
               {"Char", "int8"},         {"Byte", "uint8"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(t, map[i].pt))
            return map[i].herd;
    return t;
}

/* Total elements of a list of shapes ([[2, 3], [4]] -> 10); -1 if it is
 * not one. */
static json_int_t fr_numel(const json_t *shapes)
{
    if (!json_is_array(shapes))
        return -1;
    json_int_t total = 0;
    size_t i, j;
    json_t *s, *d;
    json_array_foreach(shapes, i, s)
    {
        if (!json_is_array(s))
            return -1;
        json_int_t n = 1;
        json_array_foreach(s, j, d)
        {
            json_int_t v = json_integer_value(d);
            if (!json_is_integer(d) || v < 0 || (v && n > INT64_MAX / v))
                return -1;
            n *= v;
        }
        if (total > INT64_MAX - n)
            return -1;
        total += n;
    }
    return total;
}

/* The ranks of a pg_config entry: a JSON list, or the string "[0, 1]". */
static json_t *fr_ranks(const json_t *cfg)
{
    json_t *r = json_object_get(cfg, "ranks");
    if (json_is_array(r))
        return json_incref(r);
    if (!json_is_string(r))
        return NULL;
    json_error_t je;
    json_t *parsed = json_loads(json_string_value(r), 0, &je);
    if (!json_is_array(parsed)) {
        json_decref(parsed);
        return NULL;
    }
    return parsed;
}

/* pg_config entry of group `name`: by key, else by "name", else the only
 * one (gloo's default group is keyed "" while its entries say "0"). */
static const json_t *fr_group_cfg(const json_t *pgc, const char *name)
{
    const json_t *c = json_object_get(pgc, name);
    if (c)
        return c;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)pgc, k, v)
    {
        const char *nm = json_string_value(json_object_get(v, "name"));
        if (nm && !strcmp(nm, name))
            return v;
    }
    return json_object_size(pgc) == 1
               ? json_object_iter_value(json_object_iter((json_t *)pgc))
               : NULL;
}

/* pg_status[pg_id].last_completed_collective ("5" or 5), or -1. */
static json_int_t fr_last_completed(const json_t *root, json_int_t pg)
{
    char key[32];
    snprintf(key, sizeof(key), "%lld", (long long)pg);
    json_t *v = json_object_get(
        json_object_get(json_object_get(root, "pg_status"), key),
        "last_completed_collective");
    if (json_is_integer(v))
        return json_integer_value(v);
    return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : -1;
}

static herd_status_t fr_entry(const json_t *root, const json_t *e, size_t idx,
                              const char *path, json_t *entries, json_t *groups,
                              char *err, size_t errlen)
{
    const json_t *pgc = json_object_get(root, "pg_config");
    const char *prof = json_string_value(json_object_get(e, "profiling_name"));
    json_t *pg = json_object_get(e, "pg_id");
    json_t *seq = json_object_get(e, "collective_seq_id");
    if (!json_is_object(e) || !prof || !json_is_integer(pg) ||
        !json_is_integer(seq)) {
        snprintf(err, errlen,
                 "%s: entries[%zu]: expected profiling_name, "
                 "pg_id and collective_seq_id",
                 path, idx);
        return HERD_ERR_PARSE;
    }
    char coll[64];
    fr_coll_name(prof, coll, sizeof(coll));
    int p2p = json_is_true(json_object_get(e, "is_p2p"));
    if (p2p && strcmp(coll, "send") && strcmp(coll, "recv"))
        snprintf(coll, sizeof(coll), "send"); /* diagnose skips p2p */
    json_int_t count = fr_numel(json_object_get(e, "input_sizes"));
    const char *dt = json_string_value(
        json_array_get(json_object_get(e, "input_dtypes"), 0));
    const char *state = json_string_value(json_object_get(e, "state"));
    int done = (state && !strcmp(state, "completed")) ||
               json_is_true(json_object_get(e, "retired")) ||
               (!p2p && json_integer_value(seq) <=
                            fr_last_completed(root, json_integer_value(pg)));
    json_t *h =
        json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:I, s:s, s:s, s:s}", "coll",
                  coll, "group", json_integer_value(pg), "seq",
                  p2p ? json_integer_value(json_object_get(e, "p2p_seq_id"))
                      : json_integer_value(seq),
                  "count", count < 0 ? (json_int_t)-1 : count, "dtype",
                  dt ? fr_dtype(dt) : "?", "op", "?", "root", (json_int_t)-1,
                  "state", done ? "completed" : (state ? state : "scheduled"),
                  "status", "HERD_OK", "profiling_name", prof);
    if (!h || json_array_append_new(entries, h))
        return HERD_ERR_NO_MEMORY;
    /* the group list, once per pg_id */
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        if (json_integer_value(json_object_get(g, "id")) ==
            json_integer_value(pg))
            return HERD_OK;
    }
    const char *name = json_string_value(
        json_array_get(json_object_get(e, "process_group"), 0));
    json_t *ranks = fr_ranks(fr_group_cfg(pgc, name ? name : ""));
    json_t *ng = json_pack("{s:I, s:o}", "id", json_integer_value(pg), "ranks",
                           ranks ? ranks : json_array());
    if (!ng || json_array_append_new(groups, ng))
        return HERD_ERR_NO_MEMORY;
    return HERD_OK;
}

/* A group known only by its pg_id and without ranks in pg_config spans the
 * whole world. */
static void fr_fill_groups(json_t *groups, int world)
{
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        json_t *r = json_object_get(g, "ranks");
        if (json_array_size(r) > 0)
            continue;
        for (int k = 0; k < world; k++)
            json_array_append_new(r, json_integer(k));
    }
}

herd_status_t trace_frdump_convert(const json_t *root, int rank, int world_hint,
                                   const char *path, json_t **out, char *err,
                                   size_t errlen)
{
    json_t *es = json_object_get(root, "entries");
    json_t *res =
        json_pack("{s:i, s:[], s:[]}", "rank", rank, "groups", "entries");
    if (!res)
        return HERD_ERR_NO_MEMORY;
    json_t *groups = json_object_get(res, "groups");
    json_t *entries = json_object_get(res, "entries");
    size_t i;
    json_t *e;
    herd_status_t st = HERD_OK;
    json_array_foreach(es, i, e)
    {
        if ((st = fr_entry(root, e, i, path, entries, groups, err, errlen)))
            break;
    }
    int world = world_hint;
    json_array_foreach(groups, i, e)
    {
        size_t n = json_array_size(json_object_get(e, "ranks"));
        if ((int)n > world)
            world = (int)n;
    }
    if (st == HERD_OK && (rank < 0 || rank >= world || world > FR_MAX_WORLD)) {
        snprintf(err, errlen,
                 "%s: rank %d (from the file name) is outside "
                 "the %d-rank world its groups name",
                 path, rank, world);
        st = HERD_ERR_PARSE;
    }
    if (st != HERD_OK) {
        json_decref(res);
        return st;
    }
    fr_fill_groups(groups, world);
    json_object_set_new(res, "world_size", json_integer(world));
    json_object_set_new(res, "source", json_string("PyTorch Flight Recorder"));
    *out = res;
    return HERD_OK;
}
