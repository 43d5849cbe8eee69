/* trace/units.c - parse and format sizes, bandwidths and times with their
 * units written out. Suffixes are case-sensitive where case carries
 * meaning: "B" is a byte, "b" a bit. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/units.h"

typedef struct units_suffix {
    const char *name;
    double mult;
} units_suffix_t;

static const units_suffix_t units_bytes[] = {{"", 1},
                                             {"B", 1},
                                             {"KB", 1e3},
                                             {"kB", 1e3},
                                             {"MB", 1e6},
                                             {"GB", 1e9},
                                             {"TB", 1e12},
                                             {"KiB", 1024.0},
                                             {"MiB", 1048576.0},
                                             {"GiB", 1073741824.0},
                                             {"TiB", 1099511627776.0},
                                             {NULL, 0}};

/* Bandwidths in bytes per second: bits are divided by 8. */
static const units_suffix_t units_bw[] = {
    {"bps", 1 / 8.0},        {"Kbps", 1e3 / 8}, {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},       {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8},
    {"b/s", 1 / 8.0},        {"Kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8},
    {"Gb/s", 1e9 / 8},       {"B/s", 1},        {"KB/s", 1e3},
    {"kB/s", 1e3},           {"MB/s", 1e6},     {"GB/s", 1e9},
    {"TB/s", 1e12},          {"KiB/s", 1024.0}, {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0}, {NULL, 0}};

static const units_suffix_t units_time[] = {
    {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6},
    {"ms", 1e-3}, {"s", 1},     {NULL, 0}};

/* Split "  1.5 MiB " into a finite non-negative number and a suffix, and
 * look the suffix up in `table`. */
static herd_status_t units_parse(const char *s, const units_suffix_t *table,
                                 double *out)
{
    if (!s)
        return HERD_ERR_PARSE;
    while (isspace((unsigned char)*s))
        s++;
    /* Only plain decimals: strtod would also take hex ("0x10"), inf and
     * nan, so the number's extent is found here and strtod must agree. */
    const char *p = s;
    int digits = 0;
    while (isdigit((unsigned char)*p))
        p++, digits++;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            digits++;
    if (digits && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1 + (p[1] == '+' || p[1] == '-');
        if (isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q))
                q++;
            p = q;
        }
    }
    if (!digits)
        return HERD_ERR_PARSE;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end != p)
        return HERD_ERR_PARSE;
    if (errno == ERANGE || !isfinite(v))
        return HERD_ERR_OVERFLOW;
    if (*end == ' ')
        end++;
    size_t n = strlen(end);
    while (n > 0 && isspace((unsigned char)end[n - 1]))
        n--;
    for (const units_suffix_t *u = table; u->name; u++)
        if (strlen(u->name) == n && !strncmp(end, u->name, n)) {
            double r = v * u->mult;
            if (!isfinite(r))
                return HERD_ERR_OVERFLOW;
            *out = r;
            return HERD_OK;
        }
    return HERD_ERR_PARSE;
}

herd_status_t trace_parse_bytes(const char *s, uint64_t *out)
{
    double v;
    herd_status_t st = units_parse(s, units_bytes, &v);
    if (st)
        return st;
    if (v >= 18446744073709551616.0)
        return HERD_ERR_OVERFLOW;
    if (v != floor(v))
        return HERD_ERR_PARSE; /* a fraction of a byte */
    *out = (uint64_t)v;
    return HERD_OK;
}

herd_status_t trace_parse_bytes_flag(const char *s, uint64_t *out, char *why,
                                     size_t whylen)
{
    herd_status_t st = trace_parse_bytes(s, out);
    if (st != HERD_ERR_PARSE) {
        if (st)
            snprintf(why, whylen, "'%s' is too large (at most 2^64 - 1 bytes)",
                     s);
        return st;
    }
    /* nccl-tests' spellings: a whole number and one of K, M, G (either
     * case), powers of 1024. */
    const char *p = s;
    while (isdigit((unsigned char)*p))
        p++;
    static const char binary[] = "KMG";
    const char *u = *p ? strchr(binary, toupper((unsigned char)*p)) : NULL;
    if (p > s && u && !p[1]) {
        errno = 0;
        unsigned long long v = strtoull(s, NULL, 10);
        unsigned shift = 10 * (unsigned)(u - binary + 1);
        if (errno || v > (UINT64_MAX >> shift)) {
            snprintf(why, whylen, "'%s' is too large (at most 2^64 - 1 bytes)",
                     s);
            return HERD_ERR_OVERFLOW;
        }
        *out = (uint64_t)v << shift;
        return HERD_OK;
    }
    /* "1mb", "4kb": decimal or binary? Refuse rather than guess. */
    size_t n = strlen(p);
    if (p > s && n == 2 && tolower((unsigned char)p[0]) != 'b' &&
        strchr("kmgtKMGT", p[0]) && (p[1] == 'b' || p[1] == 'B')) {
        char up = (char)toupper((unsigned char)p[0]);
        snprintf(why, whylen,
                 "'%s' is ambiguous: write %.*s%cB (powers of 1000) or "
                 "%.*s%ciB (powers of 1024)",
                 s, (int)(p - s), s, up, (int)(p - s), s, up);
        return HERD_ERR_PARSE;
    }
    snprintf(why, whylen, "'%s' is not %s or 1M", s, TRACE_FORM_BYTES);
    return HERD_ERR_PARSE;
}

herd_status_t trace_parse_bandwidth(const char *s, double *bytes_per_s)
{
    /* A bandwidth needs its unit: "400" alone is ambiguous (bits?).
     * units_parse sets the output only on success, as the API promises. */
    return units_parse(s, units_bw, bytes_per_s);
}

herd_status_t trace_parse_time(const char *s, double *seconds)
{
    return units_parse(s, units_time, seconds);
}

void trace_format_bytes(uint64_t bytes, char *buf, unsigned len)
{
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (i < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        i++;
    }
    snprintf(buf, len, "%llu%s", (unsigned long long)bytes, names[i]);
}

void trace_format_time(double seconds, char *buf, unsigned len)
{
    if (seconds >= 1 || seconds == 0)
        snprintf(buf, len, "%.6gs", seconds);
    else if (seconds >= 1e-3)
        snprintf(buf, len, "%.6gms", seconds * 1e3);
    else if (seconds >= 1e-6)
        snprintf(buf, len, "%.6gus", seconds * 1e6);
    else
        snprintf(buf, len, "%.6gns", seconds * 1e9);
}
