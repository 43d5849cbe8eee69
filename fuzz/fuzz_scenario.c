/* fuzz/fuzz_scenario.c - scenario YAML: the reader (libfyaml, the byte
 * scan, the anchor/alias refusal, every key's value parser), the writer
 * on what it accepted, and the same text as a `--set` value. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "trace/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_string(data, size), err[1024];
    trace_scenario_t *sc = NULL;
    if (trace_scenario_load_string(text, "fuzz.yaml", &sc, err, sizeof(err)) ==
        HERD_OK) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            trace_scenario_write(sc, null);
            fclose(null);
        }
        trace_scenario_destroy(sc);
    }
    /* --set: the text as the value of a section and of a scalar key */
    if (trace_scenario_create(&sc) == HERD_OK) {
        trace_scenario_set(sc, "cluster", text, err, sizeof(err));
        trace_scenario_set(sc, "stragglers", text, err, sizeof(err));
        trace_scenario_set(sc, "workload.sweep.max", text, err, sizeof(err));
        trace_scenario_validate(sc, err, sizeof(err));
        trace_scenario_destroy(sc);
    }
    free(text);
    return 0;
}
