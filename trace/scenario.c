/* trace/scenario.c - read scenario files (YAML, with libfyaml): build the
 * document, walk it against the key tables of scenario_fields.c, report
 * errors with file:line:column, apply `--set key=value` overrides and
 * check what spans sections. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/escape.h"
#include "trace/scenario_int.h"

/* The 1-based place of a node: a scalar's token, else its first child. */
int scn_node_mark(struct fy_node *n, int *line, int *col, int depth)
{
    if (!n || depth > 64)
        return 0;
    if (fy_node_is_scalar(n)) {
        struct fy_token *t = fy_node_get_scalar_token(n);
        const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
        if (!m)
            return 0;
        *line = m->line + 1;
        *col = m->column + 1;
        return 1;
    }
    void *it = NULL;
    if (fy_node_is_mapping(n)) {
        struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);
        return p && scn_node_mark(fy_node_pair_key(p), line, col, depth + 1);
    }
    return scn_node_mark(fy_node_sequence_iterate(n, &it), line, col,
                         depth + 1);
}

herd_status_t scn_error(scn_ctx_t *c, struct fy_node *n, const char *fmt, ...)
{
    int line = c->line, col = c->col;
    scn_node_mark(n, &line, &col, 0);
    int k;
    if (c->from_set) /* "--set KEY: ..." already says where */
        k = snprintf(c->err, c->errlen, "%s: %s%s", c->file, c->path,
                     c->path[0] ? ": " : "");
    else if (line > 0)
        k = snprintf(c->err, c->errlen, "%s:%d:%d: %s: ", c->file, line, col,
                     c->path[0] ? c->path : "(top)");
    else
        k = snprintf(c->err, c->errlen, "%s: %s: ", c->file,
                     c->path[0] ? c->path : "(top)");
    if (k >= 0 && (size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    core_escape_msg(c->err, c->errlen); /* keys and values from the file */
    return HERD_ERR_PARSE;
}

const scn_field_t *scn_field_find(const scn_field_t *table, const char *key,
                                  size_t keylen)
{
    for (const scn_field_t *f = table; f->key; f++)
        if (strlen(f->key) == keylen && !strncmp(f->key, key, keylen))
            return f;
    return NULL;
}

static herd_status_t scn_unknown_key(scn_ctx_t *c, struct fy_node *key,
                                     const char *name, const scn_field_t *table)
{
    char keys[512];
    size_t k = 0;
    keys[0] = '\0';
    for (const scn_field_t *f = table; f->key && k < sizeof(keys); f++) {
        int w = snprintf(keys + k, sizeof(keys) - k, "%s%s",
                         f == table ? "" : ", ", f->key);
        k += w > 0 ? (size_t)w : 0;
    }
    return scn_error(c, key, "unknown key '%s'; expected one of: %s", name,
                     keys);
}

/* Append ".key" to the message path; returns the old length. */
static size_t scn_path_push(scn_ctx_t *c, const char *key)
{
    size_t old = strlen(c->path);
    snprintf(c->path + old, sizeof(c->path) - old, "%s%s", old ? "." : "", key);
    return old;
}

static herd_status_t scn_pair(scn_ctx_t *c, struct fy_node_pair *p, void *base,
                              const scn_field_t *table)
{
    struct fy_node *key = fy_node_pair_key(p);
    const char *name =
        key && fy_node_is_scalar(key) ? fy_node_get_scalar0(key) : NULL;
    if (!name)
        return scn_error(c, key, "expected a plain key");
    const scn_field_t *f = scn_field_find(table, name, strlen(name));
    if (!f)
        return scn_unknown_key(c, key, name, table);
    int line = c->line, col = c->col;
    scn_node_mark(key, &c->line, &c->col, 0);
    size_t old = scn_path_push(c, name);
    herd_status_t st = f->fn(c, fy_node_pair_value(p), base, f);
    if (!st) {
        /* keep the path of the failing key in the message otherwise */
        c->path[old] = '\0';
        c->line = line;
        c->col = col;
    }
    return st;
}

herd_status_t scn_map(scn_ctx_t *c, struct fy_node *n, void *base,
                      const scn_field_t *table)
{
    if (!n || !fy_node_is_mapping(n))
        return scn_error(c, n,
                         "expected a mapping (key: value lines or "
                         "{key: value})");
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        herd_status_t st = scn_pair(c, p, base, table);
        if (st)
            return st;
    }
    return HERD_OK;
}

herd_status_t scn_f_map(scn_ctx_t *c, struct fy_node *n, void *base,
                        const scn_field_t *f)
{
    return scn_map(c, n, (char *)base + f->off, f->sub);
}

/* Set key in a section kept as strings (ddp, fsdp), replacing an
 * earlier value. */
static herd_status_t scn_kv_put(trace_kv_t **list, size_t *n, const char *key,
                                const char *value, int line, int col, int flow)
{
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v)
        goto fail;
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*list)[i].key, key)) {
            free((*list)[i].key);
            free((*list)[i].value);
            (*list)[i] = (trace_kv_t){k, v, line, col, flow};
            return HERD_OK;
        }
    trace_kv_t *grown = realloc(*list, (*n + 1) * sizeof(*grown));
    if (!grown)
        goto fail;
    *list = grown;
    (*list)[(*n)++] = (trace_kv_t){k, v, line, col, flow};
    return HERD_OK;
