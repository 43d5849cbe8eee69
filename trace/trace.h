/* trace/trace.h - traces: what every rank of a job does, in order.
 *
 * In memory a trace is a compact op array. Most jobs are SPMD: one op
 * list shared by all ranks, where an op may be limited to some ranks
 * (`ranks`) or differ on some ranks (variants: another duration, count,
 * peer, collective, ...). A rank whose work differs entirely gets its own
 * list. So a 1024-rank trace is not 1024 copies. On disk a trace is JSON
 * (format "herd-trace", version 1; see docs/formats.md). */
#ifndef HERD_TRACE_TRACE_H
#define HERD_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <herd/types.h>

#define TRACE_FORMAT_NAME "herd-trace"
#define TRACE_FORMAT_VERSION 1
#define TRACE_NONE UINT32_MAX
#define TRACE_MAX_WORLD (1 << 20)

typedef enum trace_op_kind {
    TRACE_OP_COMPUTE,  /* dur_ns of modelled compute */
    TRACE_OP_COLL,     /* a collective or send/recv (coll) */
    TRACE_OP_WAIT,     /* wait for the async op named by `async` */
    TRACE_OP_WAIT_ALL, /* wait for every outstanding async op */
    TRACE_OP_MARK      /* a timeline marker ("step", "bucket ...") */
} trace_op_kind_t;

/* Which fields a variant changes. */
enum {
    TRACE_VAR_COUNT = 1 << 0,
    TRACE_VAR_DUR = 1 << 1,
    TRACE_VAR_PEER = 1 << 2,
    TRACE_VAR_LABEL = 1 << 3,
    TRACE_VAR_COLL = 1 << 4,
    TRACE_VAR_DTYPE = 1 << 5,
    TRACE_VAR_SKIP = 1 << 6 /* the rank does not do this op */
};

typedef struct trace_op {
    uint8_t kind;     /* trace_op_kind_t */
    uint8_t coll;     /* herd_coll_t */
    uint8_t dtype;    /* herd_dtype_t */
    uint8_t redop;    /* herd_op_t */
    uint8_t algo;     /* herd_algo_t; AUTO: the run's setting */
    uint8_t peer_rel; /* 1: peer is relative to the rank (send/recv) */
    uint16_t group;   /* 0: world; g: groups[g - 1] */
    int32_t peer;     /* root (rooted collectives) or peer; -1 none */
    int32_t tag;
    uint32_t async;   /* async slot; TRACE_NONE: blocking */
    uint32_t label;   /* string index; TRACE_NONE: none */
    uint32_t ranks;   /* rank set index; TRACE_NONE: every rank */
    uint32_t var_off; /* variants[var_off .. +nvar) */
    uint32_t nvar;
    uint32_t vcounts; /* the *_v kinds: vpool[vcounts ..) holds their
                         counts, trace_op_vlen of them; TRACE_NONE: none */
    uint64_t count;   /* elements */
    uint64_t dur_ns;  /* compute; monitored_barrier: its timeout (0: the
                         comm's), with tag 1 for wait_all_ranks */
} trace_op_t;

/* How one op differs on one rank. */
typedef struct trace_variant {
    int32_t rank;
    uint32_t fields; /* TRACE_VAR_* */
    uint64_t count;
    uint64_t dur_ns;
    int32_t peer;
    uint32_t label;
    uint8_t coll, dtype;
} trace_variant_t;

typedef struct trace_span {
    uint32_t off, n;
} trace_span_t;

/* A rank with its own op list ops[span]. */
typedef struct trace_rank_list {
    int32_t rank;
    trace_span_t span;
} trace_rank_list_t;

typedef struct trace {
    int version;
    int world_size;
    int ranks_per_node; /* 0: unknown */
    char *name;
    trace_op_t *ops; /* SPMD ops first, then the per-rank lists */
    uint32_t nops, ops_cap;
    uint32_t nspmd;
    trace_rank_list_t *rank_lists;
    uint32_t nrank_lists;
    trace_variant_t *variants;
    uint32_t nvariants, variants_cap;
    trace_span_t *ranksets; /* into rank_pool, sorted ranks */
    uint32_t nranksets;
    int32_t *rank_pool;
    uint32_t npool;
    trace_span_t *groups; /* into rank_pool, in group order */
    uint32_t ngroups;
    char **strings; /* labels */
    uint32_t nstrings, strings_cap;
    char **async_names; /* async slot -> name */
    uint32_t nasync;
    uint64_t *vpool; /* counts of the *_v kinds (trace_op_t.vcounts) */
    uint32_t nvpool, vpool_cap;
} trace_t;

