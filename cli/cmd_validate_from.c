/* cli/cmd_validate_from.c - `herd validate --from DIR`: predict again
 * against what an earlier validation measured. Its traces, measured
 * timelines and step records and its calibration are taken from DIR; the
 * real side does not run, so a model change (a --set, a new herd) is
 * judged on the very measurements the first report was made from, and a
 * run's noise cannot pass for the change's effect. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmd_validate.h"

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

int validate_from_calibration(vopts_t *o)
{
    char path[sizeof(o->from_cal)];
    if (o->calibration || !o->calibrate)
        return 0;
    if (snprintf(path, sizeof(path), "%s/calibration.yaml", o->from) <
            (int)sizeof(path) &&
        is_file(path)) {
        memcpy(o->from_cal, path, sizeof(path));
        o->calibration = o->from_cal;
        return 1;
    }
    printf("validate: --from %s: it has no calibration.yaml; predicting "
           "with the scenario's links\n",
           o->from);
    o->calibrate = 0;
    return 0;
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
