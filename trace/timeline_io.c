/* trace/timeline_io.c - timelines on disk: Chrome trace event JSON (each
 * event dumped with jansson, the file streamed) and a tab-separated table
 * for gnuplot; and reading the JSON back.
 *
 * JSON: {"displayTimeUnit": "ns", "otherData": {format, version, meta},
 * "traceEvents": [...]} with process_name / thread_name metadata (pid =
 * node, tid = rank), "ph": "X" slices (ts and dur in microseconds) and
 * "ph": "i" markers; exact nanoseconds are kept in args.start_ns/end_ns. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/escape.h"
#include "trace/timeline_int.h"

#define TLIO_DUMP (JSON_COMPACT | JSON_REAL_PRECISION(15))

static json_t *tlio_args(const herd_tl_rec_t *r)
{
    json_t *a = json_object();
    if (r->kind == HERD_TL_COLL) {
        json_object_set_new(a, "bytes", json_integer((json_int_t)r->bytes));
        json_object_set_new(a, "count", json_integer((json_int_t)r->count));
        json_object_set_new(a, "dtype", json_string(herd_dtype_name(r->dtype)));
        json_object_set_new(a, "op", json_string(herd_op_name(r->op)));
        json_object_set_new(a, "algorithm",
                            json_string(herd_algo_name(r->algo)));
        json_object_set_new(a, "peer", json_integer(r->peer));
    }
    if (r->label)
        json_object_set_new(a, "label", json_string(r->label));
    json_object_set_new(a, "seq", json_integer((json_int_t)r->seq));
    json_object_set_new(a, "group", json_integer(r->group));
    json_object_set_new(a, "status", json_string(herd_status_name(r->status)));
    json_object_set_new(a, "start_ns", json_integer((json_int_t)r->start_ns));
    json_object_set_new(a, "end_ns", json_integer((json_int_t)r->end_ns));
    return a;
}

static json_t *tlio_event(const herd_tl_rec_t *r)
{
    json_t *e = json_object();
    json_object_set_new(e, "name", json_string(trace_tl_name(r)));
    json_object_set_new(e, "cat", json_string(trace_tl_category(r->kind)));
    int instant = r->kind == HERD_TL_MARK;
    json_object_set_new(e, "ph", json_string(instant ? "i" : "X"));
    json_object_set_new(e, "ts", json_real((double)r->start_ns / 1e3));
    if (instant)
        json_object_set_new(e, "s", json_string("t"));
    else
        json_object_set_new(e, "dur",
                            json_real((double)(r->end_ns - r->start_ns) / 1e3));
    json_object_set_new(e, "pid", json_integer(r->node));
    json_object_set_new(e, "tid", json_integer(r->rank));
    json_object_set_new(e, "args", tlio_args(r));
    return e;
}

static int tlio_dump(FILE *f, json_t *e, int *first)
{
    if (!e)
        return -1;
    fputs(*first ? "\n" : ",\n", f);
    *first = 0;
    int rc = json_dumpf(e, f, TLIO_DUMP);
    json_decref(e);
    return rc;
}

static json_t *tlio_meta_event(const char *what, int pid, int tid,
                               const char *fmt, int id)
{
    char name[48];
    snprintf(name, sizeof(name), fmt, id);
    return json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", what, "ph", "M",
                     "pid", pid, "tid", tid, "args", "name", name);
}

/* process_name per node and thread_name per rank, once each (records
 * are sorted by rank, so a rank's records are together). */
static int tlio_metadata(const trace_timeline_t *tl, FILE *f, int *first)
{
    int max_node = 0, last_rank = -1, rc = 0;
    for (size_t i = 0; i < tl->n; i++)
        max_node = tl->recs[i].node > max_node ? tl->recs[i].node : max_node;
    char *seen = calloc((size_t)max_node + 1, 1);
    if (!seen)
        return -1;
    for (size_t i = 0; i < tl->n && !rc; i++) {
        const herd_tl_rec_t *r = &tl->recs[i];
        if (r->rank == last_rank || r->node < 0)
            continue;
        last_rank = r->rank;
        if (!seen[r->node])
            rc = tlio_dump(
                f,
                tlio_meta_event("process_name", r->node, 0, "node %d", r->node),
                first);
        seen[r->node] = 1;
        if (!rc)
            rc = tlio_dump(f,
                           tlio_meta_event("thread_name", r->node, r->rank,
                                           "rank %d", r->rank),
                           first);
    }
    free(seen);
    return rc;
}

