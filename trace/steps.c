/* trace/steps.c - step records read and compared (see trace/steps.h).
 * The reader takes the files core/steplog.c writes: a header line, then
 * 14 tab-separated fields per line; anything else is an error at its
 * file:line:column. Lines are read with a bounded buffer (a longer line
 * is an error, not a reallocation). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "core/stats.h"
#include "trace/steps.h"

#define STEPS_LINE_MAX 1024
#define STEPS_NFIELDS 14

int trace_steps_is_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[STEPS_LINE_MAX];
    int yes = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    size_t n = strlen(core_steplog_header);
    return yes && strncmp(line, core_steplog_header, n) == 0 &&
           (line[n] == '\n' || line[n] == '\0');
}

void trace_steps_free(trace_steps_t *s)
{
    free(s->r);
    memset(s, 0, sizeof(*s));
}

static int parse_u64(const char *f, uint64_t *out)
{
    if (*f < '0' || *f > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(f, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *f, int lo, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(f, &end, 10);
    if (errno || *end || end == f || v < lo || v > INT32_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_kind(const char *f, int *out)
{
    for (int k = 0; k < 4; k++)
        if (!strcmp(f, core_step_kind_name(k))) {
            *out = k;
            return 0;
        }
    return -1;
}

/* Field i of a line into r; -1 when it does not parse. */
static int parse_field(int i, const char *f, core_step_rec_t *r)
{
    uint64_t u = 0;
    switch (i) {
    case 0:
        return parse_int(f, 0, &r->rank);
    case 1:
        return parse_int(f, 0, &r->group);
    case 2:
        return parse_u64(f, &r->seq);
    case 3:
        return herd_coll_parse(f, &r->coll) == HERD_OK ? 0 : -1;
    case 4:
        return herd_algo_parse(f, &r->algo) == HERD_OK ? 0 : -1;
    case 5:
        return parse_u64(f, &r->op_bytes);
    case 6:
        return parse_u64(f, &r->op_start);
    case 7:
        if (parse_u64(f, &u) || u > UINT32_MAX)
            return -1;
        r->step = (uint32_t)u;
        return 0;
    case 8:
        return parse_kind(f, &r->kind);
    case 9:
        return parse_int(f, -1, &r->peer);
    case 10:
        return parse_int(f, 0, &r->channel);
    case 11:
        return parse_u64(f, &r->bytes);
    case 12:
        return parse_u64(f, &r->start);
    default:
        return parse_u64(f, &r->end);
    }
}

static const char *const field_names[STEPS_NFIELDS] = {
    "rank", "group", "seq",  "coll",    "algo",  "op_bytes", "op_start_ns",
    "step", "kind",  "peer", "channel", "bytes", "start_ns", "end_ns"};

/* One data line (no newline) into r; on error, where and why: -1 a field
 * that does not parse (why: its name), -2 the line's shape. */
static int parse_line(char *line, core_step_rec_t *r, size_t *col,
                      const char **why)
{
    char *p = line;
    for (int i = 0; i < STEPS_NFIELDS; i++) {
        char *tab = strchr(p, '\t');
        if ((tab == NULL) != (i == STEPS_NFIELDS - 1)) {
            *col =
                (size_t)(tab ? tab - line : p - line + (ptrdiff_t)strlen(p)) +
                1;
            *why = tab ? "more than 14 fields" : "fewer than 14 fields";
            return -2;
        }
        if (tab)
            *tab = '\0';
        if (parse_field(i, p, r)) {
            *col = (size_t)(p - line) + 1;
            *why = field_names[i];
            return -1;
        }
        if (tab)
            p = tab + 1;
    }
    if (r->end < r->start) {
        *col = 1;
        *why = "end_ns before start_ns";
        return -2;
    }
    return 0;
}

static herd_status_t push(trace_steps_t *s, const core_step_rec_t *r)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        core_step_rec_t *a = realloc(s->r, cap * sizeof(*a));
        if (!a)
            return HERD_ERR_NO_MEMORY;
        s->r = a;
        s->cap = cap;
    }
    s->r[s->n++] = *r;
    return HERD_OK;
}

