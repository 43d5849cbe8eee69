/* bench/tcp_allreduce.c - all_reduce sweep on the tcp engine, in the same
 * output format as the peer harnesses (bench/peers/), so herd, Open MPI
 * and Gloo can be compared line by line. Run under a launcher:
 *
 *   herd launch --nproc-per-node 4 -- bench_tcp_allreduce -b 8 -e 256M
 *
 * Options: -b MIN -e MAX (bytes), -f FACTOR, -n ITERS, -w WARMUP, -a ALGO,
 * -c 1 (check the result), -C CHANNELS. Time per size is the slowest
 * rank's mean; busbw = algbw * 2(p-1)/p as nccl-tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <herd/herd.h>

typedef struct bopts {
    uint64_t min, max;
    int factor, iters, warmup, check, channels;
    herd_algo_t algo;
} bopts_t;

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k':
        v *= 1024;
        break;
    case 'M':
    case 'm':
        v *= 1024 * 1024;
        break;
    case 'G':
    case 'g':
        v *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return (uint64_t)v;
}

static int parse(int argc, char **argv, bopts_t *o)
{
    *o = (bopts_t){.min = 8,
                   .max = 256u << 20,
                   .factor = 2,
                   .iters = 0,
                   .warmup = 3,
                   .algo = HERD_ALGO_AUTO,
                   .channels = 1};
    int c;
    while ((c = getopt(argc, argv, "b:e:f:n:w:a:c:C:")) != -1) {
        switch (c) {
        case 'b':
            o->min = parse_size(optarg);
            break;
        case 'e':
            o->max = parse_size(optarg);
            break;
        case 'f':
            o->factor = atoi(optarg);
            break;
        case 'n':
            o->iters = atoi(optarg);
            break;
        case 'w':
            o->warmup = atoi(optarg);
            break;
        case 'c':
            o->check = atoi(optarg);
            break;
        case 'C':
            o->channels = atoi(optarg);
            break;
        case 'a':
            if (herd_algo_parse(optarg, &o->algo) != HERD_OK)
                return fprintf(stderr, "unknown algorithm '%s'\n", optarg), -1;
            break;
        default:
            return -1;
        }
    }
    return o->min < 4 || o->factor < 2 ? -1 : 0;
}

/* Enough iterations for ~0.2 s at this size, at least 5. */
static int iters_for(const bopts_t *o, uint64_t bytes)
{
    if (o->iters > 0)
        return o->iters;
    uint64_t n = (200u << 20) / (bytes + 1);
    return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

static int check(herd_comm_t *c, float *x, size_t n)
{
    int p = herd_comm_size(c);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(herd_comm_rank(c) + (int)(i % 7));
    herd_all_reduce(c, x, x, n, HERD_FLOAT32, HERD_SUM, NULL);
    for (size_t i = 0; i < n; i++)
        if (x[i] != (float)(p * (p - 1) / 2 + p * (int)(i % 7)))
            return 1;
    return 0;
}

static double time_size(herd_comm_t *c, float *x, size_t n, int iters)
{
    herd_barrier(c, NULL);
    uint64_t t0 = herd_now(c);
    for (int i = 0; i < iters; i++)
        herd_all_reduce(c, x, x, n, HERD_FLOAT32, HERD_SUM, NULL);
    double us = (double)(herd_now(c) - t0) / 1e3 / iters;
    herd_all_reduce(c, &us, &us, 1, HERD_FLOAT64, HERD_MAX, NULL);
    return us;
}

static int bench(herd_comm_t *c, void *arg)
{
    const bopts_t *o = arg;
    int p = herd_comm_size(c), bad = 0;
    float *x = NULL;
    if (herd_alloc(c, o->max + 64, (void **)&x) != HERD_OK)
        return 1;
    memset(x, 0, o->max);
    herd_comm_set_algo(c, HERD_COLL_ALL_REDUCE, o->algo);
    herd_comm_set_channels(c, o->channels, 0);
    if (herd_comm_rank(c) == 0)
        printf("# herd tcp all_reduce float32 sum, %d ranks, algo %s\n"
               "#%11s %12s %10s %9s %9s %6s\n",
               p, herd_algo_name(o->algo), "size(B)", "count", "time(us)",
               "algbw", "busbw", "check");
    for (uint64_t b = o->min; b <= o->max; b *= (uint64_t)o->factor) {
        size_t n = b / 4;
        for (int i = 0; i < o->warmup; i++)
            herd_all_reduce(c, x, x, n, HERD_FLOAT32, HERD_SUM, NULL);
        double us = time_size(c, x, n, iters_for(o, b));
        int err = o->check ? check(c, x, n) : -1;
        bad |= err > 0;
        double algbw = (double)b / us / 1e3;
        if (herd_comm_rank(c) == 0)
            printf("%12llu %12zu %10.2f %9.3f %9.3f %6s\n",
                   (unsigned long long)b, n, us, algbw,
                   algbw * 2.0 * (p - 1) / p,
                   err < 0 ? "-"
                   : err   ? "FAIL"
                           : "ok");
        fflush(stdout);
    }
    herd_free(c, x);
    return bad;
}

int main(int argc, char **argv)
{
    bopts_t o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_tcp_allreduce [-b MIN] [-e MAX] [-f "
                        "FACTOR] [-n ITERS] [-w WARMUP] [-a ALGO] [-c 1] "
                        "[-C CHANNELS]\n");
        return 2;
    }
    herd_init_t init = {.backend = "tcp", .init_method = "env://"};
    herd_status_t st = herd_run(&init, bench, &o, NULL);
    if (st != HERD_OK)
        fprintf(stderr, "bench_tcp_allreduce: %s\n", herd_status_string(st));
    return st == HERD_OK ? 0 : 1;
}
