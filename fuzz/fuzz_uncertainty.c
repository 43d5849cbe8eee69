/* fuzz/fuzz_uncertainty.c - a validation's table for `herd sweep
 * --uncertainty` (cli/cli_uncertainty.c): header columns, numbers, line
 * lengths. The reader takes a path, so the input goes through a scratch
 * file. */
#include "cli/cli_uncertainty.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1200];
    cli_uncertainty_t u;
    (void)cli_uncertainty_load(fz_file("points.tsv", data, size), &u, err,
                               sizeof(err));
    return 0;
}
