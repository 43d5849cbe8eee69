/* fuzz/fuzz_steps.c - step records (HERD_STEPS_DIR's TSV, trace/steps.c):
 * header, fields, numbers, line lengths; what parses is compared with
 * itself, as `herd compare` would. The reader takes a path, so the input
 * goes through a scratch file. */
#include "fuzz/fuzz.h"
#include "trace/steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1200];
    const char *path = fz_file("steps.tsv", data, size);
    trace_steps_t a = {0}, b = {0};
    (void)trace_steps_is_file(path);
    if (trace_steps_read(path, &a, err, sizeof(err)) == HERD_OK &&
        trace_steps_read(path, &b, err, sizeof(err)) == HERD_OK) {
        trace_step_cmp_t c;
        if (trace_steps_compare(&a, &b, &c) == HERD_OK) {
            FILE *f = fopen("/dev/null", "w");
            if (f) {
                trace_step_cmp_print(&c, f, 0);
                fclose(f);
            }
            trace_step_cmp_free(&c);
        }
    }
    trace_steps_free(&a);
    trace_steps_free(&b);
    return 0;
}
