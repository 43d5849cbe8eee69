/* cli/cmd_perf.c - `herd perf`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_perf_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd perf: not available yet in this version\n");
    return 2;
}