fail:
    free(k);
    free(v);
    return HERD_ERR_NO_MEMORY;
}

herd_status_t scn_ddp_put(trace_scenario_t *sc, const char *key,
                          const char *value, int line, int col, int flow)
{
    return scn_kv_put(&sc->ddp, &sc->nddp, key, value, line, col, flow);
}

/* --set ddp.comm_hook.rank=4 where the section gives comm_hook as a
 * mapping: set `rank` inside it (replacing or adding the entry), so the
 * scenario reads as if the file had said so (herd sweep then knows the
 * file's own value). HERD_ERR_NOT_FOUND: no such mapping. */
static herd_status_t scn_ddp_merge(trace_scenario_t *sc, const char *key,
                                   const char *value)
{
    const char *dot = strchr(key, '.');
    trace_kv_t *kv = NULL;
    for (size_t i = 0; dot && i < sc->nddp; i++)
        if (strlen(sc->ddp[i].key) == (size_t)(dot - key) &&
            !strncmp(sc->ddp[i].key, key, (size_t)(dot - key)))
            kv = &sc->ddp[i];
    size_t n = kv ? strlen(kv->value) : 0;
    if (!kv || !kv->flow || n < 2 || kv->value[0] != '{' ||
        kv->value[n - 1] != '}' || strpbrk(value, "{}[],:") ||
        strpbrk(dot + 1, "{}[],: "))
        return HERD_ERR_NOT_FOUND;
    /* the one-line flow text libfyaml wrote: "{a: 1, b: 2}" */
    size_t cap = n + strlen(key) + strlen(value) + 8;
    char *out = malloc(cap), *body = strndup(kv->value + 1, n - 2);
    if (!out || !body) {
        free(out);
        free(body);
        return HERD_ERR_NO_MEMORY;
    }
    size_t o = 0;
    int found = 0;
    out[o++] = '{';
    char *save = NULL;
    for (char *it = strtok_r(body, ",", &save); it;
         it = strtok_r(NULL, ",", &save)) {
        while (*it == ' ')
            it++;
        size_t klen = strcspn(it, ":");
        int hit = klen == strlen(dot + 1) && !strncmp(it, dot + 1, klen);
        o += (size_t)snprintf(out + o, cap - o, "%s%s%s%s", o > 1 ? ", " : "",
                              hit ? dot + 1 : it, hit ? ": " : "",
                              hit ? value : "");
        found |= hit;
    }
    if (!found)
        o += (size_t)snprintf(out + o, cap - o, "%s%s: %s", o > 1 ? ", " : "",
                              dot + 1, value);
    snprintf(out + o, cap - o, "}");
    free(body);
    free(kv->value);
    kv->value = out;
    kv->line = kv->column = 0; /* now --set's */
    return HERD_OK;
}

