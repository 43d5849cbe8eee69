/* cli/cmd_trace.c - `herd trace`: trace tools. `rescale` writes a trace
 * for another world size (or says why it cannot). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "trace/trace.h"

static const char usage[] =
    "usage: herd trace rescale IN --world-size M -o OUT\n"
    "Writes IN (herd-trace JSON) for M ranks: data-parallel collectives\n"
    "keep their per-rank counts; rank-specific parts (rank filters,\n"
    "per-rank changes and lists, absolute peers and roots) are tiled when M\n"
    "is a multiple of the old size and kept when they name ranks below M;\n"
    "anything else (a peer or root that no longer exists, groups under\n"
    "tiling) is rejected with the reason. Exit: 0 ok, 2 bad input.\n";

static int trace_rescale_cmd(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    long m = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--world-size") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], 1, TRACE_MAX_WORLD, &m))
                return cli_usage_error("trace",
                                       "--world-size: expected an "
                                       "integer in [1, %d]",
                                       TRACE_MAX_WORLD);
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-' || in) {
            return cli_usage_error("trace", "unexpected argument '%s'",
                                   argv[i]);
        } else {
            in = argv[i];
        }
    }
    if (!in || !out || !m)
        return cli_usage_error("trace", "expected: rescale IN --world-size M "
                                        "-o OUT");
    char err[1024];
    trace_t *t = NULL, *r = NULL;
    int rc = 0;
    if (trace_read_json(in, &t, err, sizeof(err)) ||
        trace_rescale(t, (int)m, &r, err, sizeof(err)) ||
        trace_write_json(r, out, err, sizeof(err))) {
        fprintf(stderr, "herd trace rescale: %s\n", err);
        rc = 2;
    } else {
        printf("%s: %d ranks -> %s: %d ranks\n", in, t->world_size, out,
               r->world_size);
    }
    trace_destroy(r);
    trace_destroy(t);
    return rc;
}

int cli_trace_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "rescale"))
        return cli_wants_help(argc, argv, usage)
                   ? 0
                   : trace_rescale_cmd(argc, argv);
    return cli_usage_error("trace", "unknown tool '%s' (expected rescale)",
                           argv[1]);
}
