/* workload/common/mem.c - the device memory limit of the sharded
 * workloads (mem.h): one key, one check, one verdict for FSDP and the
 * 3D-parallel model. */
#include "workload/common/mem.h"

#include "workload/ddp/cfg.h"

herd_status_t wl_gpu_mem_parse(const char *wl, const char *v, double *gib,
                               char *err, size_t len)
{
    double d;
    if (ddp_cfg_parse_num(v, 0, WL_GPU_MEM_MAX, &d)) {
        snprintf(err, len,
                 "%s.%s: bad value '%s'; expected the device's memory in "
                 "GiB, a number in [0, %g] (0: no limit)",
                 wl, WL_GPU_MEM_KEY, v, WL_GPU_MEM_MAX);
        return HERD_ERR_PARSE;
    }
    *gib = d;
    return HERD_OK;
}

double wl_gpu_mem_bytes(double gib)
{
    return gib > 0 ? gib * WL_GIB : 0;
}

int wl_gpu_mem_fits(double gib, uint64_t bytes)
{
    return gib <= 0 || (double)bytes <= wl_gpu_mem_bytes(gib);
}

void wl_gpu_mem_verdict(FILE *f, const char *wl, double gib, int rank,
                        uint64_t bytes)
{
    if (gib <= 0)
        return;
    fprintf(f, " of %.2f GiB: ", gib);
    if (wl_gpu_mem_fits(gib, bytes)) {
        fprintf(f, "fits");
        return;
    }
    double over = (double)bytes - wl_gpu_mem_bytes(gib);
    fprintf(f, "DOES NOT FIT %s.%s: rank %d is %.2f GiB (%.0f%%) over", wl,
            WL_GPU_MEM_KEY, rank, over / WL_GIB,
            100 * over / wl_gpu_mem_bytes(gib));
}
