/* trace/nccltests.c - read nccl-tests output (and herd perf's table, the
 * same layout) into tables of rows. A log is text from several programs at
 * once (mpirun, NCCL INFO lines, the test itself): lines that are neither
 * a header the test prints nor a row of a table are skipped, but a row that
 * does not match its table's columns is an error with its position, so a
 * truncated or edited log is never read as a shorter measurement. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/nccltests.h"

#define NCCLT_MAX_BYTES (256u << 20) /* a log larger than this is not one */
#define NCCLT_MAX_ROWS 1000000
#define NCCLT_MAX_TOK 32
#define NCCLT_MAX_HOSTS 65536

typedef struct ncclt_tok {
    const char *s;
    size_t n;
    unsigned col; /* 1-based */
} ncclt_tok_t;

typedef struct ncclt_ctx {
    const char *name;
    char *err;
    size_t errlen;
    trace_ncclt_t *out;
    /* what the header lines said, for the next table */
    herd_coll_t coll;
    const char *coll_from;
    int nranks;
    char **hosts;
    size_t nhosts;
    trace_ncclt_table_t *cur; /* the table rows go to, or NULL */
    int table_seen;           /* a table began since the last Rank line */
    int nodes_said;           /* nodes a herd perf header names */
} ncclt_ctx_t;

static herd_status_t ncclt_error(ncclt_ctx_t *c, unsigned line, unsigned col,
                                 const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof(msg), fmt, what);
    snprintf(c->err, c->errlen, "%s:%u:%u: %s", c->name, line, col, msg);
    return HERD_ERR_PARSE;
}

static size_t ncclt_split(const char *s, size_t n, ncclt_tok_t *t, size_t max)
{
    size_t k = 0, i = 0;
    while (i < n) {
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i >= n)
            break;
        size_t start = i;
        while (i < n && !isspace((unsigned char)s[i]))
            i++;
        if (k < max)
            t[k] = (ncclt_tok_t){s + start, i - start, (unsigned)start + 1};
        k++;
    }
    return k;
}

static int tok_is(const ncclt_tok_t *t, const char *word)
{
    return t->n == strlen(word) && !memcmp(t->s, word, t->n);
}

/* "all_reduce_perf" (or "all_reduce_perf_mpi", a path ending in it) in
 * `s` names the collective. */
