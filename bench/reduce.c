/* bench/reduce.c - throughput of the reduction kernels (core_reduce) for
 * every (dtype, op), beside plain memcpy of the same bytes on the same
 * machine.
 *
 * GB/s counts the bytes of one buffer per call (count * element size), as
 * a collective's bus bandwidth does; a reduce reads two buffers and writes
 * one (3x the memory traffic), memcpy reads one and writes one (2x). Each
 * figure is the median of --runs timed runs of at least --min-time
 * seconds each. --clock cpu times with this thread's CPU clock instead of
 * the wall clock: on a machine shared with other jobs it leaves out the
 * time the benchmark was not running (cache and memory contention
 * remain). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/reduce.h"
#include "core/stats.h"

typedef struct bench_opts {
    size_t bytes; /* per buffer */
    int runs;
    double min_time; /* seconds per run */
    int inplace;     /* dst == a */
    int cpu_clock;   /* 1: CLOCK_THREAD_CPUTIME_ID, 0: CLOCK_MONOTONIC */
} bench_opts_t;

typedef struct bench_bufs {
    void *dst, *a, *b;
} bench_bufs_t;

static double now_s(int cpu_clock)
{
    struct timespec ts;
    clock_gettime(cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One call of the measured operation. dtype == HERD_DTYPE_COUNT: memcpy
 * from a to b (two distinct buffers, also with --inplace). */
static void run_once(const bench_bufs_t *m, size_t bytes, herd_dtype_t dt,
                     herd_op_t op)
{
    if (dt == HERD_DTYPE_COUNT) {
        memcpy(m->b, m->a, bytes);
        return;
    }
    herd_status_t st =
        core_reduce(m->dst, m->a, m->b, bytes / herd_dtype_size(dt), dt, op);
    if (st != HERD_OK) {
        fprintf(stderr, "bench_reduce: core_reduce %s %s: %s\n",
                herd_dtype_name(dt), herd_op_name(op), herd_status_string(st));
        exit(1);
    }
}

/* Median GB/s over opts->runs runs; iterations per run calibrated once. */
static double measure(const bench_bufs_t *m, const bench_opts_t *o,
                      herd_dtype_t dt, herd_op_t op)
{
    long iters = 1;
    for (;;) {
        double t0 = now_s(o->cpu_clock);
        for (long i = 0; i < iters; i++)
            run_once(m, o->bytes, dt, op);
        double dt_s = now_s(o->cpu_clock) - t0;
        if (dt_s >= o->min_time / 4 || iters > (1L << 30))
            break;
        iters *= 2;
    }
    iters *= 4;
    double gbps[64];
    for (int r = 0; r < o->runs; r++) {
        double t0 = now_s(o->cpu_clock);
        for (long i = 0; i < iters; i++)
            run_once(m, o->bytes, dt, op);
        gbps[r] =
            (double)o->bytes * (double)iters / (now_s(o->cpu_clock) - t0) / 1e9;
    }
    return core_median_upper(gbps, (size_t)o->runs);
}

/* Finite values of moderate size, so no NaN, overflow or subnormal takes
 * a slow path (the fp16 inputs are all normal numbers). */
static void fill(void *buf, size_t bytes, herd_dtype_t dt, uint64_t seed)
{
    size_t es = herd_dtype_size(dt), n = bytes / es;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((seed >> 40) & 0xffff) / 8192.0f + 0.5f;
        switch (dt) {
        case HERD_FLOAT16:
            ((uint16_t *)buf)[i] = core_float_to_half(v);
            break;
        case HERD_BFLOAT16:
            ((uint16_t *)buf)[i] = core_float_to_bf16(v);
            break;
        case HERD_FLOAT32:
            ((float *)buf)[i] = v;
            break;
        case HERD_FLOAT64:
            ((double *)buf)[i] = v;
            break;
        default:
            memcpy((char *)buf + i * es, &seed, es); /* little-endian */
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_reduce [--bytes N] [--runs R] [--min-time S] "
               "[--inplace] [--clock wall|cpu]\n"
               "  --bytes N     bytes per buffer (default 8388608)\n"
               "  --runs R      timed runs per figure, median kept (1-63, "
               "default 7)\n"
               "  --min-time S  seconds per run (default 0.05)\n"
               "  --inplace     dst == a (default: three buffers)\n"
               "  --clock C     wall (default) or cpu (this thread's CPU "
               "time)\n");
}

/* One "--name value" option; -1 (after a message) if it is not valid. */
static int parse_option(const char *arg, const char *val, bench_opts_t *o)
{
    char *end = NULL;
    errno = 0;
    if (!strcmp(arg, "--clock")) {
        if (strcmp(val, "wall") && strcmp(val, "cpu")) {
            fprintf(stderr,
                    "bench_reduce: --clock: expected wall or cpu, "
                    "got '%s'\n",
                    val);
            return -1;
        }
        o->cpu_clock = !strcmp(val, "cpu");
        return 0;
    }
    if (!strcmp(arg, "--bytes"))
        o->bytes = (size_t)strtoull(val, &end, 10);
    else if (!strcmp(arg, "--runs"))
        o->runs = (int)strtol(val, &end, 10);
    else if (!strcmp(arg, "--min-time"))
        o->min_time = strtod(val, &end);
    else {
        fprintf(stderr, "bench_reduce: unknown option '%s'\n", arg);
        return -1;
    }
    if (errno || !end || *end || end == val) {
        fprintf(stderr, "bench_reduce: %s: not a number: '%s'\n", arg, val);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, bench_opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--inplace")) {
            o->inplace = 1;
        } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            exit(0);
        } else if (i + 1 >= argc) {
            fprintf(stderr,
                    "bench_reduce: '%s' needs a value or is not an "
                    "option\n",
                    arg);
            return -1;
        } else if (parse_option(arg, argv[++i], o) != 0) {
            return -1;
        }
    }
    if (o->bytes < 64 || o->bytes % 8 || o->runs < 1 || o->runs > 63 ||
        !(o->min_time > 0 && o->min_time < 60)) {
        fprintf(stderr, "bench_reduce: need --bytes >= 64 and a multiple of "
                        "8, --runs in 1..63, --min-time in (0, 60)\n");
        return -1;
    }
    return 0;
}