herd_status_t scn_fsdp_put(trace_scenario_t *sc, const char *key,
                           const char *value, int line, int col, int flow)
{
    return scn_kv_put(&sc->fsdp, &sc->nfsdp, key, value, line, col, flow);
}

herd_status_t scn_parallel_put(trace_scenario_t *sc, const char *key,
                               const char *value, int line, int col, int flow)
{
    return scn_kv_put(&sc->parallel, &sc->nparallel, key, value, line, col,
                      flow);
}

/* The text of a DDP (or FSDP) value: a scalar as written, else one-line
 * flow YAML. */
static herd_status_t scn_ddp_value(scn_ctx_t *c, const char *key,
                                   struct fy_node *k, struct fy_node *v,
                                   trace_wl_kind_t kind)
{
    int line = 0, col = 0;
    herd_status_t (*put)(trace_scenario_t *, const char *, const char *, int,
                         int, int) = kind == TRACE_WL_FSDP ? scn_fsdp_put
                                     : kind == TRACE_WL_PARALLEL
                                         ? scn_parallel_put
                                         : scn_ddp_put;
    const char *sec = kind == TRACE_WL_FSDP       ? "fsdp"
                      : kind == TRACE_WL_PARALLEL ? "parallel"
                                                  : "ddp";
    /* an empty {} or [] has no scalar to point at: use its key's place,
     * so the model's message still names the file, not --set */
    if (!scn_node_mark(v, &line, &col, 0))
        scn_node_mark(k, &line, &col, 0);
    if (v && fy_node_is_scalar(v))
        return put(c->sc, key, fy_node_get_scalar0(v), line, col, 0);
    if (!v)
        return scn_error(c, v, "expected a value for %s.%s", sec, key);
    char *text = fy_emit_node_to_string(v, FYECF_MODE_FLOW_ONELINE |
                                               FYECF_NO_ENDING_NEWLINE);
    if (!text)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = put(c->sc, key, text, line, col, 1);
    free(text);
    return st;
}

/* A section of settings kept as strings for the workload model. */
static herd_status_t scn_kv_section(scn_ctx_t *c, struct fy_node *n,
                                    trace_wl_kind_t kind)
{
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        struct fy_node *k = fy_node_pair_key(p);
        const char *key =
            k && fy_node_is_scalar(k) ? fy_node_get_scalar0(k) : NULL;
        if (!key || !*key)
            return scn_error(c, k, "expected a plain key");
        herd_status_t st =
            scn_ddp_value(c, key, k, fy_node_pair_value(p), kind);
        if (st)
            return st;
    }
    return scn_workload_kind(c, n, kind);
}

herd_status_t scn_f_ddp(scn_ctx_t *c, struct fy_node *n, void *base,
                        const scn_field_t *f)
{
    (void)base;
    (void)f;
    if (!n || !fy_node_is_mapping(n))
        return scn_error(c, n,
                         "expected a mapping of DDP settings, e.g. "
                         "{model: resnet50.json, bucket_cap_mb: 25}");
    return scn_kv_section(c, n, TRACE_WL_DDP);
}

herd_status_t scn_f_fsdp(scn_ctx_t *c, struct fy_node *n, void *base,
                         const scn_field_t *f)
{
    (void)base;
    (void)f;
    if (!n || !fy_node_is_mapping(n))
        return scn_error(c, n,
                         "expected a mapping of FSDP settings, e.g. "
                         "{model: gpt2_small, strategy: FULL_SHARD}");
    return scn_kv_section(c, n, TRACE_WL_FSDP);
}

herd_status_t scn_f_parallel(scn_ctx_t *c, struct fy_node *n, void *base,
                             const scn_field_t *f)
{
    (void)base;
    (void)f;
    if (!n || !fy_node_is_mapping(n))
        return scn_error(c, n,
                         "expected a mapping of parallel settings, e.g. "
                         "{model: gpt_7b, tp: 8, pp: 4, dp: 16}");
    return scn_kv_section(c, n, TRACE_WL_PARALLEL);
}