static int ncclt_binary_coll(const char *s, size_t n, herd_coll_t *coll)
{
    static const struct {
        const char *bin;
        herd_coll_t coll;
    } bins[] = {{"all_reduce_perf", HERD_COLL_ALL_REDUCE},
                {"all_gather_perf", HERD_COLL_ALL_GATHER},
                {"reduce_scatter_perf", HERD_COLL_REDUCE_SCATTER},
                {"broadcast_perf", HERD_COLL_BROADCAST},
                {"reduce_perf", HERD_COLL_REDUCE},
                {"alltoall_perf", HERD_COLL_ALL_TO_ALL},
                {"gather_perf", HERD_COLL_GATHER},
                {"scatter_perf", HERD_COLL_SCATTER}};
    for (size_t b = 0; b < sizeof(bins) / sizeof(bins[0]); b++) {
        size_t m = strlen(bins[b].bin);
        for (size_t i = 0; i + m <= n; i++) {
            /* "reduce_perf" must not match inside "all_reduce_perf" */
            if (memcmp(s + i, bins[b].bin, m) ||
                (i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')))
                continue;
            *coll = bins[b].coll;
            return 1;
        }
    }
    return 0;
}

static void ncclt_note_host(ncclt_ctx_t *c, const char *h, size_t n)
{
    for (size_t i = 0; i < c->nhosts; i++)
        if (strlen(c->hosts[i]) == n && !memcmp(c->hosts[i], h, n))
            return;
    if (c->nhosts >= NCCLT_MAX_HOSTS)
        return;
    char **g = realloc(c->hosts, (c->nhosts + 1) * sizeof(*g));
    if (!g)
        return;
    c->hosts = g;
    c->hosts[c->nhosts] = strndup(h, n);
    if (c->hosts[c->nhosts])
        c->nhosts++;
}

/* A comment line: headers that describe the next table. */
static void ncclt_comment(ncclt_ctx_t *c, const char *s, size_t n,
                          const ncclt_tok_t *t, size_t k)
{
    const char *start = "Collective test starting:";
    const char *hit = memmem(s, n, start, strlen(start));
    herd_coll_t coll;
    if (hit && ncclt_binary_coll(hit, (size_t)(s + n - hit), &coll)) {
        c->coll = coll;
        c->coll_from = "header";
        return;
    }
    /* "#  Rank  3 Group  0 Pid  12 on host device  3 [..] NVIDIA H100" */
    if (k >= 8 && tok_is(&t[1], "Rank") && tok_is(&t[3], "Group") &&
        tok_is(&t[7], "on")) {
        if (c->table_seen) { /* a new run: its own ranks and collective */
            for (size_t h = 0; h < c->nhosts; h++)
                free(c->hosts[h]);
            c->nranks = 0, c->nhosts = 0, c->table_seen = 0;
            c->coll_from = NULL;
        }
        c->nranks++;
        if (k >= 9)
            ncclt_note_host(c, t[8].s, t[8].n);
        return;
    }
    /* herd perf: "# herd perf: all_reduce, ... for 2 node(s) x 8 GPU(s)" */
    const char *hp = "# herd perf: ";
    if (n > strlen(hp) && !memcmp(s, hp, strlen(hp))) {
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(n < 511 ? n : 511), s);
        char cname[32];
        if (sscanf(line, "# herd perf: %31[a-z_]", cname) == 1 &&
            herd_coll_parse(cname, &coll) == HERD_OK)
            c->coll = coll, c->coll_from = "header";
        const char *f = strstr(line, " for ");
        int nodes, gpus;
        if (f && sscanf(f, " for %d node(s) x %d GPU(s)", &nodes, &gpus) == 2 &&
            nodes > 0 && gpus > 0 && nodes <= (1 << 20) / gpus)
            c->nranks = nodes * gpus, c->nodes_said = nodes;
    }
}

static herd_status_t ncclt_begin_table(ncclt_ctx_t *c, unsigned line,
                                       int groups)
{
    trace_ncclt_t *o = c->out;
    trace_ncclt_table_t *g =
        realloc(o->tables, (o->ntables + 1) * sizeof(*g));
    if (!g)
        return HERD_ERR_NO_MEMORY;
    o->tables = g;
    c->cur = &o->tables[o->ntables++];
    c->table_seen = 1;
    *c->cur = (trace_ncclt_table_t){.coll = c->coll,
                                    .have_coll = c->coll_from != NULL,
                                    .coll_from = c->coll_from,
                                    .nranks = c->nranks,
                                    .nnodes = c->nhosts ? (int)c->nhosts
                                                        : c->nodes_said,
                                    .groups = groups,
                                    .line = line};
    return HERD_OK;
}

static int ncclt_u64(const ncclt_tok_t *t, uint64_t *v)
{
    char buf[32];
    if (t->n == 0 || t->n >= sizeof(buf) || !isdigit((unsigned char)t->s[0]))
        return -1;
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (*end || errno)
        return -1;
    *v = x;
    return 0;
}

static int ncclt_num(const ncclt_tok_t *t, double *v)
{
    char buf[48];
    if (t->n == 0 || t->n >= sizeof(buf))
        return -1;
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    char *end;
    errno = 0;
    double x = strtod(buf, &end);
    if (*end || errno || !isfinite(x) || x < 0)
        return -1;
    *v = x;
    return 0;
}

static herd_status_t ncclt_row(ncclt_ctx_t *c, unsigned line,
                               const ncclt_tok_t *t, size_t k)
{
    trace_ncclt_table_t *tb = c->cur;
    size_t g = (size_t)tb->groups, head = k - 4 * g;
    if (k > NCCLT_MAX_TOK || k < 3 + 4 * g || head > 5)
        return ncclt_error(c, line, t[0].col,
                           "a row of %s: expected size, count, type, "
                           "[redop, root] and the time, algbw, busbw, "
                           "#wrong columns of each group",
                           g == 2 ? "out-of-place and in-place" : "one group");
    if (tb->nrows >= NCCLT_MAX_ROWS)
        return ncclt_error(c, line, 1, "more than %s rows in one table",
                           "1000000");
    trace_ncclt_row_t r = {.root = -1, .line = line};
    if (ncclt_u64(&t[0], &r.bytes))
        return ncclt_error(c, line, t[0].col, "size: %s", "expected bytes");
    if (ncclt_u64(&t[1], &r.count))
        return ncclt_error(c, line, t[1].col, "count: %s",
                           "expected elements");
    snprintf(r.type, sizeof(r.type), "%.*s", (int)t[2].n, t[2].s);
    if (head >= 4)
        snprintf(r.redop, sizeof(r.redop), "%.*s", (int)t[3].n, t[3].s);
    if (head >= 5) {
        double root;
        char buf[16];
        snprintf(buf, sizeof(buf), "%.*s", (int)t[4].n, t[4].s);
        root = strtod(buf, NULL);
        r.root = root >= -1 && root < 1e9 ? (int)root : -1;
    }
    for (size_t j = 0; j < g; j++) {
        const ncclt_tok_t *q = &t[head + 4 * j];
        if (ncclt_num(&q[0], &r.time_us[j]))
            return ncclt_error(c, line, q[0].col, "time: %s",
                               "expected microseconds");
        if (ncclt_num(&q[1], &r.algbw[j]) || ncclt_num(&q[2], &r.busbw[j]))
            return ncclt_error(c, line, q[1].col, "bandwidth: %s",
                               "expected GB/s");
    }
    trace_ncclt_row_t *rows =
        realloc(tb->rows, (tb->nrows + 1) * sizeof(*rows));
    if (!rows)
        return HERD_ERR_NO_MEMORY;
    tb->rows = rows;
    tb->rows[tb->nrows++] = r;
    return HERD_OK;
}

/* The table header: "#  size  count  type  redop  root  time ..." with one
 * "time" per column group. Returns the number of groups, or 0. */
static int ncclt_header_groups(const ncclt_tok_t *t, size_t k)
{
    int size = 0, count = 0, times = 0;
    for (size_t i = 0; i < k && i < NCCLT_MAX_TOK; i++) {
        size |= tok_is(&t[i], "size");
        count |= tok_is(&t[i], "count");
        times += tok_is(&t[i], "time");
    }
    return size && count && (times == 1 || times == 2) ? times : 0;
}

static herd_status_t ncclt_line(ncclt_ctx_t *c, const char *s, size_t n,
                                unsigned line)
{
    ncclt_tok_t t[NCCLT_MAX_TOK];
    size_t k = ncclt_split(s, n, t, NCCLT_MAX_TOK);
    if (k == 0)
        return HERD_OK;
    if (s[0] == '#') {
        int groups = ncclt_header_groups(t, k);
        if (groups)
            return ncclt_begin_table(c, line, groups);
        /* the units line under the header keeps the table open */
        if (c->cur && c->cur->nrows == 0 && k > 1 && t[1].s[0] == '(')
            return HERD_OK;
        if (c->cur && c->cur->nrows > 0)
            c->cur = NULL; /* "# Out of bounds values", "# Avg bus ..." */
        ncclt_comment(c, s, n, t, k);
        return HERD_OK;
    }
    herd_coll_t coll;
    if (!c->cur) {
        if (ncclt_binary_coll(s, n, &coll) && !c->coll_from)
            c->coll = coll, c->coll_from = "binary name";
        return HERD_OK;
    }
    if (!isdigit((unsigned char)t[0].s[0]))
        return HERD_OK; /* another program's line inside the table */
    return ncclt_row(c, line, t, k);
}

/* What the header did not say: the file name, then busbw / algbw. */
static void ncclt_settle(trace_ncclt_table_t *tb, const char *name)
{
    herd_coll_t coll;
    if (!tb->have_coll && name) {
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        char norm[256];
        size_t i = 0;
        for (; base[i] && i + 1 < sizeof(norm); i++)
            norm[i] = base[i] == '-' ? '_' : base[i];
        norm[i] = '\0';
        static const char *names[] = {"all_reduce", "allreduce",
                                      "all_gather", "allgather",
                                      "reduce_scatter", "reducescatter",
                                      "alltoall", "broadcast"};
        for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++)
            if (strstr(norm, names[j]) &&
                herd_coll_parse(names[j], &coll) == HERD_OK) {
                tb->coll = coll, tb->have_coll = 1, tb->coll_from = "file name";
                break;
            }
    }
    if (tb->have_coll || tb->nranks < 2)
        return;
    /* all_reduce is the one collective whose busbw/algbw is 2(p-1)/p */
    double want = trace_ncclt_bus_factor(HERD_COLL_ALL_REDUCE, tb->nranks);
    size_t agree = 0, rows = 0;
    for (size_t i = 0; i < tb->nrows; i++) {
        const trace_ncclt_row_t *r = &tb->rows[i];
        if (r->algbw[0] < 0.1)
            continue; /* two decimals: ratios of small numbers are noise */
        rows++;
        agree += fabs(r->busbw[0] / r->algbw[0] - want) < 0.02 * want;
    }
    if (rows >= 2 && agree == rows && tb->nranks > 2)
        tb->coll = HERD_COLL_ALL_REDUCE, tb->have_coll = 1,
        tb->coll_from = "bandwidth ratio";
}

