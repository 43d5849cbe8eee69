/* cli/cmd_testbed.c - `herd testbed`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_testbed_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd testbed: not available yet in this version\n");
    return 2;
}