herd_status_t scn_workload_kind(scn_ctx_t *c, struct fy_node *n,
                                trace_wl_kind_t kind)
{
    static const char *names[] = {"none", "trace", "sweep",
                                  "ddp",  "fsdp",  "parallel"};
    trace_wl_kind_t old = c->sc->wl_kind;
    if (!c->from_set && old != TRACE_WL_NONE && old != kind)
        return scn_error(c, n,
                         "the workload is already a %s; expected one "
                         "of trace, sweep, ddp, fsdp or parallel",
                         names[old]);
    c->sc->wl_kind = kind;
    return HERD_OK;
}

void scn_sync(trace_scenario_t *sc)
{
    sc->sim.ranks = sc->rank_ovr;
    sc->sim.nranks_overrides = sc->nrank_ovr;
    sc->sim.links = sc->link_ovr;
    sc->sim.nlink_overrides = sc->nlink_ovr;
    sc->sim.faults = sc->faults;
    sc->sim.nfaults = sc->nfaults;
}

herd_status_t trace_scenario_create(trace_scenario_t **out)
{
    trace_scenario_t *sc = calloc(1, sizeof(*sc));
    if (!sc || !(sc->path = strdup(""))) {
        free(sc);
        return HERD_ERR_NO_MEMORY;
    }
    herd_sim_opts_init(&sc->sim);
    sc->data.prefetch_factor = 2; /* DataLoader's default */
    sc->sweep = (trace_sweep_t){.coll = HERD_COLL_ALL_REDUCE,
                                .algos = {HERD_ALGO_AUTO},
                                .nalgos = 1,
                                .min_bytes = 8,
                                .max_bytes = 128u << 20,
                                .factor = 2,
                                .dtype = HERD_FLOAT32,
                                .op = HERD_SUM,
                                .iters = 5,
                                .warmup = 1};
    *out = sc;
    return HERD_OK;
}

void trace_scenario_destroy(trace_scenario_t *sc)
{
    if (!sc)
        return;
    for (size_t i = 0; i < sc->nddp; i++) {
        free(sc->ddp[i].key);
        free(sc->ddp[i].value);
    }
    free(sc->ddp);
    for (size_t i = 0; i < sc->nfsdp; i++) {
        free(sc->fsdp[i].key);
        free(sc->fsdp[i].value);
    }
    free(sc->fsdp);
    for (size_t i = 0; i < sc->nparallel; i++) {
        free(sc->parallel[i].key);
        free(sc->parallel[i].value);
    }
    free(sc->parallel);
    free(sc->trace_path);
    free(sc->faults);
    scn_grads_free(sc->grads, sc->ngrads);
    free(sc->data_slow);
    free(sc->link_ovr);
    free(sc->rank_ovr);
    free(sc->name);
    free(sc->path);
    free(sc);
}

/* Build a YAML document, turning libfyaml's first collected diagnostic
 * into "name:line:col: message". `text` NULL: read the file `name`; the
 * document may point into the text, so *owned (the file's bytes) is freed
 * by the caller after the document. */
