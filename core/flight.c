/* core/flight.c - the flight recorder shared by the engines (see
 * core/flight.h): the ring, the groups it has seen, and the JSON dump.
 *
 * Format (version 2; docs/formats.md): {"version", "engine", "rank",
 * "world_size", "clock", "dump_time_ns", "reason"?, "rank_state"?,
 * "groups": [{"id", "ranks": [world ranks]}], "entries": [{"id",
 * "group", "seq", "collective_seq_id", "p2p_seq_id", "coll", "is_p2p",
 * "profiling_name", "algo", "dtype", "op", "root", "peer", "count",
 * "in_bytes", "out_bytes", "state", "status", "timeout_ms",
 * "t_scheduled_ns", "t_started_ns", "t_completed_ns", "duration_ns"}]},
 * entries oldest first. Version 1 (the tcp engine's first dumps) had the
 * same names less collective_seq_id, p2p_seq_id, is_p2p, profiling_name,
 * peer, timeout_ms, duration_ns, clock, reason and rank_state. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/flight.h"

#define FLIGHT_FIRST_SLOTS 8

static const char *const state_names[] = {"scheduled", "started", "completed"};

size_t core_flight_limit(void)
{
    int n = core_env_int("HERD_FLIGHT_ENTRIES", CORE_FLIGHT_DEFAULT_ENTRIES);
    return n > 0 ? (size_t)n : 0;
}

const char *core_flight_dir(void)
{
    const char *d = getenv("HERD_FLIGHT_DIR");
    return d && *d ? d : NULL;
}

void core_flight_init(core_flight_t *f, size_t max)
{
    memset(f, 0, sizeof(*f));
    f->max = max;
    f->off = max == 0;
}

void core_flight_fini(core_flight_t *f)
{
    while (f->groups) {
        core_fr_group_t *g = f->groups;
        f->groups = g->next;
        free(g->world_ranks);
        free(g);
    }
    free(f->ring);
    f->ring = NULL;
    f->cap = 0;
}

/* The group's members, copied the first time an op is recorded on it
 * (most recently used first: a rank posts on few groups). */
static void note_group(core_flight_t *f, const herd_comm_t *c)
{
    core_fr_group_t **pp = &f->groups, *g;
    for (; (g = *pp); pp = &g->next)
        if (g->id == c->group_id) {
            *pp = g->next; /* to the front */
            g->next = f->groups;
            f->groups = g;
            return;
        }
    g = calloc(1, sizeof(*g));
    if (!g)
        return; /* the dump then lacks the group; diagnose names others */
    g->id = c->group_id;
    g->size = c->size;
    if (c->world_ranks) {
        g->world_ranks = malloc((size_t)c->size * sizeof(int));
        if (!g->world_ranks) {
            free(g);
            return;
        }
        memcpy(g->world_ranks, c->world_ranks, (size_t)c->size * sizeof(int));
    }
    g->next = f->groups;
    f->groups = g;
}

/* The slot for record `id`: the ring doubles until it reaches its limit
 * (entries keep their slots, as none has wrapped yet), then wraps. */
static core_fr_entry_t *slot(core_flight_t *f, uint64_t id)
{
    if (id > f->cap && f->cap < f->max) {
        size_t cap = f->cap ? f->cap * 2 : FLIGHT_FIRST_SLOTS;
        if (cap > f->max)
            cap = f->max;
        core_fr_entry_t *r = realloc(f->ring, cap * sizeof(*r));
        if (r) {
            memset(r + f->cap, 0, (cap - f->cap) * sizeof(*r));
            f->ring = r;
            f->cap = cap;
        } else {
            f->max = f->cap; /* no more memory: wrap where it is */
        }
    }
    return f->cap ? &f->ring[(id - 1) % f->cap] : NULL;
}

uint64_t core_flight_add(core_flight_t *f, const herd_comm_t *c,
                         const core_coll_args_t *a, uint64_t t)
{
    if (f->off)
        return 0;
    if (f->max == 0) /* zero-filled: the default limit */
        core_flight_init(f, core_flight_limit());
    if (f->off)
        return 0;
    core_fr_entry_t *e = slot(f, f->next_id + 1);
    if (!e)
        return 0;
    uint64_t id = ++f->next_id;
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    double tmo = (a->timeout_s > 0 ? a->timeout_s : c->timeout_s) * 1e3;
    size_t es = herd_dtype_size(a->dtype);
    note_group(f, c);
    *e = (core_fr_entry_t){
        .id = id,
        .seq = a->seq,
        .coll_seq = p2p ? c->seq : a->seq,
        .p2p_seq = p2p ? a->seq : c->p2p_seq,
        .count = a->count,
        .in_bytes = core_args_send_count(a, c->size) * es,
        .out_bytes = core_args_recv_count(a, c->size) * es,
        .t_scheduled = t,
        .timeout_ms = tmo > 0 && tmo < 4e9 ? (uint32_t)tmo : UINT32_MAX,
        .group = c->group_id,
        .root =
            p2p && a->root >= 0 ? herd_comm_world_rank(c, a->root) : a->root,
        .status = HERD_OK,
        .coll = (uint8_t)a->coll,
        .algo = (uint8_t)a->algo,
        .dtype = (uint8_t)a->dtype,
        .op = (uint8_t)a->op,
        .state = CORE_FR_SCHEDULED};
    return id;
}

