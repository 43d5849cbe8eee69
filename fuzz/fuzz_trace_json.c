/* fuzz/fuzz_trace_json.c - herd-trace JSON: jansson, then every op's
 * fields and the whole-trace checks (trace_check.c). */
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_string(data, size), err[1024];
    trace_t *t = NULL;
    if (trace_read_json_string(text, "fuzz.json", &t, err, sizeof(err)) ==
        HERD_OK)
        trace_destroy(t);
    free(text);
    return 0;
}
