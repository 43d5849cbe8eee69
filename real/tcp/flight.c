/* real/tcp/flight.c - the flight recorder of the tcp engine: a ring of the
 * last collectives of this rank (HERD_FLIGHT_ENTRIES, default 2000) with
 * their sequence, group, kind, sizes, dtype, state and times, dumped as
 * JSON to <dir>/rank<r>.json on timeout, on peer failure, on SIGUSR1 or on
 * herd_flight_dump(). `herd diagnose` reads the dumps of all ranks.
 *
 * Format (version 1): {"version":1, "engine":"tcp", "rank", "world_size",
 * "dump_time_ns", "groups":[{"id","ranks":[world ranks]}], "entries":[{
 * "id","group","seq","coll","algo","dtype","op","root","count","in_bytes",
 * "out_bytes","state","status","t_scheduled_ns","t_started_ns",
 * "t_completed_ns"}]} with entries oldest first; times are this rank's
 * monotonic clock in nanoseconds. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "real/tcp/tcp.h"

static const char *const state_names[] = {"scheduled", "started", "completed"};

const char *tcp_flight_dir(void)
{
    const char *d = getenv("HERD_FLIGHT_DIR");
    return d && *d ? d : NULL;
}

herd_status_t tcp_flight_init(tcp_flight_t *f, size_t cap)
{
    f->ring = calloc(cap ? cap : 1, sizeof(tcp_fr_entry_t));
    if (!f->ring)
        return HERD_ERR_NO_MEMORY;
    f->cap = cap ? cap : 1;
    f->next_id = 1;
    return HERD_OK;
}

void tcp_flight_fini(tcp_flight_t *f)
{
    free(f->ring);
    f->ring = NULL;
}

uint64_t tcp_flight_add(tcp_world_t *w, const tcp_comm_t *c,
                        const core_coll_args_t *a, uint64_t t)
{
    tcp_flight_t *f = &w->flight;
    uint64_t id = f->next_id++;
    tcp_fr_entry_t *e = &f->ring[(id - 1) % f->cap];
    int p = c->base.size;
    size_t es = herd_dtype_size(a->dtype);
    *e = (tcp_fr_entry_t){
        .id = id,
        .group = c->base.group_id,
        .seq = a->seq,
        .coll = a->coll,
        .algo = a->algo,
        .dtype = a->dtype,
        .op = a->op,
        .root = a->root,
        .count = a->count,
        .in_bytes = core_coll_send_count(a->coll, a->count, p) * es,
        .out_bytes = core_coll_recv_count(a->coll, a->count, p) * es,
        .state = TCP_FR_SCHEDULED,
        .status = HERD_OK,
        .t_scheduled = t};
    return id;
}

void tcp_flight_update(tcp_world_t *w, uint64_t id, tcp_fr_state_t st,
                       herd_status_t status, uint64_t t)
{
    tcp_flight_t *f = &w->flight;
    if (id == 0)
        return;
    tcp_fr_entry_t *e = &f->ring[(id - 1) % f->cap];
    if (e->id != id)
        return; /* overwritten by newer entries */
    if (st > e->state)
        e->state = st;
    if (status != HERD_OK)
        e->status = status;
    if (st >= TCP_FR_STARTED && !e->t_started)
        e->t_started = t;
    if (st == TCP_FR_COMPLETED)
        e->t_completed = t;
}

static json_t *entry_json(const tcp_fr_entry_t *e)
{
    return json_pack(
        "{s:I,s:i,s:I,s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:I,s:s,s:s,s:I,s:I,s:I}",
        "id", (json_int_t)e->id, "group", e->group, "seq", (json_int_t)e->seq,
        "coll", herd_coll_name(e->coll), "algo", herd_algo_name(e->algo),
        "dtype", herd_dtype_name(e->dtype), "op", herd_op_name(e->op), "root",
        e->root, "count", (json_int_t)e->count, "in_bytes",
        (json_int_t)e->in_bytes, "out_bytes", (json_int_t)e->out_bytes, "state",
        state_names[e->state], "status", herd_status_name(e->status),
        "t_scheduled_ns", (json_int_t)e->t_scheduled, "t_started_ns",
        (json_int_t)e->t_started, "t_completed_ns", (json_int_t)e->t_completed);
}

static json_t *groups_json(const tcp_world_t *w)
{
    json_t *arr = json_array();
    for (const tcp_group_info_t *g = w->groups; g && arr; g = g->next) {
        json_t *ranks = json_array();
        for (int i = 0; i < g->size && ranks; i++)
            json_array_append_new(ranks, json_integer(g->world_ranks[i]));
        json_array_append_new(
            arr, json_pack("{s:i,s:o}", "id", g->id, "ranks", ranks));
    }
    return arr;
}

static json_t *dump_json(const tcp_world_t *w)
{
    const tcp_flight_t *f = &w->flight;
    json_t *entries = json_array();
    uint64_t first = f->next_id > f->cap ? f->next_id - f->cap : 1;
    for (uint64_t id = first; id < f->next_id && entries; id++) {
        const tcp_fr_entry_t *e = &f->ring[(id - 1) % f->cap];
        if (e->id == id)
            json_array_append_new(entries, entry_json(e));
    }
    return json_pack("{s:i,s:s,s:i,s:i,s:I,s:o,s:o}", "version", 1, "engine",
                     "tcp", "rank", w->rank, "world_size", w->size,
                     "dump_time_ns", (json_int_t)tcp_now_ns(), "groups",
                     groups_json(w), "entries", entries);
}

herd_status_t tcp_flight_dump(tcp_world_t *w, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return HERD_ERR_IO;
    json_t *root = dump_json(w);
    if (!root)
        return HERD_ERR_NO_MEMORY;
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/rank%d.json", dir, w->rank);
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
    int rc = json_dump_file(root, tmp, JSON_INDENT(1));
    json_decref(root);
    if (rc != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}