static herd_status_t scn_doc_build(const char *text, const char *name,
                                   struct fy_document **out, char **owned,
                                   char *err, size_t errlen)
{
    size_t n = 0;
    *owned = NULL;
    herd_status_t st;
    if (!text) {
        if ((st = scn_read_file(name, owned, &n, err, errlen)))
            return st;
        text = *owned;
    } else {
        n = strlen(text);
    }
    if ((st = scn_check_bytes(text, n, name, err, errlen)))
        goto cleanup;
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    struct fy_diag *diag = fy_diag_create(&dc);
    if (!diag) {
        st = HERD_ERR_NO_MEMORY;
        goto cleanup;
    }
    fy_diag_set_collect_errors(diag, true);
    /* No FYPCF_RESOLVE_DOCUMENT: aliases must not be expanded (see
     * scenario_input.c); scn_check_no_aliases rejects them instead. */
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET, .diag = diag};
    struct fy_document *doc = fy_document_build_from_string(&cfg, text, n);
    if (!doc) {
        void *it = NULL;
        struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
        if (e)
            snprintf(err, errlen, "%s:%d:%d: %s", name, e->line, e->column,
                     e->msg ? e->msg : "malformed YAML");
        else
            snprintf(err, errlen, "%s: empty or unreadable YAML", name);
        core_escape_msg(err, errlen);
        st = HERD_ERR_PARSE;
    }
    fy_diag_destroy(diag);
    if (!st && (st = scn_check_no_aliases(doc, name, err, errlen)))
        fy_document_destroy(doc);
    if (!st) {
        *out = doc;
        return HERD_OK;
    }
cleanup:
    free(*owned);
    *owned = NULL;
    return st;
}

static herd_status_t scn_load_doc(const char *text, const char *name,
                                  const char *base_dir, trace_scenario_t *sc,
                                  char *err, size_t errlen)
{
    struct fy_document *doc = NULL;
    char *owned = NULL;
    herd_status_t st = scn_doc_build(text, name, &doc, &owned, err, errlen);
    if (st)
        return st;
    scn_ctx_t c = {.sc = sc,
                   .file = name,
                   .base_dir = base_dir,
                   .err = err,
                   .errlen = errlen};
    struct fy_node *root = fy_document_root(doc);
    if (!root)
        st = scn_error(&c, NULL,
                       "empty scenario; expected a mapping with "
                       "cluster, collectives, workload, ... sections");
    else
        st = scn_map(&c, root, sc, scn_top_fields);
    fy_document_destroy(doc);
    free(owned);
    scn_sync(sc);
    return st;
}

static herd_status_t scn_load(const char *text, const char *name,
                              const char *base_dir, trace_scenario_t **out,
                              char *err, size_t errlen)
{
    trace_scenario_t *sc;
    herd_status_t st = trace_scenario_create(&sc);
    if (st)
        return st;
    char *path = strdup(name);
    if (!path) {
        trace_scenario_destroy(sc);
        return HERD_ERR_NO_MEMORY;
    }
    free(sc->path);
    sc->path = path;
    st = scn_load_doc(text, name, base_dir, sc, err, errlen);
    if (!st)
        st = trace_scenario_validate(sc, err, errlen);
    if (st) {
        trace_scenario_destroy(sc);
        return st;
    }
    *out = sc;
    return HERD_OK;
}

herd_status_t trace_scenario_load(const char *path, trace_scenario_t **out,
                                  char *err, size_t errlen)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    return scn_load(NULL, path, slash ? dir : NULL, out, err, errlen);
}

herd_status_t trace_scenario_load_string(const char *text, const char *name,
                                         trace_scenario_t **out, char *err,
                                         size_t errlen)
{
    return scn_load(text, name, NULL, out, err, errlen);
}

/* Walk the dotted key down the tables and parse the value at its end. */
static herd_status_t scn_set_path(scn_ctx_t *c, const char *key,
                                  struct fy_node *value)
{
    const scn_field_t *table = scn_top_fields;
    void *base = c->sc;
    for (const char *p = key;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        const scn_field_t *f = scn_field_find(table, p, len);
        if (!f) {
            char name[SCN_PATH_MAX];
            snprintf(name, sizeof(name), "%.*s", (int)len, p);
            return scn_unknown_key(c, NULL, name, table);
        }
        if (!dot)
            return f->fn(c, value, base, f);
        if (!f->sub || f->item_size)
            return scn_error(c, NULL, "'%s' has no sub-keys", f->key);
        base = (char *)base + f->off;
        table = f->sub;
        p = dot + 1;
    }
}

