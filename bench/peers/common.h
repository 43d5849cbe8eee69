/* bench/peers/common.h - shared by the peer harnesses: the sweep options
 * and the output line, identical to bench/tcp_allreduce.c, so herd, Open
 * MPI and Gloo tables compare line by line. Options: -b MIN -e MAX
 * (bytes, K/M/G suffixes), -f FACTOR, -n ITERS, -w WARMUP. */
#ifndef HERD_BENCH_PEERS_COMMON_H
#define HERD_BENCH_PEERS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct peer_opts {
    uint64_t min, max;
    int factor, iters, warmup;
    const char *algo;
} peer_opts_t;

static inline uint64_t peer_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M' || *end == 'm')
        v *= 1024.0 * 1024;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024;
    return (uint64_t)v;
}

static inline int peer_parse(int argc, char **argv, peer_opts_t *o)
{
    o->min = 8;
    o->max = 256u << 20;
    o->factor = 2;
    o->iters = 0;
    o->warmup = 3;
    o->algo = "ring";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "-b"))
            o->min = peer_size(v);
        else if (!strcmp(f, "-e"))
            o->max = peer_size(v);
        else if (!strcmp(f, "-f"))
            o->factor = atoi(v);
        else if (!strcmp(f, "-n"))
            o->iters = atoi(v);
        else if (!strcmp(f, "-w"))
            o->warmup = atoi(v);
        else if (!strcmp(f, "-a"))
            o->algo = v;
        else
            return -1;
    }
    return o->min < 4 || o->factor < 2 ? -1 : 0;
}

static inline int peer_iters(const peer_opts_t *o, uint64_t bytes)
{
    if (o->iters > 0)
        return o->iters;
    uint64_t n = (200u << 20) / (bytes + 1);
    return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

static inline double peer_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static inline void peer_header(const char *who, int p, const char *algo)
{
    printf("# %s all_reduce float32 sum, %d ranks, algo %s\n"
           "#%11s %12s %10s %9s %9s %6s\n",
           who, p, algo, "size(B)", "count", "time(us)", "algbw", "busbw",
           "check");
}

static inline void peer_line(uint64_t b, int p, double us)
{
    double algbw = (double)b / us / 1e3;
    printf("%12llu %12llu %10.2f %9.3f %9.3f %6s\n", (unsigned long long)b,
           (unsigned long long)(b / 4), us, algbw, algbw * 2.0 * (p - 1) / p,
           "-");
    fflush(stdout);
}

#endif