static void bench_dtype(bench_bufs_t *m, const bench_opts_t *o, herd_dtype_t dt,
                        double memcpy_gbps)
{
    fill(m->a, o->bytes, dt, 1);
    fill(m->b, o->bytes, dt, 2);
    for (int op = 0; op < HERD_OP_COUNT; op++) {
        if (!core_reduce_valid(dt, (herd_op_t)op))
            continue;
        if (o->inplace)
            fill(m->a, o->bytes, dt, 1); /* keep PRODUCT / SUM finite */
        double g = measure(m, o, dt, (herd_op_t)op);
        printf("%-9s %-5s %9.2f %9.2f\n", herd_dtype_name(dt),
               herd_op_name((herd_op_t)op), g, g / memcpy_gbps);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o = {8u << 20, 7, 0.05, 0, 0};
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    bench_bufs_t m = {malloc(o.bytes), malloc(o.bytes), malloc(o.bytes)};
    if (!m.dst || !m.a || !m.b) {
        fprintf(stderr, "bench_reduce: cannot allocate 3 x %zu bytes\n",
                o.bytes);
        return 1;
    }
    memset(m.dst, 0, o.bytes);
    memset(m.a, 1, o.bytes);
    if (o.inplace)
        m.dst = m.a;
    double mc = measure(&m, &o, HERD_DTYPE_COUNT, HERD_SUM);
    printf("# bytes per buffer %zu, %d runs (median), %s, %s clock\n", o.bytes,
           o.runs, o.inplace ? "in place (dst == a)" : "dst, a, b distinct",
           o.cpu_clock ? "cpu" : "wall");
    printf("%-9s %-5s %9s %9s\n", "dtype", "op", "GB/s", "x memcpy");
    printf("%-9s %-5s %9.2f %9.2f\n", "memcpy", "-", mc, 1.0);
    for (int dt = 0; dt < HERD_DTYPE_COUNT; dt++)
        bench_dtype(&m, &o, (herd_dtype_t)dt, mc);
    if (!o.inplace)
        free(m.dst);
    free(m.a);
    free(m.b);
    return 0;
}
