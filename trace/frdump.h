/* trace/frdump.h - PyTorch's Flight Recorder dumps (the JSON form of
 * torch._C._distributed_c10d._dump_fr_trace_json / _dump_nccl_trace_json,
 * and the files TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE
 * name when written as JSON) turned into herd's own flight-record form,
 * so `herd diagnose` analyses both with one set of rules.
 *
 * herd's form (docs/formats.md): {"rank", "world_size", "groups": [{"id",
 * "ranks"}], "entries": [{"coll", "group", "seq", "count", "dtype", "op",
 * "root", "state", "status"}]}. */
#ifndef HERD_TRACE_FRDUMP_H
#define HERD_TRACE_FRDUMP_H

#include <jansson.h>
#include <stddef.h>

#include <herd/herd.h>

/* 1 when `root` is a PyTorch Flight Recorder dump: an object with an
 * "entries" array and a "version" or "pg_config" key, and no "rank" key
 * (herd's own dumps have one). */
int trace_frdump_is_pytorch(const json_t *root);

/* Converts a PyTorch dump of rank `rank` (PyTorch's dumps do not name
 * their rank: it comes from the file name) into herd's form in *out (a new
 * reference). `world_size` is taken from the default group's ranks in
 * "pg_config" when given there, else `world_hint`. Errors name the entry
 * index and field. */
herd_status_t trace_frdump_convert(const json_t *root, int rank,
                                   int world_hint, const char *path,
                                   json_t **out, char *err, size_t errlen);

/* The rank a dump's file name gives: "rank3.json", or digits at the end
 * of the name before an optional ".json" ("nccl_trace_rank_3",
 * "fr_dump_3.json"); -1 when there are none. */
int trace_frdump_rank_from_name(const char *name);

#endif
