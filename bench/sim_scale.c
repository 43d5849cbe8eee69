/* bench/sim_scale.c - how fast the simulator runs big jobs: a ring
 * all_reduce at chunk granularity on N nodes x G GPUs (default 64 x 8 =
 * 512 ranks, 1 GiB, 16 channels, 2 MiB chunks), then 1024 ranks (ring,
 * 4 channels: the same number of steps) and 4096 ranks (halving-doubling:
 * a ring's 2(p-1) steps per rank and channel would need ~1e9 steps).
 * Prints wall time, events processed, events per second, peak RSS and the
 * predicted time next to the bandwidth bound 2(p-1)/p * n / B_NIC.
 *
 *   bench_sim_scale                       the three standard runs
 *   bench_sim_scale NODES GPN BYTES [CHANNELS CHUNK ALGO]   one run */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <herd/herd.h>
#include <herd/sim.h>

typedef struct scale {
    int nodes, gpn, channels;
    uint64_t bytes, chunk;
    herd_algo_t algo;
} scale_t;

static int prog(herd_comm_t *c, void *arg)
{
    const scale_t *s = arg;
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, s->algo);
    herd_comm_set_channels(c, s->channels, (size_t)s->chunk);
    void *buf;
    if (herd_alloc(c, (size_t)s->bytes, &buf) != HERD_OK)
        return 1;
    return herd_all_reduce(c, buf, buf, (size_t)(s->bytes / 4), HERD_FLOAT32,
                           HERD_SUM, NULL) == HERD_OK
               ? 0
               : 2;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(const struct rusage *r)
{
    return (double)r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6 +
           (double)r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6;
}

static int run(const scale_t *s)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = s->nodes;
    o.cluster.gpus_per_node = s->gpn;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    herd_run_info_t info;
    struct rusage ru0, ru;
    getrusage(RUSAGE_SELF, &ru0);
    double t0 = now_s();
    herd_status_t st = herd_run(&init, prog, (void *)s, &info);
    double wall = now_s() - t0;
    getrusage(RUSAGE_SELF, &ru);
    /* CPU time too: on a shared machine wall time includes waiting */
    double cpu = cpu_s(&ru) - cpu_s(&ru0);
    int p = s->nodes * s->gpn;
    double bound =
        2.0 * (p - 1) / p * (double)s->bytes / o.cluster.inter.bandwidth;
    printf("%5d ranks (%d x %d) %s %.3g GiB, %d ch, %llu KiB chunks: %s\n"
           "      wall %.3f s (cpu %.3f s), %llu events, %.2f M events/s "
           "(%.2f M per cpu s), peak RSS %ld MiB\n"
           "      predicted %.3f ms (NIC bound %.3f ms)\n",
           p, s->nodes, s->gpn, herd_algo_name(s->algo),
           (double)s->bytes / (1 << 30), s->channels,
           (unsigned long long)(s->chunk >> 10), herd_status_string(st), wall,
           cpu, (unsigned long long)info.events, info.events / wall / 1e6,
           info.events / cpu / 1e6, ru.ru_maxrss / 1024, info.end_time_ns / 1e6,
           bound * 1e3);
    fflush(stdout);
    herd_run_info_clear(&info);
    return st == HERD_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    scale_t s = {64, 8, 16, 1ULL << 30, 2u << 20, HERD_ALGO_RING};
    if (argc >= 4) {
        s.nodes = atoi(argv[1]);
        s.gpn = atoi(argv[2]);
        s.bytes = strtoull(argv[3], NULL, 0);
        if (argc >= 6) {
            s.channels = atoi(argv[4]);
            s.chunk = strtoull(argv[5], NULL, 0);
        }
        if (argc >= 7 && herd_algo_parse(argv[6], &s.algo) != HERD_OK)
            return 2;
        if (s.nodes < 1 || s.gpn < 1 || s.bytes < 4)
            return 2;
        return run(&s);
    }
    int rc = run(&s);
    s.nodes = 128;
    s.channels = 4;
    rc |= run(&s);
    s.nodes = 512;
    s.channels = 1;
    s.bytes = 16u << 20;
    s.algo = HERD_ALGO_RHD;
    rc |= run(&s);
    return rc;
}
