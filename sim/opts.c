/* sim/opts.c - defaults of the simulator's options (herd_sim_opts_init).
 *
 * The defaults describe one node of 8 H100-class GPUs: NVLink at the
 * measured ring bus bandwidth (~370 GB/s per GPU and direction) and a
 * 400 Gb/s NIC per GPU (50 GB/s line rate) into a non-blocking fabric.
 * The values are documented in docs/network-model.md. */
#include <string.h>

#include <herd/sim.h>

void herd_sim_opts_init(herd_sim_opts_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->cluster.nodes = 1;
    opts->cluster.gpus_per_node = 8;
    opts->cluster.intra.bandwidth = 370e9;
    opts->cluster.intra.latency = 1e-6;
    opts->cluster.inter.bandwidth = 50e9;
    opts->cluster.inter.latency = 4e-6;
    opts->cluster.nics_per_node = 0;
    opts->cluster.topo = HERD_TOPO_NONBLOCKING;
    opts->cluster.oversub = 1.0;
    opts->cluster.nodes_per_leaf = 16;
    opts->cluster.reduce_bw = 0.0;
    opts->cluster.spine_latency = 1e-6;
    opts->world_size = 0;
    opts->seed = 1;
    opts->jitter = HERD_JITTER_NONE;
    opts->jitter_sigma = 0.0;
}
