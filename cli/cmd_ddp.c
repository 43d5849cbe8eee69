/* cli/cmd_ddp.c - `herd ddp`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_ddp_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd ddp: not available yet in this version\n");
    return 2;
}