static json_t *tlio_other(const trace_timeline_t *tl)
{
    json_t *o = json_pack("{s:s, s:i}", "format", TRACE_TL_FORMAT, "version",
                          TRACE_TL_VERSION);
    for (size_t i = 0; o && i < tl->nmeta; i++)
        if (tl->meta[i].value)
            json_object_set_new(o, tl->meta[i].key,
                                json_string(tl->meta[i].value));
    return o;
}

static int tlio_write_chrome(const trace_timeline_t *tl, FILE *f)
{
    json_t *other = tlio_other(tl);
    if (!other)
        return -1;
    fputs("{\"displayTimeUnit\": \"ns\",\n\"otherData\": ", f);
    int rc = json_dumpf(other, f, TLIO_DUMP);
    json_decref(other);
    fputs(",\n\"traceEvents\": [", f);
    int first = 1;
    if (!rc)
        rc = tlio_metadata(tl, f, &first);
    for (size_t i = 0; i < tl->n && !rc; i++)
        rc = tlio_dump(f, tlio_event(&tl->recs[i]), &first);
    fputs("\n]}\n", f);
    return rc || ferror(f) ? -1 : 0;
}

static herd_status_t tlio_open(const char *path, FILE **f, char *err,
                               size_t errlen)
{
    *f = fopen(path, "w");
    if (*f)
        return HERD_OK;
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return HERD_ERR_IO;
}

