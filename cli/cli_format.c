/* cli/cli_format.c - which herd file format a file is, from its content
 * (not its name, except YAML scenarios): `herd check` says what it
 * found, and the commands that read one format (compare, ddp report)
 * name the format they expected and the one they got, instead of reading
 * a foreign file as an empty one. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char *const format_names[] = {
    [CLI_FMT_UNREADABLE] = "unreadable file",
    [CLI_FMT_NOT_JSON] = "not JSON",
    [CLI_FMT_GZIP] = "gzip-compressed file",
    [CLI_FMT_SCENARIO] = "herd scenario (YAML)",
    [CLI_FMT_TRACE] = "herd trace (herd-trace JSON)",
    [CLI_FMT_TIMELINE] = "herd timeline (herd-timeline Chrome trace JSON)",
    [CLI_FMT_MODEL] = "herd model (DDP model JSON)",
    [CLI_FMT_READY_ORDER] = "ready-order (JSON array of parameter indices)",
    [CLI_FMT_FLIGHT] = "flight record (an engine's dump)",
    [CLI_FMT_PROFILER] = "PyTorch profiler trace (Kineto Chrome trace JSON)",
    [CLI_FMT_CHROME] = "Chrome trace JSON not written by herd",
    [CLI_FMT_OTHER_JSON] = "JSON file of no herd format",
};

const char *cli_format_name(cli_format_t f)
{
    return f >= 0 && f < CLI_FMT_COUNT ? format_names[f] : "?";
}

static int ends_with(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcmp(path + n - e, ext);
}

/* The first bytes: gzip's magic, or where the JSON text starts. */
static cli_format_t sniff_head(const char *path)
{
    unsigned char head[64];
    FILE *f = fopen(path, "rb");
    if (!f)
        return CLI_FMT_UNREADABLE;
    size_t n = fread(head, 1, sizeof(head), f);
    fclose(f);
    if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        return CLI_FMT_GZIP;
    size_t i = 0;
    if (n >= 3 && head[0] == 0xef && head[1] == 0xbb && head[2] == 0xbf)
        i = 3; /* UTF-8 byte order mark */
    while (i < n && strchr(" \t\r\n", head[i]))
        i++;
    return i < n && (head[i] == '{' || head[i] == '[') ? CLI_FMT_OTHER_JSON
                                                       : CLI_FMT_NOT_JSON;
}

static int all_integers(const json_t *a)
{
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) if (!json_is_integer(v)) return 0;
    return 1;
}

/* A Chrome trace: herd's own (otherData.format), PyTorch's profiler
 * (Kineto's top-level keys) or some other tool's. */
static cli_format_t chrome_kind(const json_t *root)
{
    const json_t *od = json_object_get(root, "otherData");
    const char *fmt = json_string_value(json_object_get(od, "format"));
    if (fmt && !strcmp(fmt, "herd-timeline"))
        return CLI_FMT_TIMELINE;
    static const char *const kineto[] = {"schemaVersion", "deviceProperties",
                                         "distributedInfo",
                                         "baseTimeNanoseconds"};
    for (size_t k = 0; k < sizeof(kineto) / sizeof(kineto[0]); k++)
        if (json_object_get(root, kineto[k]))
            return CLI_FMT_PROFILER;
    return CLI_FMT_CHROME;
}

static cli_format_t json_kind(const json_t *root)
{
    if (json_is_array(root)) {
        const json_t *first = json_array_get(root, 0);
        if (all_integers(root))
            return CLI_FMT_READY_ORDER;
        /* Chrome's "JSON array format": a bare list of events */
        return json_is_object(first) && json_object_get(first, "ph")
                   ? CLI_FMT_CHROME
                   : CLI_FMT_OTHER_JSON;
    }
    if (!json_is_object(root))
        return CLI_FMT_OTHER_JSON;
    const char *fmt = json_string_value(json_object_get(root, "format"));
    if (fmt && !strcmp(fmt, "herd-trace"))
        return CLI_FMT_TRACE;
    if (json_object_get(root, "traceEvents"))
        return chrome_kind(root);
    if (json_is_array(json_object_get(root, "params")) &&
        json_is_string(json_object_get(root, "model")))
        return CLI_FMT_MODEL;
    if (json_is_array(json_object_get(root, "entries")) &&
        json_is_integer(json_object_get(root, "rank")) &&
        json_is_integer(json_object_get(root, "world_size")))
        return CLI_FMT_FLIGHT;
    return CLI_FMT_OTHER_JSON;
}

cli_format_t cli_format_sniff(const char *path)
{
    if (ends_with(path, ".yaml") || ends_with(path, ".yml"))
        return sniff_head(path) == CLI_FMT_UNREADABLE ? CLI_FMT_UNREADABLE
                                                      : CLI_FMT_SCENARIO;
    cli_format_t f = sniff_head(path);
    if (f != CLI_FMT_OTHER_JSON)
        return f;
    /* A herd timeline says so in its first line: no need to parse it
     * twice (timelines of large runs are big). */
    char head[512];
    FILE *fp = fopen(path, "r");
    size_t n = fp ? fread(head, 1, sizeof(head) - 1, fp) : 0;
    if (fp)
        fclose(fp);
    head[n] = '\0';
    if (strstr(head, "\"otherData\": {\"format\":\"herd-timeline\""))
        return CLI_FMT_TIMELINE;
    json_error_t je;
    json_t *root = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!root)
        return CLI_FMT_NOT_JSON;
    f = json_kind(root);
    json_decref(root);
    return f;
}

int cli_format_expect(const char *cmd, const char *path, cli_format_t want)
{
    cli_format_t got = cli_format_sniff(path);
    if (got == want || got == CLI_FMT_UNREADABLE || got == CLI_FMT_NOT_JSON)
        return 0; /* the reader says what is wrong, with line and column */
    char hint[128] = "";
    if (want == CLI_FMT_TIMELINE &&
        (got == CLI_FMT_PROFILER || got == CLI_FMT_GZIP ||
         got == CLI_FMT_CHROME))
        snprintf(hint, sizeof(hint),
                 "; `herd import` converts a PyTorch profiler trace "
                 "(plain or gzipped) to one");
    return cli_usage_error(cmd, "%s: expected a %s, found a %s%s", path,
                           cli_format_name(want), cli_format_name(got), hint);
}
