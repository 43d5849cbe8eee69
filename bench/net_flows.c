/* bench/net_flows.c - speed of the simulator's network model alone.
 *
 * Drives a step-by-step ring all_reduce straight on sim/net: on every
 * channel, a rank sends step s+1 to its successor when step s from its
 * predecessor has been delivered. Prints flows, events, wall time,
 * events per second and the simulated time.
 *
 *   bench_net_flows [nodes] [gpus_per_node] [channels] [bytes] [topo]
 * (defaults: 64 8 16 1073741824 flat, i.e. 8.4 M flows, 8192 in flight;
 * topo: flat, fattree (8 nodes per leaf, 4:1) or rail (2:1)) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/net.h"

typedef struct ring {
    sim_net_t *net;
    int p, ch, steps;
    uint64_t chunk;
    uint64_t events, end;
    int failed;
} ring_t;

/* ctx = (step * ch + channel) * p + receiving rank */
static void on_done(void *ctx, uint64_t t, int delivered, void *arg)
{
    ring_t *r = arg;
    r->events++;
    if (!delivered)
        return;
    uint64_t k = (uint64_t)(uintptr_t)ctx;
    int rank = (int)(k % (uint64_t)r->p);
    uint64_t sc = k / (uint64_t)r->p;
    int c = (int)(sc % (uint64_t)r->ch), step = (int)(sc / (uint64_t)r->ch);
    if (step + 1 == r->steps) {
        r->end = t;
        return;
    }
    int dst = (rank + 1) % r->p;
    uint64_t nk = ((uint64_t)(step + 1) * r->ch + c) * r->p + dst;
    if (sim_net_flow_start(r->net, t, rank, dst, c, r->chunk,
                           (void *)(uintptr_t)nk) != HERD_OK)
        r->failed = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = argc > 1 ? atoi(argv[1]) : 64;
    o.cluster.gpus_per_node = argc > 2 ? atoi(argv[2]) : 8;
    ring_t r = {.ch = argc > 3 ? atoi(argv[3]) : 16};
    uint64_t bytes = argc > 4 ? strtoull(argv[4], NULL, 10) : 1ull << 30;
    const char *topo = argc > 5 ? argv[5] : "flat";
    if (strcmp(topo, "fattree") == 0) {
        o.cluster.topo = HERD_TOPO_FATTREE;
        o.cluster.nodes_per_leaf = 8;
        o.cluster.oversub = 4;
    } else if (strcmp(topo, "rail") == 0) {
        o.cluster.topo = HERD_TOPO_RAIL;
        o.cluster.oversub = 2;
    }
    r.p = o.cluster.nodes * o.cluster.gpus_per_node;
    if (r.p < 2 || r.ch < 1) {
        fprintf(stderr, "bench_net_flows: need >= 2 ranks and >= 1 channel\n");
        return 2;
    }
    r.steps = 2 * (r.p - 1);
    r.chunk = bytes / ((uint64_t)r.p * (uint64_t)r.ch);
    herd_status_t st = sim_net_create(&o, 0, on_done, &r, &r.net);
    if (st != HERD_OK) {
        fprintf(stderr, "bench_net_flows: %s\n", herd_status_string(st));
        return 1;
    }
    double t0 = now_s();
    for (int c = 0; c < r.ch; c++)
        for (int i = 0; i < r.p; i++) {
            int dst = (i + 1) % r.p;
            uint64_t k = (uint64_t)c * r.p + dst;
            if (sim_net_flow_start(r.net, 0, i, dst, c, r.chunk,
                                   (void *)(uintptr_t)k) != HERD_OK)
                r.failed = 1;
        }
    uint64_t t;
    while ((t = sim_net_next_time(r.net)) != UINT64_MAX)
        sim_net_advance(r.net, t);
    double wall = now_s() - t0;
    sim_net_stats_t s;
    sim_net_stats(r.net, &s);
    printf("ranks %d channels %d bytes %llu chunk %llu topo %s\n", r.p, r.ch,
           (unsigned long long)bytes, (unsigned long long)r.chunk, topo);
    printf("flows %llu events %llu recomputes %llu peak_in_flight %llu\n",
           (unsigned long long)s.flows, (unsigned long long)r.events,
           (unsigned long long)s.recomputes, (unsigned long long)s.peak_active);
    printf("wall %.3f s  %.2f M events/s  simulated %.6f s\n", wall,
           r.events / wall / 1e6, r.end * 1e-9);
    sim_net_destroy(r.net);
    return r.failed ? 1 : 0;
}