static herd_status_t tlio_close(const char *path, FILE *f, int rc, char *err,
                                size_t errlen)
{
    if (fclose(f) || rc) {
        snprintf(err, errlen, "%s: write failed", path);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}

/* Open, write with `emit`, close: both output formats report open and
 * write failures the same way. */
typedef int (*tlio_writer_cb)(const trace_timeline_t *tl, FILE *f);

static herd_status_t tlio_write_file(const trace_timeline_t *tl,
                                     const char *path, tlio_writer_cb emit,
                                     char *err, size_t errlen)
{
    FILE *f;
    herd_status_t st = tlio_open(path, &f, err, errlen);
    if (st)
        return st;
    return tlio_close(path, f, emit(tl, f), err, errlen);
}

herd_status_t trace_timeline_write_chrome(const trace_timeline_t *tl,
                                          const char *path, char *err,
                                          size_t errlen)
{
    return tlio_write_file(tl, path, tlio_write_chrome, err, errlen);
}

/* A label as one TSV field: tabs and newlines would split the row. */
static void tlio_tsv_field(FILE *f, const char *s)
{
    if (!s || !*s) {
        fputc('-', f);
        return;
    }
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/* Colour index of a label: its order of first appearance (capped). */
static int tlio_label_id(const char **seen, int *nseen, const char *label)
{
    if (!label)
        return 0;
    for (int i = 0; i < *nseen; i++)
        if (!strcmp(seen[i], label))
            return i + 1;
    if (*nseen == 63)
        return 63;
    seen[(*nseen)++] = label;
    return *nseen;
}

static int tlio_write_tsv(const trace_timeline_t *tl, FILE *f)
{
    const char *seen[63];
    int nseen = 0;
    fputs("# herd-timeline v1: times in microseconds\n"
          "rank\tnode\tgroup\tseq\tkind\tname\talgo\tbytes\tstart_us\t"
          "end_us\tdur_us\tlabel\tlabel_id\n",
          f);
    for (size_t i = 0; i < tl->n; i++) {
        const herd_tl_rec_t *r = &tl->recs[i];
        fprintf(f, "%d\t%d\t%d\t%" PRIu64 "\t%s\t", r->rank, r->node, r->group,
                r->seq, trace_tl_category(r->kind));
        tlio_tsv_field(f, trace_tl_name(r));
        fprintf(f, "\t%s\t%" PRIu64 "\t%.3f\t%.3f\t%.3f\t",
                r->kind == HERD_TL_COLL ? herd_algo_name(r->algo) : "-",
                r->kind == HERD_TL_COLL ? r->bytes : 0,
                (double)r->start_ns / 1e3, (double)r->end_ns / 1e3,
                (double)(r->end_ns - r->start_ns) / 1e3);
        tlio_tsv_field(f, r->label);
        fprintf(f, "\t%d\n", tlio_label_id(seen, &nseen, r->label));
    }
    return ferror(f) ? -1 : 0;
}

herd_status_t trace_timeline_write_tsv(const trace_timeline_t *tl,
                                       const char *path, char *err,
                                       size_t errlen)
{
    return tlio_write_file(tl, path, tlio_write_tsv, err, errlen);
}

/* Reading: one event back into a record; 0 = not a herd op (skipped). */
static int tlio_kind(const char *cat, herd_tl_kind_t *kind)
{
    static const char *cats[] = {"coll", "compute", "wait", "mark"};
    for (int i = 0; i < 4; i++)
        if (cat && !strcmp(cat, cats[i])) {
            *kind = (herd_tl_kind_t)i;
            return 1;
        }
    return 0;
}

/* Times beyond 2^53 ns (104 days) are refused: a double of microseconds
 * (the Chrome "ts"/"dur") no longer holds them to the nanosecond, and no
 * run herd records lasts that long, so such a value is a damaged file. */
#define TLIO_MAX_NS (1ull << 53)

/* A time of an event: args[key] in ns when present (an integer), else
 * base + e[us_key] in microseconds. Returns 0, or -1 with `why` set. */
static int tlio_ns(json_t *args, const char *key, json_t *e, const char *us_key,
                   uint64_t base, uint64_t *out, char *why, size_t len)
{
    json_t *v = json_object_get(args, key);
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            (uint64_t)json_integer_value(v) > TLIO_MAX_NS) {
            snprintf(why, len,
                     "args.%s: expected a whole number of ns in [0, 2^53]",
                     key);
            return -1;
        }
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    json_t *u = json_object_get(e, us_key);
    double us = json_number_value(u);
    if (u && (!json_is_number(u) || !(us >= 0) || us * 1e3 > TLIO_MAX_NS)) {
        snprintf(why, len,
                 "%s: expected a non-negative number of microseconds "
                 "below 2^53 ns",
                 us_key);
        return -1;
    }
    *out = base + (uint64_t)(us * 1e3 + 0.5);
    return 0;
}

static const char *tlio_str(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

static void tlio_coll_args(herd_tl_rec_t *r, json_t *args)
{
    herd_algo_t algo;
    herd_dtype_t dt;
    herd_op_t op;
    if (!herd_algo_parse(tlio_str(args, "algorithm"), &algo))
        r->algo = algo;
    if (!herd_dtype_parse(tlio_str(args, "dtype"), &dt))
        r->dtype = dt;
    if (!herd_op_parse(tlio_str(args, "op"), &op))
        r->op = op;
    r->bytes = (uint64_t)json_integer_value(json_object_get(args, "bytes"));
    r->count = (uint64_t)json_integer_value(json_object_get(args, "count"));
    json_t *peer = json_object_get(args, "peer");
    r->peer = json_is_integer(peer) ? (int)json_integer_value(peer) : -1;
}

/* An integer field of the event in [0, hi]; 0, or -1 with `why` set. */
static int tlio_int(json_t *obj, const char *where, const char *key,
                    long long hi, int *out, char *why, size_t len)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > hi) {
        snprintf(why, len, "%s%s: expected a whole number in [0, %lld]", where,
                 key, hi);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

/* 1: a herd op into r; 0: another event (skipped); -1: a malformed or
 * impossible one, `why` says what. */
static int tlio_event_rec(json_t *e, herd_tl_rec_t *r, char *why, size_t len)
{
    const char *ph = json_string_value(json_object_get(e, "ph"));
    herd_tl_kind_t kind;
    if (!ph || (strcmp(ph, "X") && strcmp(ph, "i")) ||
        !tlio_kind(json_string_value(json_object_get(e, "cat")), &kind))
        return 0;
    json_t *args = json_object_get(e, "args");
    const char *name = json_string_value(json_object_get(e, "name"));
    *r = (herd_tl_rec_t){.kind = kind, .peer = -1};
    if (kind == HERD_TL_COLL && (!name || herd_coll_parse(name, &r->coll)))
        return 0;
    if (args && !json_is_object(args)) {
        snprintf(why, len, "args: expected an object");
        return -1;
    }
    if (!json_object_get(e, "tid")) {
        snprintf(why, len, "tid: missing; expected the rank");
        return -1;
    }
    if (tlio_int(e, "", "tid", 1 << 24, &r->rank, why, len) ||
        tlio_int(e, "", "pid", 1 << 24, &r->node, why, len) ||
        tlio_int(args, "args.", "group", INT32_MAX, &r->group, why, len))
        return -1;
    r->seq = (uint64_t)json_integer_value(json_object_get(args, "seq"));
    if (tlio_ns(args, "start_ns", e, "ts", 0, &r->start_ns, why, len) ||
        tlio_ns(args, "end_ns", e, "dur", r->start_ns, &r->end_ns, why, len))
        return -1;
    if (r->end_ns < r->start_ns || r->end_ns > TLIO_MAX_NS) {
        snprintf(why, len,
                 "ends at %llu ns, before it starts (%llu ns) or beyond "
                 "2^53 ns",
                 (unsigned long long)r->end_ns,
                 (unsigned long long)r->start_ns);
        return -1;
    }
    r->label = json_string_value(json_object_get(args, "label"));
    if (!r->label && kind == HERD_TL_MARK)
        r->label = name;
    if (r->label && core_escape_needed(r->label)) {
        /* labels reach terminals, plots and TSV columns */
        snprintf(why, len, "%s: expected printable text",
                 kind == HERD_TL_MARK && r->label == name ? "name"
                                                          : "args.label");
        return -1;
    }
    if (kind == HERD_TL_COLL)
        tlio_coll_args(r, args);
    return 1;
}

static herd_status_t tlio_events(json_t *root, trace_timeline_t *tl,
                                 const char *path, char *err, size_t errlen)
{
    json_t *events = json_is_object(root)
                         ? json_object_get(root, "traceEvents")
                         : root; /* the bare-array form is also valid */
    if (!json_is_array(events)) {
        snprintf(err, errlen,
                 "%s: expected a Chrome trace (an object with "
                 "traceEvents, or an array of events)",
                 path);
        return HERD_ERR_PARSE;
    }
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        herd_tl_rec_t r;
        char why[160] = "expected an object with ph, cat, name, ts, dur, "
                        "pid, tid";
        int ok =
            json_is_object(e) ? tlio_event_rec(e, &r, why, sizeof(why)) : -1;
        if (ok < 0) {
            snprintf(err, errlen, "%s: traceEvents[%zu]: %s", path, i, why);
            core_escape_msg(err, errlen);
            return HERD_ERR_PARSE;
        }
        if (ok && trace_timeline_add(tl, &r))
            return HERD_ERR_NO_MEMORY;
    }
    json_t *other = json_object_get(root, "otherData");
    json_t *ver = json_object_get(other, "version");
    if (json_is_integer(ver) && json_integer_value(ver) > TRACE_TL_VERSION) {
        snprintf(err, errlen,
                 "%s: otherData.version: %lld is newer than "
                 "this herd reads (%d)",
                 path, (long long)json_integer_value(ver), TRACE_TL_VERSION);
        return HERD_ERR_PARSE;
    }
    const char *key;
    json_t *v;
    json_object_foreach(other, key, v)
    {
        if (json_is_string(v) && core_escape_needed(json_string_value(v))) {
            snprintf(err, errlen, "%s: otherData.%s: expected printable text",
                     path, key);
            core_escape_msg(err, errlen);
            return HERD_ERR_PARSE;
        }
        if (json_is_string(v) && strcmp(key, "format") &&
            trace_timeline_set_meta(tl, key, json_string_value(v)))
            break; /* metadata beyond the table is not needed */
    }
    return HERD_OK;
}

herd_status_t trace_timeline_read_chrome(const char *path,
                                         trace_timeline_t **out, char *err,
                                         size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: cannot open: is a directory", path);
        return HERD_ERR_IO;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        if (jerr.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                     jerr.text);
        else
            snprintf(err, errlen, "%s", jerr.text);
        core_escape_msg(err, errlen); /* jansson quotes the bad text */
        return json_error_code(&jerr) == json_error_cannot_open_file
                   ? HERD_ERR_IO
                   : HERD_ERR_PARSE;
    }
    trace_timeline_t *tl;
    herd_status_t st = trace_timeline_create(&tl);
    if (!st)
        st = tlio_events(root, tl, path, err, errlen);
    json_decref(root);
    if (st) {
        trace_timeline_destroy(tl);
        return st;
    }
    trace_timeline_sort(tl);
    *out = tl;
    return HERD_OK;
}
