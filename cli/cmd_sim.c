/* cli/cmd_sim.c - `herd sim`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_sim_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd sim: not available yet in this version\n");
    return 2;
}
