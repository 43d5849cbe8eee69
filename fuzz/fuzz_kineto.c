/* fuzz/fuzz_kineto.c - PyTorch profiler (Kineto) traces as `herd import`
 * reads them (trace/kineto.c, plain or gzip JSON), then cut into steps
 * with each collective's launch matched to its work (kineto_steps.c). */
#include "fuzz/fuzz.h"
#include "trace/kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    kineto_rank_t r;
    if (kineto_read(fz_file("kineto.json", data, size), 0, &r, err,
                    sizeof(err)) != HERD_OK)
        return 0;
    kineto_steps_t s;
    if (kineto_steps(&r, &s, err, sizeof(err)) == HERD_OK)
        kineto_steps_fini(&s);
    kineto_rank_fini(&r);
    return 0;
}
