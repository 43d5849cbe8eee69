/* cli/cmd_validate_from.c - `herd validate --from DIR`: predict again
 * against what an earlier validation measured. Its traces, measured
 * timelines and step records and its calibration are taken from DIR; the
 * real side does not run, so a model change (a --set, a new herd) is
 * judged on the very measurements the first report was made from, and a
 * run's noise cannot pass for the change's effect. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmd_validate.h"
#include "core/stats.h"

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int validate_from_apart(const vopts_t *o)
{
    struct stat a, b;
    if (stat(o->from, &a) != 0 || !S_ISDIR(a.st_mode)) {
        fprintf(stderr, "herd validate: --from %s: not a directory\n", o->from);
        return 1;
    }
    if (stat(o->out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        fprintf(stderr,
                "herd validate: --from %s is the -o directory: the new "
                "report would overwrite what it reads; give another -o\n",
                o->from);
        return 1;
    }
    return 0;
}

int validate_from_trace(const vopts_t *o, const char *name, char *trace,
                        size_t len)
{
    if (snprintf(trace, len, "%s/%s/trace.json", o->from, name) >= (int)len ||
        !is_file(trace)) {
        fprintf(stderr,
                "herd validate: --from %s: no %s/trace.json (the output "
                "of a herd validate run of the same scenario and "
                "collectives?)\n",
                o->from, name);
        return 1;
    }
    return 0;
}

void validate_from_calibration(vopts_t *o)
{
    char path[sizeof(o->from_cal)];
    if (o->calibration || !o->calibrate)
        return;
    if (snprintf(path, sizeof(path), "%s/calibration.yaml", o->from) <
            (int)sizeof(path) &&
        is_file(path)) {
        memcpy(o->from_cal, path, sizeof(path));
        o->calibration = o->from_cal;
        return;
    }
    printf("validate: --from %s: it has no calibration.yaml; predicting "
           "with the scenario's links\n",
           o->from);
    o->calibrate = 0;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    FILE *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int bad = !out;
    while (!bad && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        bad = fwrite(buf, 1, n, out) != n;
    bad |= in && ferror(in);
    if (out && fclose(out) != 0)
        bad = 1;
    if (in)
        fclose(in);
    return bad;
}

/* The measurements are of as many ranks as this validation has: a
 * 4-host run compared as 2 hosts would read every op wrong. */
static int same_world(const vopts_t *o, const char *src)
{
    const char *what = o->torch ? "torch" : "timeline";
    char path[2048];
    int n = 0;
    for (;; n++) { /* counted in DIR: -o may hold an older run's files */
        snprintf(path, sizeof(path), "%s/%s-rank%d.json", src, what, n);
        if (!is_file(path))
            break;
    }
    if (n == o->world)
        return 1;
    fprintf(stderr,
            "herd validate: --from: %s holds %s-rank<R>.json of %d rank(s); "
            "this validation has %d (give --hosts or --nproc as the "
            "earlier run had them)\n",
            src, what, n, o->world);
    return 0;
}

