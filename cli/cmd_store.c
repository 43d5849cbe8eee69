/* cli/cmd_store.c - `herd store`: not built yet (its issue is open). */
#include <stdio.h>

#include "cli/cli.h"

int cli_store_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "herd store: not available yet in this version\n");
    return 2;
}
