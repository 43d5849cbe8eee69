/* cli/cmd_diagnose.c - `herd diagnose`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_diagnose_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd diagnose: not available yet in this version\n");
    return 2;
}
