/* cli/cmd_trace.c - `herd trace`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_trace_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd trace: not available yet in this version\n");
    return 2;
}
