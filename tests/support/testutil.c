/* tests/support/testutil.c - helpers shared by the Check suites. */
#include "support/testutil.h"
#include "trace/scenario.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int tu_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

const char *tu_src_path(char *buf, size_t len, const char *rel)
{
    snprintf(buf, len, "%s/%s", env_or("HERD_SOURCE_DIR", "."), rel);
    return buf;
}

const char *tu_data_path(char *buf, size_t len, const char *rel)
{
    snprintf(buf, len, "%s/tests/data/%s", env_or("HERD_SOURCE_DIR", "."), rel);
    return buf;
}

const char *tu_herd_binary(void)
{
    return env_or("HERD_BINARY", "herd");
}

int tu_run(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 1024) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (buf)
        buf[len] = '\0';
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *tu_tmpdir(void)
{
    char tmpl[] = "/tmp/herd-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_tmpdir_free(char *dir)
{
    if (!dir)
        return;
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

char *tu_read_in(const char *dir, const char *name)
{
    char path[2048];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *s = tu_read_file(path);
    ck_assert_msg(s != NULL, "no %s", path);
    return s;
}

int tu_herd(const char *args, char **out)
{
    size_t len = strlen(tu_herd_binary()) + strlen(args) + 16;
    char *cmd = malloc(len);
    if (!cmd)
        return -1;
    snprintf(cmd, len, "%s %s 2>&1", tu_herd_binary(), args);
    int rc = tu_run(cmd, out);
    free(cmd);
    return rc;
}

char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf) {
        size_t got = fread(buf, 1, (size_t)n, f);
        buf[got] = '\0';
    }
    fclose(f);
    return buf;
}

char *tu_scenario_written(const char *yaml)
{
    trace_scenario_t *sc = NULL;
    char err[512] = "", *buf = NULL;
    size_t len = 0;
    herd_status_t st =
        yaml ? trace_scenario_load_string(yaml, "s.yaml", &sc, err, sizeof(err))
             : trace_scenario_create(&sc);
    ck_assert_msg(st == HERD_OK, "%s", err);
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(trace_scenario_write(sc, f), HERD_OK);
    fclose(f);
    trace_scenario_destroy(sc);
    return buf;
}
