/* cli/cmd_compare.c - `herd compare`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_compare_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd compare: not available yet in this version\n");
    return 2;
}