herd_status_t trace_ncclt_parse(const char *buf, size_t len, const char *name,
                                trace_ncclt_t *out, char *err, size_t errlen)
{
    trace_ncclt_t res = {0};
    ncclt_ctx_t c = {.name = name ? name : "<input>", .err = err,
                     .errlen = errlen, .out = &res};
    herd_status_t st = HERD_OK;
    unsigned line = 0;
    for (size_t i = 0; i < len && st == HERD_OK;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
        line++;
        if (memchr(buf + i, '\0', n))
            st = ncclt_error(&c, line, 1, "%s", "a NUL byte: not a text log");
        else
            st = ncclt_line(&c, buf + i, n, line);
        i += n + 1;
    }
    for (size_t h = 0; h < c.nhosts; h++)
        free(c.hosts[h]);
    free(c.hosts);
    size_t rows = 0;
    for (size_t t = 0; st == HERD_OK && t < res.ntables; t++) {
        ncclt_settle(&res.tables[t], c.name);
        rows += res.tables[t].nrows;
    }
    if (st == HERD_OK && rows == 0) {
        snprintf(err, errlen,
                 "%s: no nccl-tests table found (expected a header line "
                 "`#  size  count  type  redop  root  time  algbw  busbw ...` "
                 "followed by rows, as all_reduce_perf or herd perf print)",
                 c.name);
        st = HERD_ERR_PARSE;
    }
    if (st != HERD_OK) {
        trace_ncclt_free(&res);
        return st;
    }
    *out = res;
    return HERD_OK;
}

