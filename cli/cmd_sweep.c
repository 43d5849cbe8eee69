/* cli/cmd_sweep.c - `herd sweep`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_sweep_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd sweep: not available yet in this version\n");
    return 2;
}
