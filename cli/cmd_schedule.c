/* cli/cmd_schedule.c - `herd schedule`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_schedule_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd schedule: not available yet in this version\n");
    return 2;
}
