/* cli/cmd_calibrate.c - `herd calibrate`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_calibrate_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd calibrate: not available yet in this version\n");
    return 2;
}
