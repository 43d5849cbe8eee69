/* fuzz/fuzz_util.c - the helpers of fuzz.h. The scratch folder lives as
 * long as the fuzzing process; its files are rewritten per input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/fuzz.h"

char *fz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static char fz_tmp[256];

static void fz_cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fz_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", fz_tmp);
}

const char *fz_dir(void)
{
    if (!fz_tmp[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(fz_tmp, sizeof(fz_tmp), "%s/herd-fuzz-XXXXXX",
                 base && *base ? base : "/tmp");
        if (!mkdtemp(fz_tmp))
            abort();
        atexit(fz_cleanup);
    }
    return fz_tmp;
}

const char *fz_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", fz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f))
        abort();
    return path;
}