herd_status_t trace_ncclt_load(const char *path, trace_ncclt_t *out,
                               char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HERD_ERR_IO;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    herd_status_t st = buf ? HERD_OK : HERD_ERR_NO_MEMORY;
    size_t got;
    while (st == HERD_OK && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap && cap >= NCCLT_MAX_BYTES) {
            snprintf(err, errlen, "%s: larger than %u MiB: not an nccl-tests "
                     "log", path, NCCLT_MAX_BYTES >> 20);
            st = HERD_ERR_PARSE;
        } else if (len == cap) {
            char *g = realloc(buf, cap * 2);
            if (!g)
                st = HERD_ERR_NO_MEMORY;
            else
                buf = g, cap *= 2;
        }
    }
    if (st == HERD_OK && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        st = HERD_ERR_IO;
    }
    fclose(f);
    if (st == HERD_OK)
        st = trace_ncclt_parse(buf, len, path, out, err, errlen);
    free(buf);
    return st;
}

void trace_ncclt_free(trace_ncclt_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ntables; i++)
        free(t->tables[i].rows);
    free(t->tables);
    t->tables = NULL;
    t->ntables = 0;
}

int trace_ncclt_sniff(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
        ncclt_tok_t t[NCCLT_MAX_TOK];
        if (n && buf[i] == '#' &&
            ncclt_header_groups(t, ncclt_split(buf + i, n, t, NCCLT_MAX_TOK)))
            return 1;
        i += n + 1;
    }
    return 0;
}

double trace_ncclt_bus_factor(herd_coll_t coll, int nranks)
{
    double p = nranks > 0 ? nranks : 1;
    switch (coll) {
    case HERD_COLL_ALL_REDUCE:
        return 2.0 * (p - 1) / p;
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_REDUCE_SCATTER:
    case HERD_COLL_ALL_TO_ALL:
        return (p - 1) / p;
    default:
        return 1.0; /* broadcast, reduce, send/recv */
    }
}
