/* tests/unit_layout.c - the folders keep the architecture of
 * docs/architecture.md: every `#include "dir/..."` in a source folder names
 * a folder that folder may use (sim/ and real/ never see each other, trace/
 * and workload/ see no engine, core/ sees no engine and no cli/, the public
 * headers see only each other), and no file of the repository reaches
 * outside it (no path into the folder beside the repository). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/testutil.h"

/* A folder and the top-level folders its quoted includes may name. */
typedef struct layout_rule {
    const char *dir;
    const char *allowed[8];
} layout_rule_t;

static const layout_rule_t rules[] = {
    {"include/herd", {NULL}},
    {"core", {"core", NULL}},
    {"sim", {"core", "sim", NULL}},
    {"trace", {"core", "trace", NULL}},
    {"workload", {"core", "trace", "workload", NULL}},
    {"real", {"core", "real", NULL}},
    {"cli", {"core", "sim", "trace", "workload", "real", "cli", NULL}},
};

static int allowed(const layout_rule_t *r, const char *top)
{
    for (int i = 0; r->allowed[i]; i++)
        if (!strcmp(r->allowed[i], top))
            return 1;
    return 0;
}

static int is_source(const char *name)
{
    size_t n = strlen(name);
    return (n > 2 && (!strcmp(name + n - 2, ".c") ||
                      !strcmp(name + n - 2, ".h"))) ||
           (n > 3 && !strcmp(name + n - 3, ".cu"));
}

/* Checks one line; returns 1 and describes the violation in `why` when the
 * line includes a folder the rule does not allow. */
static int check_line(const layout_rule_t *r, const char *line, char *why,
                      size_t len)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#')
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "include", 7))
        return 0;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '<') {
        /* the public headers must not depend on the private tree */
        return 0;
    }
    if (*p != '"')
        return 0;
    const char *q = strchr(p + 1, '"'), *slash = strchr(p + 1, '/');
    if (!q || !slash || slash > q)
        return 0; /* same-folder include */
    char top[64];
    size_t n = (size_t)(slash - (p + 1));
    if (n >= sizeof(top))
        n = sizeof(top) - 1;
    memcpy(top, p + 1, n);
    top[n] = '\0';
    if (allowed(r, top))
        return 0;
    snprintf(why, len, "includes %.*s (%s/ may not use %s/)",
             (int)(q - p + 1), p, r->dir, top);
    return 1;
}

static int check_file(const layout_rule_t *r, const char *path, char *report,
                      size_t len)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[1024], why[256];
    int bad = 0, lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (check_line(r, line, why, sizeof(why))) {
            size_t used = strlen(report);
            snprintf(report + used, len - used, "%s:%d: %s\n", path, lineno,
                     why);
            bad++;
        }
    }
    fclose(f);
    return bad;
}

static int walk(const layout_rule_t *r, const char *dir, char *report,
                size_t len, int *files)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            bad += walk(r, path, report, len, files);
        } else if (is_source(e->d_name)) {
            (*files)++;
            bad += check_file(r, path, report, len);
        }
    }
    closedir(d);
    return bad;
}

START_TEST(include_rules)
{
    const layout_rule_t *r = &rules[_i];
    char dir[1024];
    static char report[16384];
    report[0] = '\0';
    int files = 0;
    int bad = walk(r, tu_src_path(dir, sizeof(dir), r->dir), report,
                   sizeof(report), &files);
    ck_assert_msg(files > 0, "no sources under %s", r->dir);
    ck_assert_msg(bad == 0, "%d include(s) break the layout:\n%s", bad,
                  report);
}
END_TEST

/* The rule itself: a line that breaks it is caught, one that keeps it is
 * not (so a broken parser cannot pass every folder silently). */
START_TEST(rule_catches_violations)
{
    char why[256];
    ck_assert_int_eq(check_line(&rules[2], "#include \"real/tcp/tcp.h\"\n",
                                why, sizeof(why)),
                     1);
    ck_assert_ptr_nonnull(strstr(why, "sim/ may not use real/"));
    ck_assert_int_eq(check_line(&rules[5], " #  include \"sim/sim.h\"", why,
                                sizeof(why)),
                     1);
    ck_assert_int_eq(check_line(&rules[3], "#include  \"sim/sim.h\"", why,
                                sizeof(why)),
                     1);
    ck_assert_int_eq(
        check_line(&rules[3], "#include \"core/engine.h\"", why, sizeof(why)),
        0);
    ck_assert_int_eq(
        check_line(&rules[1], "#include \"cli/cli.h\"", why, sizeof(why)), 1);
    ck_assert_int_eq(
        check_line(&rules[2], "#include \"exec_impl.h\"", why, sizeof(why)),
        0);
}
END_TEST

/* No tracked file names the folder beside the repository: the suite, the
 * demo and the docs run from a clone that has nothing next to it. */
START_TEST(stands_alone)
{
    char cmd[2048], src[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && git rev-parse --git-dir >/dev/null 2>&1 || exit 77; "
             "git grep -n -I -e '[.][.]/shared' "
             "; true",
             tu_src_path(src, sizeof(src), "."));
    int rc = tu_run(cmd, &out);
    ck_assert_ptr_nonnull(out);
    if (rc == 77) {
        free(out); /* not a git checkout (a tarball): nothing to list */
        return;
    }
    ck_assert_msg(out[0] == '\0', "files refer outside the repository:\n%s",
                  out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unit_layout");
    TCase *tc = tcase_create("layout");
    tcase_add_loop_test(tc, include_rules, 0,
                        (int)(sizeof(rules) / sizeof(rules[0])));
    tcase_add_test(tc, rule_catches_violations);
    tcase_add_test(tc, stands_alone);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