herd_status_t trace_scenario_set(trace_scenario_t *sc, const char *key,
                                 const char *value, char *err, size_t errlen)
{
    if (!strncmp(key, "ddp.", 4) || !strncmp(key, "workload.ddp.", 13)) {
        const char *k = key + (key[0] == 'd' ? 4 : 13);
        if (!*k) {
            snprintf(err, errlen, "--set %s: missing the DDP key", key);
            return HERD_ERR_PARSE;
        }
        sc->wl_kind = TRACE_WL_DDP;
        herd_status_t st = scn_ddp_merge(sc, k, value);
        if (st != HERD_ERR_NOT_FOUND)
            return st;
        return scn_ddp_put(sc, k, value, 0, 0,
                           value[0] == '[' || value[0] == '{');
    }
    if (!strncmp(key, "fsdp.", 5) || !strncmp(key, "workload.fsdp.", 14)) {
        const char *k = key + (key[0] == 'f' ? 5 : 14);
        if (!*k) {
            snprintf(err, errlen, "--set %s: missing the FSDP key", key);
            return HERD_ERR_PARSE;
        }
        sc->wl_kind = TRACE_WL_FSDP;
        return scn_fsdp_put(sc, k, value, 0, 0,
                            value[0] == '[' || value[0] == '{');
    }
    if (!strncmp(key, "parallel.", 9) ||
        !strncmp(key, "workload.parallel.", 18)) {
        const char *k = key + (key[0] == 'p' ? 9 : 18);
        if (!*k) {
            snprintf(err, errlen, "--set %s: missing the parallel key", key);
            return HERD_ERR_PARSE;
        }
        sc->wl_kind = TRACE_WL_PARALLEL;
        return scn_parallel_put(sc, k, value, 0, 0,
                                value[0] == '[' || value[0] == '{');
    }
    char name[SCN_PATH_MAX + 8];
    snprintf(name, sizeof(name), "--set %s", key);
    struct fy_document *doc = NULL;
    char *owned = NULL;
    herd_status_t st = scn_doc_build(value, name, &doc, &owned, err, errlen);
    if (st)
        return st;
    scn_ctx_t c = {
        .sc = sc, .file = name, .err = err, .errlen = errlen, .from_set = 1};
    st = scn_set_path(&c, key, fy_document_root(doc));
    fy_document_destroy(doc);
    free(owned);
    scn_sync(sc);
    return st;
}

void trace_scenario_dirname(const trace_scenario_t *sc, char *buf, size_t len)
{
    const char *name = sc->name && *sc->name ? sc->name : "sim";
    size_t k = 0;
    for (; name[k] && k < 100 && k + 1 < len; k++) {
        char ch = name[k];
        int keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9') || strchr("._+-", ch);
        buf[k] = keep && !(k == 0 && ch == '.') ? ch : '_';
    }
    if (len)
        buf[k] = '\0';
}

int trace_scenario_world_size(const trace_scenario_t *sc)
{
    if (sc->sim.world_size > 0)
        return sc->sim.world_size;
    return sc->sim.cluster.nodes * sc->sim.cluster.gpus_per_node;
}

const trace_kv_t *trace_scenario_ddp_get(const trace_scenario_t *sc,
                                         const char *key)
{
    for (size_t i = 0; i < sc->nddp; i++)
        if (!strcmp(sc->ddp[i].key, key))
            return &sc->ddp[i];
    return NULL;
}

/* Bounds on the work a sweep may ask for (sizes, and collectives in all). */
#define SCN_MAX_SWEEP_SIZES 4096
#define SCN_MAX_SWEEP_CALLS 1e7

#define SCN_FAIL(...)                                                          \
    do {                                                                       \
        int k_ = snprintf(err, errlen,                                         \
                          "%s: ", sc->path[0] ? sc->path : "scenario");        \
        if (k_ >= 0 && (size_t)k_ < errlen)                                    \
            snprintf(err + k_, errlen - (size_t)k_, __VA_ARGS__);              \
        return HERD_ERR_PARSE;                                                 \
    } while (0)