void core_flight_update(core_flight_t *f, uint64_t id, core_fr_state_t st,
                        herd_status_t status, uint64_t t)
{
    if (id == 0 || f->cap == 0)
        return;
    core_fr_entry_t *e = &f->ring[(id - 1) % f->cap];
    if (e->id != id)
        return; /* overwritten by newer entries */
    if (st > e->state)
        e->state = (uint8_t)st;
    if (status != HERD_OK)
        e->status = status;
    if (st >= CORE_FR_STARTED && !e->t_started)
        e->t_started = t;
    if (st == CORE_FR_COMPLETED && !e->t_completed)
        e->t_completed = t;
}

static json_t *entry_json(const core_fr_entry_t *e, const char *engine)
{
    herd_coll_t coll = (herd_coll_t)e->coll;
    int p2p = coll == HERD_COLL_SEND || coll == HERD_COLL_RECV;
    char prof[64];
    snprintf(prof, sizeof(prof), "%s:%s", engine, herd_coll_name(coll));
    json_t *j = json_pack(
        "{s:I,s:i,s:I,s:I,s:I,s:s,s:b,s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:I,s:s,"
        "s:s,s:I,s:I,s:I}",
        "id", (json_int_t)e->id, "group", e->group, "seq", (json_int_t)e->seq,
        "collective_seq_id", (json_int_t)e->coll_seq, "p2p_seq_id",
        (json_int_t)e->p2p_seq, "coll", herd_coll_name(coll), "is_p2p", p2p,
        "profiling_name", prof, "algo", herd_algo_name((herd_algo_t)e->algo),
        "dtype", herd_dtype_name((herd_dtype_t)e->dtype), "op",
        herd_op_name((herd_op_t)e->op), "root", p2p ? -1 : e->root, "count",
        (json_int_t)e->count, "in_bytes", (json_int_t)e->in_bytes, "out_bytes",
        (json_int_t)e->out_bytes, "state", state_names[e->state], "status",
        herd_status_name(e->status), "t_scheduled_ns",
        (json_int_t)e->t_scheduled, "t_started_ns", (json_int_t)e->t_started,
        "t_completed_ns", (json_int_t)e->t_completed);
    if (!j)
        return NULL;
    if (p2p)
        json_object_set_new(j, "peer", json_integer(e->root));
    if (e->timeout_ms != UINT32_MAX)
        json_object_set_new(j, "timeout_ms", json_integer(e->timeout_ms));
    if (e->state == CORE_FR_COMPLETED && e->t_completed >= e->t_started)
        json_object_set_new(
            j, "duration_ns",
            json_integer((json_int_t)(e->t_completed - e->t_started)));
    return j;
}

static json_t *groups_json(const core_flight_t *f)
{
    json_t *arr = json_array();
    for (const core_fr_group_t *g = f->groups; g && arr; g = g->next) {
        json_t *ranks = json_array();
        for (int i = 0; i < g->size && ranks; i++)
            json_array_append_new(
                ranks, json_integer(g->world_ranks ? g->world_ranks[i] : i));
        json_array_append_new(
            arr, json_pack("{s:i,s:o*}", "id", g->id, "ranks", ranks));
    }
    return arr;
}

static json_t *dump_json(const core_flight_t *f, const core_flight_meta_t *m)
{
    json_t *entries = json_array();
    uint64_t first = f->next_id > f->cap ? f->next_id - f->cap + 1 : 1;
    for (uint64_t id = first; id <= f->next_id && entries; id++) {
        const core_fr_entry_t *e = &f->ring[(id - 1) % f->cap];
        if (e->id == id)
            json_array_append_new(entries, entry_json(e, m->engine));
    }
    json_t *root = json_pack(
        "{s:i,s:s,s:i,s:i,s:s,s:I,s:o*,s:o*}", "version", 2, "engine",
        m->engine, "rank", m->rank, "world_size", m->world_size, "clock",
        m->clock ? m->clock : "monotonic", "dump_time_ns", (json_int_t)m->now,
        "groups", groups_json(f), "entries", entries);
    if (root && m->reason)
        json_object_set_new(root, "reason", json_string(m->reason));
    if (root && m->rank_state)
        json_object_set_new(root, "rank_state", json_string(m->rank_state));
    return root;
}

/* mkdir -p: a dump's folder and its parents. */
static int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return -1;
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = c;
        if (!c)
            return 0;
    }
}

herd_status_t core_flight_dump(const core_flight_t *f,
                               const core_flight_meta_t *m, const char *dir)
{
    if (!*dir || make_dirs(dir) != 0)
        return HERD_ERR_IO;
    json_t *root = dump_json(f, m);
    if (!root)
        return HERD_ERR_NO_MEMORY;
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/rank%d.json", dir, m->rank);
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
    int rc = json_dump_file(root, tmp, JSON_INDENT(1));
    json_decref(root);
    if (rc != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}

herd_status_t core_flight_dump_api(herd_comm_t *comm, const core_flight_t *f,
                                   const core_flight_meta_t *m, const char *dir)
{
    const char *d = dir ? dir : core_flight_dir();
    if (f->off)
        return core_comm_error(comm, HERD_ERR_UNSUPPORTED,
                               "flight dump: the flight record is off "
                               "(HERD_FLIGHT_ENTRIES=0)");
    if (!d)
        return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                               "flight dump: no directory (pass one, or set "
                               "HERD_FLIGHT_DIR)");
    herd_status_t st = core_flight_dump(f, m, d);
    return st == HERD_OK
               ? st
               : core_comm_error(comm, st, "flight dump to '%s' failed: %s", d,
                                 herd_status_string(st));
}
