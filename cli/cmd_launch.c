/* cli/cmd_launch.c - `herd launch`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_launch_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd launch: not available yet in this version\n");
    return 2;
}
