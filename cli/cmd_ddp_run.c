/* cli/cmd_ddp_run.c - `herd ddp run`. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"

int cli_ddp_run_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd ddp run: not available yet in this version\n");
    return 2;
}
