/* cli/cmd_validate.c - `herd validate`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_validate_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd validate: not available yet in this version\n");
    return 2;
}
