/* fuzz/fuzz_timeline.c - herd-timeline (Chrome trace event JSON) as
 * `herd check` and `herd compare` read it. */
#include "fuzz/fuzz.h"
#include "trace/timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    trace_timeline_t *tl = NULL;
    if (trace_timeline_read_chrome(fz_file("timeline.json", data, size), &tl,
                                   err, sizeof(err)) == HERD_OK)
        trace_timeline_destroy(tl);
    return 0;
}
