/* cli/cli_uncertainty.c - the model's own uncertainty, as a validation
 * measured it: the relative errors |predicted - measured| / measured of
 * the points in a validation's table (`herd validate --rates`'s
 * points.tsv, `herd compare`'s compare.tsv, or a validate directory that
 * holds either), summed up as their median and 95th percentile. `herd
 * sweep --uncertainty` says which values lie within it of the best:
 * differences the validation says herd cannot tell apart. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_uncertainty.h"
#include "core/stats.h"

#define UNC_MAX_POINTS 10000000
#define UNC_LINE 4096

static const char *const pred_names[] = {"predicted_ms", "predicted_us",
                                         "predicted_s", "pred_us", NULL};
static const char *const meas_names[] = {"measured_ms", "measured_us",
                                         "measured_s", "meas_us", NULL};

static int is_one_of(const char *s, size_t n, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && !strncmp(s, names[i], n))
            return 1;
    return 0;
}

/* A directory: the table a validation left in it. */
static int find_table(const char *path, char *out, size_t len)
{
    static const char *const inside[] = {"points.tsv", "compare.tsv",
                                         "compare/compare.tsv", NULL};
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(out, len, "%s", path);
        return 0;
    }
    for (int i = 0; inside[i]; i++) {
        snprintf(out, len, "%s/%s", path, inside[i]);
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
    }
    return -1;
}

/* Column indices of the predicted and measured values in a header line
 * (tab-separated); -1 when absent. */
static void header_cols(const char *line, int *pc, int *mc)
{
    *pc = *mc = -1;
    int col = 0;
    for (const char *f = line;; col++) {
        size_t n = strcspn(f, "\t\r\n");
        if (*pc < 0 && is_one_of(f, n, pred_names))
            *pc = col;
        if (*mc < 0 && is_one_of(f, n, meas_names))
            *mc = col;
        if (f[n] != '\t')
            break;
        f += n + 1;
    }
}

/* Field `col` of a tab-separated line as a number; sets *at to its
 * 1-based column in bytes. */
static int field_num(const char *line, int col, double *v, size_t *at)
{
    const char *f = line;
    for (int c = 0; c < col; c++) {
        f = strchr(f, '\t');
        if (!f)
            return -1;
        f++;
    }
    *at = (size_t)(f - line) + 1;
    char *end;
    errno = 0;
    *v = strtod(f, &end);
    if (end == f || errno || !isfinite(*v) ||
        (*end && *end != '\t' && *end != '\r' && *end != '\n'))
        return -1;
    return 0;
}

/* Reads the points; the caller frees *errs. */
static int read_points(FILE *f, const char *path, double **errs, size_t *n,
                       char *err, size_t len)
{
    char line[UNC_LINE];
    int pc = -1, mc = -1;
    size_t cap = 0, lineno = 0;
    *errs = NULL;
    *n = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, len, "%s:%zu:1: line longer than %d bytes", path,
                     lineno, UNC_LINE - 1);
            return -1;
        }
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (pc < 0 || mc < 0) { /* the header */
            header_cols(line, &pc, &mc);
            if (pc < 0 || mc < 0) {
                snprintf(err, len,
                         "%s:%zu:1: no predicted and measured columns "
                         "(expected a header naming predicted_ms and "
                         "measured_ms, or pred_us and meas_us: a table of "
                         "herd validate --rates or herd compare)",
                         path, lineno);
                return -1;
            }
            continue;
        }
        double p, m;
        size_t at = 1;
        if (field_num(line, pc, &p, &at) || field_num(line, mc, &m, &at) ||
            m <= 0 || p < 0) {
            snprintf(err, len,
                     "%s:%zu:%zu: expected a predicted and a measured "
                     "time (measured > 0)",
                     path, lineno, at);
            return -1;
        }
        if (*n == UNC_MAX_POINTS) {
            snprintf(err, len, "%s:%zu:1: more than %d points", path, lineno,
                     UNC_MAX_POINTS);
            return -1;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            double *g = realloc(*errs, cap * sizeof(double));
            if (!g) {
                snprintf(err, len, "%s: out of memory", path);
                return -1;
            }
            *errs = g;
        }
        (*errs)[(*n)++] = fabs(p - m) / m;
    }
    if (*n == 0) {
        snprintf(err, len, "%s:%zu:1: no points", path, lineno ? lineno : 1);
        return -1;
    }
    return 0;
}

int cli_uncertainty_load(const char *path, cli_uncertainty_t *out, char *err,
                         size_t len)
{
    char table[1024];
    if (find_table(path, table, sizeof(table)) != 0) {
        snprintf(err, len,
                 "%s: a directory without points.tsv or compare.tsv "
                 "(give the table of herd validate --rates or herd "
                 "compare)",
                 path);
        return -1;
    }
    FILE *f = fopen(table, "r");
    if (!f) {
        snprintf(err, len, "%s: %s", table, strerror(errno));
        return -1;
    }
    double *e = NULL;
    size_t n = 0;
    int rc = read_points(f, table, &e, &n, err, len);
    fclose(f);
    if (rc == 0) {
        cli_uncertainty_t u = {.n = n, .median = core_median(e, n)};
        u.p95 = core_quantile_sorted(e, n, 0.95);
        snprintf(u.path, sizeof(u.path), "%s", table);
        *out = u;
    }
    free(e);
    return rc;
}
