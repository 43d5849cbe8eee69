/* cli/cli_util.c - helpers shared by the subcommands: usage errors, number
 * and size parsing, where the plot scripts live. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/engine.h"
#include "core/escape.h"
#include "real/testbed/testbed.h"
#include "trace/units.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    /* arguments often quote files or flags: escape what a terminal would
     * obey (core/escape.h) */
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    core_escape_msg(msg, sizeof(msg));
    fprintf(stderr, "herd %s: %s\n", cmd, msg);
    return 2;
}

int cli_wants_help(int argc, char **argv, const char *usage)
{
    /* after "--" the words belong to a command being wrapped */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 1;
        }
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_bytes(const char *s, uint64_t *out)
{
    /* one rule for every size flag (trace/units.h): the unit spellings and
     * nccl-tests' 1M/128K; no hex, no guessing what "1mb" means */
    char why[160];
    return trace_parse_bytes_flag(s, out, why, sizeof(why)) == HERD_OK ? 0 : -1;
}

int cli_engine_resolve(const char *cmd, const char *name, const char **engine)
{
    const char *e = core_engine_resolve(name);
    if (!e) {
        char engines[256];
        core_engine_describe(engines, sizeof(engines));
        return cli_usage_error(cmd, "unknown engine '%s'; engines: %s", name,
                               engines);
    }
    *engine = e;
    return 0;
}

const char *cli_plots_dir(void)
{
    const char *env = getenv("HERD_PLOTS_DIR");
    if (env && *env)
        return env;
    if (access(HERD_PLOTS_DIR, R_OK) == 0)
        return HERD_PLOTS_DIR;
    return HERD_INSTALLED_PLOTS_DIR;
}

/* "400Mbit", "1Gbit", "100mbit", "400Mbps", "1e9" -> bits per second. */
int cli_parse_rate(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0))
        return -1;
    static const struct {
        const char *u;
        double m;
    } units[] = {{"", 1},       {"bit", 1},    {"bps", 1},
                 {"kbit", 1e3}, {"kbps", 1e3}, {"mbit", 1e6},
                 {"mbps", 1e6}, {"gbit", 1e9}, {"gbps", 1e9}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcasecmp(end, units[i].u)) {
            *out = v * units[i].m;
            return 0;
        }
    return -1;
}

int cli_idle_restart(const char *s, int *out)
{
    if (!strcmp(s, "on") || !strcmp(s, "off")) {
        *out = s[1] == 'n' ? TESTBED_IDLE_RESTART_ON : TESTBED_IDLE_RESTART_OFF;
        return 0;
    }
    return -1;
}

int cli_testbed_cc(const char *s, char *out, size_t len)
{
    size_t n = strlen(s);
    if (n == 0 || n >= len || n > 15)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return -1;
    memcpy(out, s, n + 1);
    return 0;
}