herd_status_t trace_steps_read(const char *path, trace_steps_t *s, char *err,
                               size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HERD_ERR_IO;
    }
    char line[STEPS_LINE_MAX];
    herd_status_t st = HERD_OK;
    size_t ln = 1;
    for (; st == HERD_OK && fgets(line, sizeof(line), f); ln++) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (!feof(f)) {
            snprintf(err, errlen, "%s:%zu:%d: line longer than %d bytes", path,
                     ln, STEPS_LINE_MAX - 1, STEPS_LINE_MAX - 1);
            st = HERD_ERR_INVALID_ARG;
            break;
        }
        if (ln == 1) {
            if (strcmp(line, core_steplog_header)) {
                snprintf(err, errlen,
                         "%s:1:1: not step records (the header is not "
                         "HERD_STEPS_DIR's)",
                         path);
                st = HERD_ERR_INVALID_ARG;
            }
            continue;
        }
        core_step_rec_t r;
        memset(&r, 0, sizeof(r));
        size_t col = 1;
        const char *why = NULL;
        int bad = parse_line(line, &r, &col, &why);
        if (bad) {
            snprintf(err, errlen, "%s:%zu:%zu: %s%s", path, ln, col,
                     bad == -1 ? "bad " : "", why);
            st = HERD_ERR_INVALID_ARG;
        } else if ((st = push(s, &r)) != HERD_OK)
            snprintf(err, errlen, "%s: out of memory", path);
    }
    if (st == HERD_OK && ln == 1) {
        snprintf(err, errlen, "%s:1:1: empty, not step records", path);
        st = HERD_ERR_INVALID_ARG;
    }
    if (st == HERD_OK && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        st = HERD_ERR_IO;
    }
    fclose(f);
    return st;
}

static int cmp_key(const void *a, const void *b)
{
    const core_step_rec_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->step < y->step ? -1 : x->step > y->step;
}

/* A matched step: the predicted record's identity, both sides' times
 * after the rank posted. */
typedef struct pair {
    const core_step_rec_t *p;
    double v[4]; /* pred start, pred end, meas start, meas end */
} pair_t;

static int cmp_row(const void *a, const void *b)
{
    const core_step_rec_t *x = ((const pair_t *)a)->p;
    const core_step_rec_t *y = ((const pair_t *)b)->p;
    if (x->coll != y->coll)
        return x->coll < y->coll ? -1 : 1;
    if (x->algo != y->algo)
        return x->algo < y->algo ? -1 : 1;
    if (x->op_bytes != y->op_bytes)
        return x->op_bytes < y->op_bytes ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->step < y->step ? -1 : x->step > y->step;
}

static double since(uint64_t t, uint64_t t0)
{
    return (double)t - (double)t0;
}

/* Two records of one key describe the same step: the runs lowered the
 * same collective the same way. */
static int same_step(const core_step_rec_t *p, const core_step_rec_t *m)
{
    return p->coll == m->coll && p->algo == m->algo &&
           p->op_bytes == m->op_bytes && p->kind == m->kind &&
           p->peer == m->peer && p->channel == m->channel &&
           p->bytes == m->bytes;
}

/* Pairs of records with equal keys (both sides sorted). */
static pair_t *match(const trace_steps_t *pred, const trace_steps_t *meas,
                     trace_step_cmp_t *c)
{
    pair_t *pairs = malloc((pred->n ? pred->n : 1) * sizeof(*pairs));
    if (!pairs)
        return NULL;
    size_t i = 0, j = 0;
    while (i < pred->n && j < meas->n) {
        const core_step_rec_t *p = &pred->r[i], *m = &meas->r[j];
        int k = cmp_key(p, m);
        if (k < 0) {
            c->only_pred++, i++;
            continue;
        }
        if (k > 0) {
            c->only_meas++, j++;
            continue;
        }
        i++, j++;
        if (!same_step(p, m)) {
            c->differ++;
            continue;
        }
        pairs[c->matched++] = (pair_t){
            p,
            {since(p->start, p->op_start), since(p->end, p->op_start),
             since(m->start, m->op_start), since(m->end, m->op_start)}};
    }
    c->only_pred += pred->n - i;
    c->only_meas += meas->n - j;
    return pairs;
}