herd_status_t trace_create(int world_size, trace_t **out);
void trace_destroy(trace_t *t);

/* Building. Indices returned through out arguments. */
herd_status_t trace_add_op(trace_t *t, const trace_op_t *op);
herd_status_t trace_intern(trace_t *t, const char *s, uint32_t *idx_out);
/* Append a string without looking for an equal one. */
herd_status_t trace_add_string(trace_t *t, const char *s, uint32_t *idx_out);
herd_status_t trace_async_slot(trace_t *t, const char *name, uint32_t *idx_out);
herd_status_t trace_add_rankset(trace_t *t, const int32_t *ranks, uint32_t n,
                                uint32_t *idx_out);
herd_status_t trace_add_group(trace_t *t, const int32_t *ranks, uint32_t n);
/* Variants must be added right after their op, rank by rank. */
herd_status_t trace_add_variant(trace_t *t, uint32_t op_index,
                                const trace_variant_t *v);
/* Start a per-rank list: following trace_add_op calls go to it. */
herd_status_t trace_begin_rank_list(trace_t *t, int rank);
void trace_end_rank_list(trace_t *t);

/* Counts of a *_v op: n values appended to vpool, their offset in
 * *idx_out. all_gather_v and reduce_scatter_v have one per rank of the
 * op's group (rank r's block); all_to_all_v a row-major p x p matrix
 * (row i: what rank i sends to each rank). */
herd_status_t trace_add_counts(trace_t *t, const uint64_t *v, uint32_t n,
                               uint32_t *idx_out);
/* The op's group size and how many counts its vcounts holds (p, p * p,
 * or 0 for the other kinds). */
int trace_op_group_size(const trace_t *t, const trace_op_t *op);
uint64_t trace_op_vlen(const trace_t *t, const trace_op_t *op);

/* A trace_op with default fields (blocking, no label, all ranks). */
trace_op_t trace_op_default(trace_op_kind_t kind);

/* Reading. The ops rank `rank` runs, in order: call trace_rank_ops, then
 * for each op trace_op_for_rank, which applies the rank filter and
 * variants (returns 0 if the rank skips the op). */
void trace_rank_ops(const trace_t *t, int rank, const trace_op_t **ops,
                    uint32_t *n);
int trace_op_for_rank(const trace_t *t, const trace_op_t *op, int rank,
                      trace_op_t *out);
const char *trace_string(const trace_t *t, uint32_t idx);
/* Absolute peer or root of a resolved op for `rank` (relative peers
 * wrap around the group size `size`). */
int trace_op_peer(const trace_op_t *op, int rank, int size);
/* Group g's ranks (g >= 1). */
trace_span_t trace_group(const trace_t *t, uint32_t g);

/* Files. Errors name the file and the op ("ops[12].count: ..."). */
herd_status_t trace_read_json(const char *path, trace_t **out, char *err,
                              size_t errlen);
herd_status_t trace_read_json_string(const char *text, const char *name,
                                     trace_t **out, char *err, size_t errlen);
herd_status_t trace_write_json(const trace_t *t, const char *path, char *err,
                               size_t errlen);
/* The JSON text (malloc'd) of a trace; for tests and tools. */
char *trace_dumps(const trace_t *t);

/* Checks that need the whole trace: async ids waited before reuse, peers
 * and roots inside their group, matching send/recv counts per pair. */
herd_status_t trace_validate(const trace_t *t, char *err, size_t errlen);

/* A copy of `in` for `world_size` ranks. Data-parallel collectives on the
 * world keep their per-rank counts; relative peers stay relative. Rank
 * specific parts (rank filters, variants, per-rank lists, absolute peers,
 * roots, groups) are tiled when world_size is a multiple of the old
 * size, kept when they only name ranks below world_size, and otherwise
 * rejected with the reason in err. */
herd_status_t trace_rescale(const trace_t *in, int world_size, trace_t **out,
                            char *err, size_t errlen);

/* Workload generators: a message-size sweep as a trace. */
struct trace_sweep;
herd_status_t trace_from_sweep(const struct trace_sweep *sw, int world_size,
                               trace_t **out);

#endif
