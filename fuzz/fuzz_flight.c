/* fuzz/fuzz_flight.c - flight-record dumps as `herd diagnose DIR` reads
 * them. The input is split at NUL bytes (JSON has none) into the dumps of
 * ranks 0, 1, ... so the analysis across ranks runs too. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fuzz/fuzz.h"

#define FZ_MAX_DUMPS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[32], dir[300];
    int n = 0;
    for (size_t off = 0; n < FZ_MAX_DUMPS;) {
        const uint8_t *nul = memchr(data + off, 0, size - off);
        size_t len = nul ? (size_t)(nul - (data + off)) : size - off;
        snprintf(name, sizeof(name), "rank%d.json", n++);
        fz_file(name, data + off, len);
        if (!nul)
            break;
        off += len + 1;
    }
    for (int r = n; r < FZ_MAX_DUMPS; r++) { /* last input's extra dumps */
        snprintf(name, sizeof(name), "%s/rank%d.json", fz_dir(), r);
        unlink(name);
    }
    snprintf(dir, sizeof(dir), "%s", fz_dir());
    char *argv[] = {"diagnose", dir, NULL};
    cli_diagnose_main(2, argv);
    return 0;
}