int validate_from_measured(const vopts_t *o, const char *name, const char *dir)
{
    char src[1024], a[2048], b[2048];
    snprintf(src, sizeof(src), "%s/%s/measured", o->from, name);
    snprintf(b, sizeof(b), "%s/measured", dir);
    DIR *d = opendir(src);
    if (!d) {
        fprintf(stderr, "herd validate: --from: %s: %s\n", src,
                strerror(errno));
        return 1;
    }
    mkdir(b, 0755);
    struct stat sa, sb; /* one folder by two names: copying truncates */
    if (stat(src, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
        sa.st_ino == sb.st_ino) {
        fprintf(stderr, "herd validate: --from: %s is where -o writes\n", src);
        closedir(d);
        return 1;
    }
    int bad = 0, n = 0;
    for (struct dirent *e; !bad && (e = readdir(d));) {
        snprintf(a, sizeof(a), "%s/%s", src, e->d_name);
        if (e->d_name[0] == '.' || !is_file(a))
            continue;
        snprintf(b, sizeof(b), "%s/measured/%s", dir, e->d_name);
        if ((bad = copy_file(a, b)) != 0)
            fprintf(stderr, "herd validate: --from: cannot copy %s to %s\n", a,
                    b);
        n++;
    }
    closedir(d);
    if (!bad && n == 0)
        fprintf(stderr, "herd validate: --from: %s is empty\n", src);
    return bad || n == 0 || !same_world(o, src);
}

/* ---- before and after: DIR's report against the new one ---- */

/* One row of a report.md table: the key (collective | algorithm | size |
 * label), the predicted and measured ms and the error in percent. */
typedef struct from_row {
    char key[192];
    double pred, meas, err;
} from_row_t;

/* The cells of `line` ("| a | b | ... |") into cells[], trimmed; their
 * number. */
static int split_cells(char *line, char **cells, int max)
{
    int n = 0;
    char *p = strchr(line, '|');
    while (p && n < max) {
        char *q = strchr(p + 1, '|');
        if (!q)
            break;
        *q = '\0';
        char *c = p + 1;
        while (*c == ' ')
            c++;
        for (char *e = q; e > c && e[-1] == ' ';)
            *--e = '\0';
        cells[n++] = c;
        p = q;
    }
    return n;
}

/* The rows of the report at `path` (at most max); -1 when it cannot be
 * read. Lines that are not a report row (9 cells, numbers where numbers
 * go) are skipped. */
static int read_rows(const char *path, from_row_t *rows, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024], *c[12];
    int n = 0;
    while (n < max && fgets(line, sizeof(line), f)) {
        if (line[0] != '|' || split_cells(line, c, 12) != 9)
            continue;
        char *end;
        double pred = strtod(c[5], &end);
        if (end == c[5])
            continue; /* the header or the |---| line */
        from_row_t *r = &rows[n];
        snprintf(r->key, sizeof(r->key), "%s | %s | %s | %s", c[0], c[1], c[2],
                 c[3]);
        r->pred = pred;
        r->meas = strtod(c[6], NULL);
        r->err = strtod(c[8], NULL);
        n++;
    }
    fclose(f);
    return n;
}

#define FROM_MAX_ROWS 4096

int validate_from_compare(const vopts_t *o)
{
    char was[1100], now[1100], out[1100];
    snprintf(was, sizeof(was), "%s/report.md", o->from);
    snprintf(now, sizeof(now), "%s/report.md", o->out);
    snprintf(out, sizeof(out), "%s/from.md", o->out);
    from_row_t *a = calloc(2 * FROM_MAX_ROWS, sizeof(*a)),
               *b = a + FROM_MAX_ROWS;
    double *ea = calloc(2 * FROM_MAX_ROWS, sizeof(*ea)),
           *eb = ea + FROM_MAX_ROWS;
    int na = a ? read_rows(was, a, FROM_MAX_ROWS) : -1;
    int nb = a ? read_rows(now, b, FROM_MAX_ROWS) : -1;
    FILE *f = na >= 0 && nb >= 0 && ea ? fopen(out, "w") : NULL;
    if (!f) {
        printf("validate: --from: no before/after table (%s)\n",
               !a || !ea ? "out of memory"
               : na < 0  ? "DIR has no report.md"
                         : "cannot write from.md");
        free(a);
        free(ea);
        return 1;
    }
    fprintf(f,
            "# herd validate --from %s: the earlier prediction and this "
            "one\n\nThe same measurements; each row's prediction in `%s` "
            "(before) and now.\n\n| collective | algorithm | size | label "
            "| measured (ms) | predicted before (ms) | error before | "
            "predicted now (ms) | error now |\n"
            "|---|---|---|---|---|---|---|---|---|\n",
            o->from, was);
    int k = 0;
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < na; j++)
            if (!strcmp(b[i].key, a[j].key)) {
                fprintf(f, "| %s | %.3f | %.3f | %+.1f%% | %.3f | %+.1f%% |\n",
                        b[i].key, b[i].meas, a[j].pred, a[j].err, b[i].pred,
                        b[i].err);
                ea[k] = fabs(a[j].err);
                eb[k++] = fabs(b[i].err);
                break;
            }
    double ma = core_median(ea, (size_t)k), mb = core_median(eb, (size_t)k);
    fprintf(f, "\n%d rows in both: median |error| %.1f%% before, %.1f%% now.\n",
            k, ma, mb);
    fclose(f);
    printf("validate: --from: %d rows in both reports, median |error| "
           "%.1f%% before, %.1f%% now (%s)\n",
           k, ma, mb, out);
    free(a);
    free(ea);
    return 0;
}
