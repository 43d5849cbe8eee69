/* workload/common/mem.h - the device memory limit the sharded workloads
 * share: the key `gpu_mem` (GiB per device, 0: no limit) of FSDP
 * (fsdp.gpu_mem) and of the 3D-parallel model (parallel.gpu_mem), its
 * value's check, whether a rank's peak fits, and the report's verdict
 * (which rank, by how much), so both spell, check and say it alike. A
 * configuration over it is marked and never recommended (herd sweep,
 * herd fsdp strategies), the memory plots draw it as a line. */
#ifndef HERD_WORKLOAD_COMMON_MEM_H
#define HERD_WORKLOAD_COMMON_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/status.h>

#define WL_GPU_MEM_KEY "gpu_mem"
#define WL_GIB 1073741824.0
#define WL_GPU_MEM_MAX 1e9 /* GiB: a bound, not a device */

/* `gpu_mem` of workload `wl` ("fsdp", "parallel") from text v: a number
 * of GiB in [0, WL_GPU_MEM_MAX]. Otherwise HERD_ERR_PARSE and err says
 * "WL.gpu_mem: bad value 'V'; expected ..." (the caller adds where). */
herd_status_t wl_gpu_mem_parse(const char *wl, const char *v, double *gib,
                               char *err, size_t len);

/* The limit in bytes; 0: none. */
double wl_gpu_mem_bytes(double gib);

/* 1 when `bytes` on one device fit `gib` (or there is no limit). */
int wl_gpu_mem_fits(double gib, uint64_t bytes);

/* Nothing without a limit; else " of G.GG GiB: fits", or " of G.GG GiB:
 * DOES NOT FIT WL.gpu_mem: rank R is X.XX GiB (P%) over" for the rank
 * with the most, `bytes`. */
void wl_gpu_mem_verdict(FILE *f, const char *wl, double gib, int rank,
                        uint64_t bytes);

#endif