static herd_status_t scn_validate_ranks(const trace_scenario_t *sc, int world,
                                        char *err, size_t errlen)
{
    for (size_t i = 0; i < sc->nrank_ovr; i++)
        if (sc->rank_ovr[i].rank >= world)
            SCN_FAIL("stragglers.ranks[%zu]: rank %d does not exist (world "
                     "size %d)",
                     i, sc->rank_ovr[i].rank, world);
    for (size_t i = 0; i < sc->nlink_ovr; i++) {
        const herd_link_override_t *l = &sc->link_ovr[i];
        if (l->a >= world || l->b >= world || l->a == l->b)
            SCN_FAIL("stragglers.links[%zu]: expected two different ranks "
                     "below %d, got a: %d, b: %d",
                     i, world, l->a, l->b);
    }
    for (size_t i = 0; i < sc->ngrads; i++)
        if (sc->grads[i].rank >= world)
            SCN_FAIL("stragglers.grads[%zu]: rank %d does not exist (world "
                     "size %d)",
                     i, sc->grads[i].rank, world);
    for (size_t i = 0; i < sc->ndata_slow; i++)
        if (sc->data_slow[i].rank >= world)
            SCN_FAIL("stragglers.data[%zu]: rank %d does not exist (world "
                     "size %d)",
                     i, sc->data_slow[i].rank, world);
    for (size_t i = 0; i < sc->nfaults; i++) {
        const herd_fault_t *f = &sc->faults[i];
        if (f->rank >= world)
            SCN_FAIL("faults[%zu]: rank %d does not exist (world size %d)", i,
                     f->rank, world);
        if (f->at_time < 0 && f->at_step < 0)
            SCN_FAIL("faults[%zu]: expected 'at: <time>' or 'at_step: <n>'", i);
    }
    return HERD_OK;
}

herd_status_t trace_scenario_validate(const trace_scenario_t *sc, char *err,
                                      size_t errlen)
{
    const herd_cluster_t *cl = &sc->sim.cluster;
    long full = (long)cl->nodes * cl->gpus_per_node;
    if (full > (1L << 20))
        SCN_FAIL("cluster: %d nodes x %d GPUs is more than %d ranks", cl->nodes,
                 cl->gpus_per_node, 1 << 20);
    if (sc->sim.world_size > full)
        SCN_FAIL("cluster.world_size: %d is more than nodes x gpus_per_node "
                 "= %ld",
                 sc->sim.world_size, full);
    herd_status_t st =
        scn_validate_ranks(sc, trace_scenario_world_size(sc), err, errlen);
    if (st)
        return st;
    if (sc->wl_kind == TRACE_WL_SWEEP) {
        if (sc->sweep.min_bytes == 0 ||
            sc->sweep.min_bytes > sc->sweep.max_bytes)
            SCN_FAIL("workload.sweep: expected 0 < min <= max, got min %llu, "
                     "max %llu bytes",
                     (unsigned long long)sc->sweep.min_bytes,
                     (unsigned long long)sc->sweep.max_bytes);
        /* one small factor must not ask for hours of collectives */
        const trace_sweep_t *sw = &sc->sweep;
        double sizes =
            floor(log((double)sw->max_bytes / (double)sw->min_bytes) /
                      log(sw->factor) +
                  1e-9) +
            1;
        double calls = sizes * sw->nalgos * (sw->iters + sw->warmup);
        if (sizes > SCN_MAX_SWEEP_SIZES)
            SCN_FAIL("workload.sweep: min %llu B to max %llu B by factor %g "
                     "is %.0f sizes; the limit is %d (a larger factor)",
                     (unsigned long long)sw->min_bytes,
                     (unsigned long long)sw->max_bytes, sw->factor, sizes,
                     SCN_MAX_SWEEP_SIZES);
        if (calls > SCN_MAX_SWEEP_CALLS)
            SCN_FAIL("workload.sweep: %.0f sizes x %d algorithms x %d "
                     "iters+warmup is %.0f collectives; the limit is %.0f",
                     sizes, sw->nalgos, sw->iters + sw->warmup, calls,
                     SCN_MAX_SWEEP_CALLS);
    }
    return HERD_OK;
}
