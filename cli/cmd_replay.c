/* cli/cmd_replay.c - `herd replay`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_replay_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd replay: not available yet in this version\n");
    return 2;
}
