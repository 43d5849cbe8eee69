/* cli/cmd_check.c - `herd check`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_check_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd check: not available yet in this version\n");
    return 2;
}
