/* fuzz/fuzz_model_json.c - DDP model JSON (workload/ddp/model.c): the
 * parameters, layers and the compute spread. The reader takes a path, so
 * the input goes through a scratch file. */
#include "fuzz/fuzz.h"
#include "workload/ddp/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    ddp_model_t m;
    if (ddp_model_load(fz_file("model.json", data, size), &m, err,
                       sizeof(err)) == HERD_OK)
        ddp_model_fini(&m);
    return 0;
}
