/* trace/scenario_int.h - internals of the scenario reader shared by
 * scenario.c (documents, errors, --set) and scenario_fields.c (the key
 * tables and value parsers). Not a public header. */
#ifndef HERD_TRACE_SCENARIO_INT_H
#define HERD_TRACE_SCENARIO_INT_H

#include <libfyaml.h>
#include <stddef.h>

#include "trace/scenario.h"

#define SCN_PATH_MAX 256
/* A scenario is a short text; more than this is a mistake or an attack. */
#define SCN_MAX_BYTES (16 << 20)

typedef struct scn_ctx {
    trace_scenario_t *sc;
    const char *file;        /* for messages */
    const char *base_dir;    /* relative paths are resolved here; NULL: cwd */
    char path[SCN_PATH_MAX]; /* dotted key path, for messages */
    int line, col;           /* 1-based place of the current key */
    int from_set;            /* 1: --set may switch the workload kind */
    char *err;
    size_t errlen;
} scn_ctx_t;

typedef struct scn_field scn_field_t;
/* Parse node `n` into the field at (char *)base + f->off. */
typedef herd_status_t (*scn_field_fn)(scn_ctx_t *c, struct fy_node *n,
                                      void *base, const scn_field_t *f);

struct scn_field {
    const char *key;
    scn_field_fn fn;
    size_t off;             /* into base */
    const scn_field_t *sub; /* map / sequence items: their keys */
    double lo, hi;          /* numeric range */
    size_t count_off;       /* sequences: where the item count goes */
    size_t item_size;       /* sequences: bytes per item */
    void (*item_init)(void *item);
};

/* The keys of the top level of a scenario. */
extern const scn_field_t scn_top_fields[];

/* Record "file:line:col: path: message" (place of n, else of the current
 * key) and return HERD_ERR_PARSE. */
herd_status_t scn_error(scn_ctx_t *c, struct fy_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The 1-based place of a node (a scalar's token, else its first
 * scalar's); 0 if it has none. */
int scn_node_mark(struct fy_node *n, int *line, int *col, int depth);

/* scenario_input.c: a whole file (at most SCN_MAX_BYTES, NUL-terminated,
 * malloc'd); the bytes are UTF-8 without NUL ("name:line:col: ..."
 * otherwise); the document has no anchor or alias. */
herd_status_t scn_read_file(const char *path, char **out, size_t *len,
                            char *err, size_t errlen);
herd_status_t scn_check_bytes(const char *text, size_t n, const char *name,
                              char *err, size_t errlen);
herd_status_t scn_check_no_aliases(struct fy_document *doc, const char *name,
                                   char *err, size_t errlen);

/* Parse a mapping node against a key table. */
herd_status_t scn_map(scn_ctx_t *c, struct fy_node *n, void *base,
                      const scn_field_t *table);
/* Find a key in a table; NULL if absent. */
const scn_field_t *scn_field_find(const scn_field_t *table, const char *key,
                                  size_t keylen);
/* Field parser of a nested mapping (f->sub). */
herd_status_t scn_f_map(scn_ctx_t *c, struct fy_node *n, void *base,
                        const scn_field_t *f);
/* Field parser of the uninterpreted DDP section. */
herd_status_t scn_f_ddp(scn_ctx_t *c, struct fy_node *n, void *base,
                        const scn_field_t *f);
/* Field parser of the uninterpreted FSDP section. */
herd_status_t scn_f_fsdp(scn_ctx_t *c, struct fy_node *n, void *base,
                         const scn_field_t *f);
/* Field parser of the uninterpreted 3D-parallel section. */
herd_status_t scn_f_parallel(scn_ctx_t *c, struct fy_node *n, void *base,
                             const scn_field_t *f);
/* Set one parallel key (replacing an earlier value). */
herd_status_t scn_parallel_put(trace_scenario_t *sc, const char *key,
                               const char *value, int line, int col, int flow);
/* Set one FSDP key (replacing an earlier value). */
herd_status_t scn_fsdp_put(trace_scenario_t *sc, const char *key,
                           const char *value, int line, int col, int flow);
/* Set one DDP key (replacing an earlier value). */
herd_status_t scn_ddp_put(trace_scenario_t *sc, const char *key,
                          const char *value, int line, int col, int flow);
/* Make `kind` the workload; in a file, a second kind is an error. */
herd_status_t scn_workload_kind(scn_ctx_t *c, struct fy_node *n,
                                trace_wl_kind_t kind);
/* Free stragglers.grads items and the array. */
void scn_grads_free(trace_grad_straggler_t *g, size_t n);
/* Point sc->sim's arrays at the scenario's own. */
void scn_sync(trace_scenario_t *sc);

#endif