static void row_of(const pair_t *run, size_t n, double *scratch,
                   trace_step_row_t *row)
{
    const core_step_rec_t *p = run[0].p;
    *row = (trace_step_row_t){.coll = p->coll,
                              .algo = p->algo,
                              .op_bytes = p->op_bytes,
                              .rank = p->rank,
                              .step = p->step,
                              .kind = p->kind,
                              .peer = p->peer,
                              .channel = p->channel,
                              .bytes = p->bytes,
                              .n = n};
    double *out[4] = {&row->pred_start, &row->pred_end, &row->meas_start,
                      &row->meas_end};
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < n; i++)
            scratch[i] = run[i].v[k];
        *out[k] = core_median(scratch, n);
    }
}

herd_status_t trace_steps_compare(trace_steps_t *pred, trace_steps_t *meas,
                                  trace_step_cmp_t *out)
{
    memset(out, 0, sizeof(*out));
    if (pred->n > 1) /* a file of only its header: no array at all */
        qsort(pred->r, pred->n, sizeof(*pred->r), cmp_key);
    if (meas->n > 1)
        qsort(meas->r, meas->n, sizeof(*meas->r), cmp_key);
    pair_t *pairs = match(pred, meas, out);
    size_t m = out->matched ? out->matched : 1;
    double *scratch = malloc(m * sizeof(*scratch));
    trace_step_row_t *rows = malloc(m * sizeof(*rows));
    if (!pairs || !scratch || !rows) {
        free(pairs);
        free(scratch);
        free(rows);
        return HERD_ERR_NO_MEMORY;
    }
    qsort(pairs, out->matched, sizeof(*pairs), cmp_row);
    for (size_t i = 0; i < out->matched;) {
        size_t e = i + 1;
        while (e < out->matched && cmp_row(&pairs[i], &pairs[e]) == 0)
            e++;
        row_of(&pairs[i], e - i, scratch, &rows[out->nrows++]);
        i = e;
    }
    free(pairs);
    free(scratch);
    out->rows = rows;
    return HERD_OK;
}

void trace_step_cmp_free(trace_step_cmp_t *c)
{
    free(c->rows);
    memset(c, 0, sizeof(*c));
}

void trace_step_cmp_print(const trace_step_cmp_t *c, FILE *f, int tsv)
{
    const char *fmt_h =
        tsv ? "coll\talgo\top_bytes\trank\tstep\tkind\tpeer\tchannel\tbytes"
              "\tn\tpred_start_us\tpred_end_us\tmeas_start_us\tmeas_end_us"
              "\tend_diff_us\n"
            : "%-10s %-6s %10s %5s %5s %-11s %5s %3s %10s %4s %11s %11s "
              "%11s %11s %11s\n";
    if (tsv)
        fputs(fmt_h, f);
    else {
        fprintf(f,
                "# %zu steps matched (%zu predicted only, %zu measured only, "
                "%zu differ in what the step is); times in us after the rank "
                "posted the op, medians over the ops\n",
                c->matched, c->only_pred, c->only_meas, c->differ);
        fprintf(f, fmt_h, "coll", "algo", "op_bytes", "rank", "step", "kind",
                "peer", "ch", "bytes", "n", "pred_start", "pred_end",
                "meas_start", "meas_end", "end_diff");
    }
    for (size_t i = 0; i < c->nrows; i++) {
        const trace_step_row_t *r = &c->rows[i];
        const char *kind = core_step_kind_name(r->kind);
        double d = (r->pred_end - r->meas_end) / 1e3;
        fprintf(f,
                tsv ? "%s\t%s\t%" PRIu64 "\t%d\t%" PRIu32
                      "\t%s\t%d\t%d\t%" PRIu64
                      "\t%zu\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n"
                    : "%-10s %-6s %10" PRIu64 " %5d %5" PRIu32
                      " %-11s %5d %3d %10" PRIu64
                      " %4zu %11.3f %11.3f %11.3f %11.3f %+11.3f\n",
                herd_coll_name(r->coll), herd_algo_name(r->algo), r->op_bytes,
                r->rank, r->step, kind, r->peer, r->channel, r->bytes, r->n,
                r->pred_start / 1e3, r->pred_end / 1e3, r->meas_start / 1e3,
                r->meas_end / 1e3, d);
    }
}
